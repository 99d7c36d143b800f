package normalize

import (
	"unicode/utf8"

	"github.com/hubcli/hub/events"
)

// HeadDecoder is implemented by decoders that can read an event from the
// start of a stdout line over the line cap: the runner keeps only the head
// of such a line (framer.HeadBytes), which is not valid JSON. Decoders use
// it to recognize their terminal event when it is the giant line (Claude
// Code's result with a huge answer, pi's agent_end repeating a huge tool
// output), so that a run does not fail for want of it. Fields after the cut
// are lost; a decoder takes the event only when what it needs comes before.
type HeadDecoder interface {
	// DecodeHead takes the first bytes of a line of size bytes and appends
	// the events it yields to dst; used reports whether the decoder took
	// the line into account. head is only valid during the call.
	DecodeHead(dst []events.Body, head []byte, size int64) (out []events.Body, used bool)
}

// Salvage turns head, the start of a JSON object cut anywhere, into a valid
// JSON object: every member complete in head, and a string value that the
// cut falls in closed where it was cut (on a character boundary, never
// inside an escape), then every open array and object closed. A member cut
// before its value is a string (a key, a number, true, …) is dropped. It
// returns nil when head does not start (after spaces) with '{' or is not
// JSON up to the cut.
func Salvage(head []byte) []byte {
	i := 0
	for i < len(head) && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n') {
		i++
	}
	if i == len(head) || head[i] != '{' {
		return nil
	}
	var (
		stack     []byte // open containers, '{' or '['
		expectKey []bool // per open container: an object that waits for a key
		cut       = -1   // head[:cut] plus closers for stack is valid JSON
		inString  bool
		isValue   bool // the string being read is a value, not a key
		strStart  int  // index of the first byte of the string's content
		escape    = -1 // index of the backslash of an escape being read, else -1
	)
	for ; i < len(head); i++ {
		c := head[i]
		if inString {
			switch {
			case escape >= 0:
				if head[escape+1] == 'u' && i-escape < 5 {
					continue // the four hex digits of \uXXXX
				}
				escape = -1
			case c == '\\':
				escape = i
				if i+1 < len(head) && head[i+1] == 'u' {
					i++ // escape+1 is 'u': the digits follow
				}
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString, strStart, escape = true, i+1, -1
			n := len(stack) - 1
			isValue = stack[n] == '[' || !expectKey[n]
		case '{', '[':
			stack = append(stack, c)
			expectKey = append(expectKey, c == '{')
			cut = i + 1
		case '}', ']':
			if len(stack) == 0 {
				return nil
			}
			stack, expectKey = stack[:len(stack)-1], expectKey[:len(expectKey)-1]
			cut = i + 1
			if len(stack) == 0 {
				return valid(head[:cut])
			}
		case ',':
			cut = i
			n := len(stack) - 1
			expectKey[n] = stack[n] == '{'
		case ':':
			expectKey[len(stack)-1] = false
		}
	}
	var out []byte
	if inString && isValue {
		k := len(head)
		if escape >= 0 {
			k = escape
		}
		k = runeCut(head, strStart, k)
		out = append(append(out, head[:k]...), '"')
	} else {
		out = append(out, head[:cut]...)
	}
	for j := len(stack) - 1; j >= 0; j-- {
		if stack[j] == '{' {
			out = append(out, '}')
		} else {
			out = append(out, ']')
		}
	}
	return valid(out)
}

// runeCut returns k, moved back to the start of a character that b[start:k]
// holds only part of.
func runeCut(b []byte, start, k int) int {
	j := k - 1
	for j > start && j > k-utf8.UTFMax && !utf8.RuneStart(b[j]) {
		j--
	}
	if j >= start && j < k && !utf8.FullRune(b[j:k]) {
		return j
	}
	return k
}

func valid(b []byte) []byte {
	if !Valid(b) {
		return nil
	}
	return b
}
