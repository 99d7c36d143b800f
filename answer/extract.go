package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer words the validator's messages.
var printer = message.NewPrinter(language.English)

// Extract takes the one JSON value out of an answer text. The text, spaces
// around it aside, is either that value or one fenced code block that holds
// it (CommonMark's: a line of three or more backticks or tildes, indented
// at most three spaces, with the info string "json" or none, and a closing
// line of at least as many of the same character). Anything else is an
// error that says what is wrong: no value, prose before or after it, a
// second value (trailing JSON), a second block, a block not closed, or JSON
// that does not parse.
func Extract(text string) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, errors.New("the answer is empty: reply with one JSON value")
	}
	lines := strings.Split(t, "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	char, n, info, ok := openingFence(lines[0])
	if !ok {
		return one([]byte(t))
	}
	if info != "" && !strings.EqualFold(info, "json") {
		return nil, fmt.Errorf("the answer is a fenced %q block: reply with one JSON value, bare or in one ```json block", info)
	}
	last := len(lines) - 1
	if last == 0 || !closingFence(lines[last], char, n) {
		return nil, errors.New("the ```json block is not closed by a line ``` at the end of the answer (or text follows it)")
	}
	body := lines[1:last]
	for _, l := range body {
		if closingFence(l, char, n) {
			return nil, errors.New("the answer holds more than one fenced block, or text after one: reply with one JSON value")
		}
	}
	joined := strings.Join(body, "\n")
	if strings.TrimSpace(joined) == "" {
		return nil, errors.New("the ```json block is empty: reply with one JSON value")
	}
	return one([]byte(joined))
}

// openingFence reads l as a fenced block's opening line: its fence
// character, how many, and the info string.
func openingFence(l string) (char byte, n int, info string, ok bool) {
	rest, ok := fenceIndent(l)
	if !ok || len(rest) == 0 || rest[0] != '`' && rest[0] != '~' {
		return 0, 0, "", false
	}
	char = rest[0]
	for n < len(rest) && rest[n] == char {
		n++
	}
	info = strings.TrimSpace(rest[n:])
	if n < 3 || char == '`' && strings.ContainsRune(info, '`') {
		return 0, 0, "", false
	}
	return char, n, info, true
}

// closingFence reports whether l closes a block opened by n of char.
func closingFence(l string, char byte, n int) bool {
	rest, ok := fenceIndent(l)
	if !ok {
		return false
	}
	rest = strings.TrimRight(rest, " \t")
	return len(rest) >= n && strings.Trim(rest, string(char)) == ""
}

// fenceIndent is l without the at most three spaces a fence may be
// indented by; ok is false for a deeper indent.
func fenceIndent(l string) (string, bool) {
	rest := strings.TrimLeft(l, " ")
	return rest, len(l)-len(rest) <= 3
}

// one returns b's JSON value when b, spaces around it aside, is exactly one
// JSON value; else an error that names what is there instead.
func one(b []byte) (json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("empty: expected one JSON value")
	}
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8 text")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if !startsValue(b) {
			return nil, fmt.Errorf("not one JSON value: it begins with text (%s)", quoteStart(b))
		}
		return nil, fmt.Errorf("not valid JSON: %s", syntax(err, b))
	}
	rest := bytes.TrimSpace(b[dec.InputOffset():])
	if len(rest) == 0 {
		return v, nil
	}
	if json.NewDecoder(bytes.NewReader(rest)).Decode(new(json.RawMessage)) == nil {
		return nil, fmt.Errorf("more than one JSON value: trailing JSON after the first (%s)", quoteStart(rest))
	}
	return nil, fmt.Errorf("text after the JSON value (%s)", quoteStart(rest))
}

// startsValue reports whether b begins as a JSON value can.
func startsValue(b []byte) bool {
	if strings.IndexByte(`{["-0123456789`, b[0]) >= 0 {
		return true
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(b, []byte(lit)) {
			return true
		}
	}
	return false
}

// syntax words a decoding error with its byte offset.
func syntax(err error, b []byte) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends before the value is complete"
	}
	return err.Error()
}

// quoteStart quotes the first 40 bytes of b (whole UTF-8 characters).
func quoteStart(b []byte) string {
	const n = 40
	if len(b) <= n {
		return fmt.Sprintf("%q", b)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", b[:cut])
}

// duplicateKey returns the first object key that appears twice in one
// object of raw (valid JSON), as a problem at that object's pointer.
func duplicateKey(raw []byte) *Problem {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(path []string) *Problem
	walk = func(path []string) *Problem {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil
				}
				key, _ := k.(string)
				if seen[key] {
					return &Problem{Pointer: pointer(path), Message: fmt.Sprintf("duplicate key %q", key)}
				}
				seen[key] = true
				if p := walk(append(path, key)); p != nil {
					return p
				}
			}
			_, _ = dec.Token() // '}'
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if p := walk(append(path, fmt.Sprint(i))); p != nil {
					return p
				}
			}
			_, _ = dec.Token() // ']'
		}
		return nil
	}
	return walk(nil)
}
