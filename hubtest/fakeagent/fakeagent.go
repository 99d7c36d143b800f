// Package fakeagent is a scripted stand-in for the four agent CLIs (claude,
// codex, opencode, pi), for tests that run hub end to end. A test binary
// calls Main when EnvDialect is set (os/exec's helper-command pattern): the
// process then answers `--version` as the real CLI does and writes that
// CLI's JSON dialect — lines shaped like the recordings in testdata/<agent>
// — with one fault from the field's public bug reports (Faults lists them):
// giant lines, banners and escape sequences, records separated by bare
// carriage returns, spliced and cut lines, bytes
// written one at a time, invalid UTF-8, raw U+2028, a result without an
// exit, an exit without a result, a stderr flood, a closed stdout, a
// grandchild holding stdout, credentials echoed on every channel, and a CLI
// that needs a terminal (for --tty).
//
// It owns no assertions: the tests that run it decide what hub must make of
// each fault. Giant payloads are generated while writing, never held. It is
// public so that programs wrapping hub can play the same faults through
// their own use of hub (cmd/fakeagent builds it as a program of its own).
package fakeagent

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// The environment that selects what the fake agent does.
const (
	// EnvDialect names the agent to speak as: claude, codex, opencode or pi.
	EnvDialect = "HUB_FAKE_DIALECT"
	// EnvFault names the fault to play (see Faults).
	EnvFault = "HUB_FAKE_FAULT"
	// EnvSize is the size in bytes of the giant payload of the faults big and
	// big-terminal.
	EnvSize = "HUB_FAKE_SIZE"
	// EnvPIDFile is where the fault grandchild writes its grandchild's pid.
	EnvPIDFile = "HUB_FAKE_PIDFILE"
	// EnvCanary names the environment variable whose value the fault secrets
	// echoes on every channel (default ANTHROPIC_API_KEY).
	EnvCanary = "HUB_FAKE_CANARY_VAR"
)

// KeyShape is a GitHub token that the fault secrets-forms writes and no
// variable holds: hub must know it by its shape.
const KeyShape = "ghp_Zq8Xw2Lm5Np7Rt1Vb4Cd6Fg9Hj3Kk0Ys2Ue"

// Separators is the payload of the fault separators: raw U+2028 and U+2029,
// which JavaScript line readers split records on.
const Separators = "sep\u2028mid\u2029end"

// StderrFloodBytes is how much the fault stderr-flood writes on stderr
// before its last line, StderrLastLine.
const (
	StderrFloodBytes = 100 << 20
	StderrLastLine   = "fake agent: LAST STDERR LINE"
)

// The stderr of the fault stderr-lines.
const (
	StderrWarning   = "warning: the fake agent's config is odd"
	StderrLongLine  = 100 << 10
	StderrLastWords = "fake agent: last words"
)

// BadUTF8Answer is the answer of the fault badutf8: raw invalid bytes (a
// lone continuation pair, a cut 3-byte sequence) and, where the JSON has
// the token SURROGATE, a lone surrogate escape (\ud83d).
const BadUTF8Answer = "ok é, bad \xff\xfe, cut \xe2\x82 end, lone SURROGATE."

// BytewiseAnswer is the answer of the fault bytewise, whose lines are
// written one byte per write.
const BytewiseAnswer = "héllo wörld — 日本語テキスト 🎉 ∑ 𝄞 ok"

// BoundaryOffsets are the line offsets (multiples of hub's 64 KiB read
// buffer) that the fault boundary puts a 4-byte character across, split
// 2+2, 1+3 and 3+1 bytes, in the line from which hub takes the answer.
var BoundaryOffsets = []int{64 << 10, 128 << 10, 192 << 10}

// BoundaryRune is the 4-byte character of the fault boundary.
const BoundaryRune = "🎉"

// Faults returns the names of the faults, sorted.
func Faults() []string {
	var names []string
	for n := range faults {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Dialects returns the names of the dialects, sorted.
func Dialects() []string {
	var names []string
	for n := range dialects {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Main plays the fake agent selected by the environment with the agent's
// arguments args (without argv[0]) and returns its exit status. Some faults
// never return: they hang until killed, or kill themselves.
func Main(args []string) int {
	d, ok := dialects[os.Getenv(EnvDialect)]
	if !ok {
		fmt.Fprintf(os.Stderr, "fake agent: unknown %s %q\n", EnvDialect, os.Getenv(EnvDialect))
		return 99
	}
	if len(args) == 1 && args[0] == "--version" {
		text, onStderr := d.version()
		w := os.Stdout
		if onStderr {
			w = os.Stderr
		}
		fmt.Fprintln(w, text)
		return 0
	}
	name := os.Getenv(EnvFault)
	play, ok := faults[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "fake agent: unknown %s %q\n", EnvFault, name)
		return 99
	}
	size, _ := strconv.Atoi(os.Getenv(EnvSize))
	if len(args) > 0 && args[0] == "app-server" {
		return playAppServer(d, play, size)
	}
	if live := liveProtocol(args); live != "" {
		return playLive(live, d, play, size)
	}
	s := &script{d: d, out: os.Stdout, size: size, v: defaults(d)}
	return play(s)
}

// liveProtocol names the live-session protocol args ask for: "stream-json"
// (Claude Code's --input-format stream-json), "rpc" (pi's --mode rpc), or
// "" for a one-shot run.
func liveProtocol(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		switch {
		case args[i] == "--input-format" && args[i+1] == "stream-json":
			return "stream-json"
		case args[i] == "--mode" && args[i+1] == "rpc":
			return "rpc"
		}
	}
	return ""
}

// playLive is the fake agent of a live session (hub.NewSession): it reads
// commands on stdin, one JSON object a line, and plays the fault once for
// each prompt (a Claude Code user message, a pi prompt command), answering
// the protocol's other commands as the real CLI does (pi's
// get_session_stats and abort, Claude Code's control requests), until
// stdin ends. A fault that exits ends the session with its status.
func playLive(protocol string, d dialect, play func(*script) int, size int) int {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var cmd struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(line, &cmd) != nil {
			if protocol == "stream-json" {
				fmt.Fprintln(os.Stderr, "Error parsing streaming input line")
				return 1
			}
			fmt.Println(`{"type":"response","command":"parse","success":false,"error":"Failed to parse command"}`)
			continue
		}
		switch {
		case protocol == "rpc" && cmd.Type == "get_session_stats":
			out, _ := json.Marshal(map[string]any{"id": cmd.ID, "type": "response", "command": "get_session_stats", "success": true,
				"data": map[string]any{"sessionId": d.sessionID()}})
			fmt.Println(string(out))
		case protocol == "rpc" && cmd.Type == "abort":
			fmt.Println(`{"type":"response","command":"abort","success":true}`)
		case protocol == "stream-json" && cmd.Type == "control_request":
			out, _ := json.Marshal(map[string]any{"type": "control_response",
				"response": map[string]any{"subtype": "success", "request_id": cmd.RequestID, "response": map[string]any{"still_queued": []any{}}}})
			fmt.Println(string(out))
		case protocol == "rpc" && cmd.Type == "prompt", protocol == "stream-json" && cmd.Type == "user":
			if protocol == "rpc" {
				out, _ := json.Marshal(map[string]any{"id": cmd.ID, "type": "response", "command": "prompt", "success": true})
				fmt.Println(string(out))
			}
			if code := play(&script{d: d, out: os.Stdout, size: size, v: defaults(d)}); code != 0 {
				return code
			}
		}
	}
	return 0
}

// bigMark stands for the giant payload in a line; write streams EnvSize
// bytes in its place.
const bigMark = "\x00BIG\x00"

// script is one run of the fake agent: the values it reports and the state
// a dialect needs to repeat itself (pi's agent_end repeats every message).
type script struct {
	d    dialect
	out  *os.File
	size int
	v    vals

	calls   int      // model calls so far (usage totals)
	msgs    []string // pi: the messages of the current agent run, as JSON
	last    string   // pi: the last assistant message, as JSON
	retried bool     // pi: a retry is under way (auto_retry_end to come)
	n       int      // id counter
}

// vals are the strings a run reports. Faults change them to carry their
// payload into every string field.
type vals struct {
	session, model, cwd       string
	tool, callID, command     string
	output                    string
	reasoning, answer, prompt string
	// deltas is how the answer streams in dialects with text deltas; nil
	// splits it in two on a character boundary.
	deltas []string
}

func defaults(d dialect) vals {
	return vals{
		session:   d.sessionID(),
		model:     d.model(),
		cwd:       "/tmp/fake/work",
		tool:      d.toolName(),
		callID:    "call_fake_1",
		command:   "echo fake-tool-ok",
		output:    "fake-tool-ok\n",
		reasoning: "Considering the request.",
		answer:    "Hello from the fake agent.",
		prompt:    "Say hello.",
	}
}

func (s *script) id(prefix string) string {
	s.n++
	return fmt.Sprintf("%s_fake_%d", prefix, s.n)
}

// deltas returns how the answer streams.
func (s *script) deltas() []string {
	if s.v.deltas != nil {
		return s.v.deltas
	}
	a := s.v.answer
	if strings.Contains(a, bigMark) || len(a) < 2 {
		return []string{a}
	}
	mid := len(a) / 2
	for mid > 0 && !utf8.RuneStart(a[mid]) {
		mid--
	}
	return []string{a[:mid], a[mid:]}
}

// okLines are the lines of a successful run: session start, an answer
// (with reasoning), the terminal lines.
func (s *script) okLines() []string {
	lines := s.d.begin(s)
	lines = append(lines, s.d.answer(s)...)
	return append(lines, s.d.finish(s)...)
}

// write writes each line and a newline, one write call per line; a line
// holding bigMark is streamed around a generated payload.
func (s *script) write(lines ...string) {
	for _, l := range lines {
		s.writeLine(l, "\n")
	}
}

func (s *script) writeLine(l, end string) {
	if !strings.Contains(l, bigMark) {
		_, _ = io.WriteString(s.out, l+end)
		return
	}
	parts := strings.Split(l, bigMark)
	for i, p := range parts {
		_, _ = io.WriteString(s.out, p)
		if i < len(parts)-1 {
			writePayload(s.out, s.size)
		}
	}
	_, _ = io.WriteString(s.out, end)
}

// payloadChunk repeats the bytes of the giant payload: letters and digits,
// nothing JSON escapes.
var payloadChunk = bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz0123456789"), (1<<20)/36+1)[:1<<20]

func writePayload(w io.Writer, n int) {
	for n > 0 {
		k := min(n, len(payloadChunk))
		if _, err := w.Write(payloadChunk[:k]); err != nil {
			return
		}
		n -= k
	}
}

// Payload returns the first n bytes of the giant payload, for tests that
// check what hub kept of it.
func Payload(n int) string {
	var b strings.Builder
	writePayload(&b, n)
	return b.String()
}

// q quotes s as a JSON string the way a careless writer might: it escapes
// only '"', '\\' and control characters, so raw U+2028/U+2029 and invalid
// UTF-8 go through as they are, and bigMark survives (as its own escape,
// restored by q's caller through unmark).
func q(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case qEscape[c]:
			fmt.Fprintf(&b, `\u%04x`, c)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < 0x20:
			if strings.HasPrefix(s[i:], bigMark) {
				b.WriteString(bigMark)
				i += len(bigMark) - 1
				continue
			}
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// qEscape are the bytes q writes as \u escapes (the fault secrets-forms
// sets them), as a writer that escapes more than it must does.
var qEscape [256]bool

// faults are the fault scripts; each returns the exit status.
var faults = map[string]func(s *script) int{
	// ok: a plain successful run, the baseline of every dialect.
	"ok": func(s *script) int {
		s.write(s.okLines()...)
		return 0
	},
	// big: a tool whose output is EnvSize bytes, then a short answer. The
	// output is in every line the real CLI repeats it in.
	"big": func(s *script) int {
		s.v.output = bigMark
		s.v.answer = "Done."
		lines := s.d.begin(s)
		lines = append(lines, s.d.tool(s)...)
		lines = append(lines, s.d.answer(s)...)
		s.write(append(lines, s.d.finish(s)...)...)
		return 0
	},
	// big-terminal: the terminal event itself carries EnvSize bytes, the
	// way each CLI's terminal event grows (see dialect.hugeTerminal).
	"big-terminal": func(s *script) int {
		lines, code := s.d.hugeTerminal(s)
		s.write(lines...)
		return code
	},
	// noise: CRLF line endings throughout, a banner line, ANSI sequences
	// before the first JSON line, a BOM before the second, and a line that
	// starts with '{' and is cut, before the rest of a successful run.
	"noise": func(s *script) int {
		lines := s.okLines()
		out := []string{"Fake agent v9 starting… (banner on stdout)"}
		for i, l := range lines {
			switch i {
			case 0:
				l = "\x1b[2K\x1b[1G\x1b[32m" + l
			case 1:
				l = "\xef\xbb\xbf" + l
			}
			out = append(out, l)
			if i == 1 {
				out = append(out, `{"type":"cut-short","session_id":"x","mess`)
			}
		}
		for _, l := range out {
			s.writeLine(l, "\r\n")
		}
		return 0
	},
	// bare-cr: every line ends with a bare "\r", never "\n" (a terminal
	// setting or a wrapper that turned the newlines into carriage
	// returns), and spinner frames come between them, as a CLI that
	// thinks it has a terminal draws them: "⠋ working\r" before every other
	// line, an erase-line and a move to column 1 around another frame
	// before the last.
	"bare-cr": func(s *script) int {
		lines := s.okLines()
		for i, l := range lines {
			switch {
			case i == len(lines)-1:
				_, _ = io.WriteString(s.out, "\x1b[2K⠙ thinking\x1b[1G")
			case i%2 == 0:
				_, _ = io.WriteString(s.out, "⠋ working\r")
			}
			s.writeLine(l, "\r")
		}
		return 0
	},
	// splice: the terminal event (its last line) is written into the
	// middle of the line before it, as a second writer sharing stdout
	// would: outer head, the whole terminal line and its newline, then
	// the rest of the outer line.
	"splice": func(s *script) int {
		lines := append(s.d.begin(s), s.d.answer(s)...)
		lines = append(lines, s.d.progress(s))
		fin := s.d.finish(s)
		lines = append(lines, fin...)
		inner := len(lines) - 1
		outer := lines[inner-1]
		cut := len(outer) / 2
		lines[inner-1] = outer[:cut] + lines[inner] + "\n" + outer[cut:]
		s.write(lines[:inner]...)
		return 0
	},
	// bytewise: a multibyte answer, every line written one byte per write,
	// pausing inside each multibyte character.
	"bytewise": func(s *script) int {
		s.v.answer = BytewiseAnswer
		for _, l := range s.okLines() {
			b := []byte(l + "\n")
			for i := range b {
				_, _ = s.out.Write(b[i : i+1])
				if b[i] >= 0x80 && i+1 < len(b) && !utf8.RuneStart(b[i+1]) {
					time.Sleep(50 * time.Microsecond)
				}
			}
		}
		return 0
	},
	// boundary: an answer of about 200 KiB with a 4-byte character across
	// each of BoundaryOffsets of the line from which hub takes the answer
	// (dialect.answerKey), split 2+2, 1+3 and 3+1; that line is written in
	// pieces cut at those offsets.
	"boundary": func(s *script) int {
		const mark = "ANSWER_MARK"
		s.v.answer, s.v.deltas = mark, []string{mark}
		lines := s.okLines()
		key := s.d.answerKey()
		at, off := -1, 0
		for i, l := range lines {
			if strings.Contains(l, key) && strings.Contains(l, mark) {
				at, off = i, strings.Index(l, mark)
			}
		}
		if at < 0 {
			fmt.Fprintln(os.Stderr, "fake agent: no answer line")
			return 98
		}
		answer := BoundaryAnswer(off)
		for i := range lines {
			lines[i] = strings.ReplaceAll(lines[i], mark, answer)
		}
		for i, l := range lines {
			if i != at {
				s.write(l)
				continue
			}
			prev := 0
			for _, cut := range BoundaryOffsets {
				_, _ = io.WriteString(s.out, l[prev:cut])
				time.Sleep(time.Millisecond)
				prev = cut
			}
			_, _ = io.WriteString(s.out, l[prev:]+"\n")
		}
		return 0
	},
	// badutf8: invalid UTF-8 and a lone surrogate escape inside the answer.
	"badutf8": func(s *script) int {
		s.v.answer = BadUTF8Answer
		for _, l := range s.okLines() {
			s.write(strings.ReplaceAll(l, "SURROGATE", `\ud83d`))
		}
		return 0
	},
	// separators: raw U+2028 and U+2029 in every string the agent reports,
	// in a banner and an unknown event; a successful run.
	"separators": func(s *script) int {
		s.everyField(Separators)
		s.write(s.d.finish(s)...)
		return 0
	},
	// secrets: the value of the variable EnvCanary names (an API key in the
	// agent's environment) in every string the agent reports, split across
	// text deltas, in a banner, an unknown event and on stderr; then exit 1
	// without a terminal event, so that stderr becomes the error message.
	"secrets": func(s *script) int {
		key := os.Getenv(cmpOr(os.Getenv(EnvCanary), "ANTHROPIC_API_KEY"))
		if key == "" {
			fmt.Fprintln(os.Stderr, "fake agent: no canary in the environment")
			return 98
		}
		s.everyField(key)
		fmt.Fprintf(os.Stderr, "Error: request failed with key %s\n", key)
		return 1
	},
	// secrets-forms: the values of the variable EnvCanary names, of
	// GITHUB_PAT and the password of DATABASE_URL (the credentials of the
	// agent's environment), and KeyShape, in every string the agent
	// reports, each in several forms: as it is, URL-encoded, every byte
	// percent-encoded, base64 at two alignments and both alphabets, hex;
	// the first bytes of each are written as JSON \u escapes wherever they
	// occur in a JSON string; the answer streams in deltas of 3 bytes.
	// Then the same on stderr, and exit 1 without a terminal event.
	"secrets-forms": func(s *script) int {
		key := os.Getenv(cmpOr(os.Getenv(EnvCanary), "ANTHROPIC_API_KEY"))
		pat := os.Getenv("GITHUB_PAT")
		var pw string
		if u, err := url.Parse(os.Getenv("DATABASE_URL")); err == nil && u.User != nil {
			pw, _ = u.User.Password()
		}
		if key == "" || pat == "" || pw == "" {
			fmt.Fprintln(os.Stderr, "fake agent: no canaries in the environment")
			return 98
		}
		var pct strings.Builder
		for i := 0; i < len(pat); i++ {
			fmt.Fprintf(&pct, "%%%02x", pat[i])
		}
		forms := strings.Join([]string{
			"plain", key, pat, pw, KeyShape,
			"url", url.QueryEscape(key), url.PathEscape(pw),
			"pct", pct.String(),
			"b64", base64.StdEncoding.EncodeToString([]byte("x" + key)),
			"b64url", base64.RawURLEncoding.EncodeToString([]byte("xy" + pat)),
			"hex", hex.EncodeToString([]byte(pw)), strings.ToUpper(hex.EncodeToString([]byte(key))),
		}, " ")
		for _, v := range []string{key, pat, pw, KeyShape} {
			qEscape[v[0]], qEscape[v[1]] = true, true
		}
		s.everyFieldIn(forms, 3)
		fmt.Fprintf(os.Stderr, "Error: request failed: %s\n", forms)
		return 1
	},
	// linger: a successful run, then the agent never exits.
	"linger": func(s *script) int {
		s.write(s.okLines()...)
		hang()
		return 0
	},
	// no-result: an answer, no terminal event, exit 0.
	"no-result": func(s *script) int {
		s.write(s.d.begin(s)...)
		s.write(s.d.answer(s)...)
		return 0
	},
	// recovered-exit1: a transient error the agent recovers from, a
	// successful terminal event, then exit status 1.
	"recovered-exit1": func(s *script) int {
		s.write(s.d.begin(s)...)
		s.write(s.d.transient(s)...)
		s.write(s.d.answer(s)...)
		s.write(s.d.finish(s)...)
		return 1
	},
	// killed-midline: an answer, half of the first terminal line, then
	// SIGKILL (as the kernel's OOM killer would).
	"killed-midline": func(s *script) int {
		s.write(s.d.begin(s)...)
		s.write(s.d.answer(s)...)
		fin := s.d.finish(s)[0]
		_, _ = io.WriteString(s.out, fin[:len(fin)/2])
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		hang()
		return 0
	},
	// read-stdin: reads stdin to EOF first (every real CLI does when stdin
	// is a pipe), then answers with how many bytes it read.
	"read-stdin": func(s *script) int {
		n, _ := io.Copy(io.Discard, os.Stdin)
		s.v.answer = fmt.Sprintf("stdin had %d bytes", n)
		s.write(s.okLines()...)
		return 0
	},
	// stderr-flood: StderrFloodBytes on stderr, then StderrLastLine, an
	// answer and exit 1 without a terminal event.
	"stderr-flood": func(s *script) int {
		line := bytes.Repeat([]byte("e"), 1<<10)
		line[len(line)-1] = '\n'
		chunk := bytes.Repeat(line, 1<<10)
		for range StderrFloodBytes / len(chunk) {
			_, _ = os.Stderr.Write(chunk)
		}
		fmt.Fprintln(os.Stderr, StderrLastLine)
		s.write(s.d.begin(s)...)
		s.write(s.d.answer(s)...)
		return 1
	},
	// stderr-lines: a successful run, with stderr lines between its
	// stdout lines: StderrWarning in colour, blank and escape-only lines,
	// a line of StderrLongLine bytes, and StderrLastWords without a
	// newline before the exit.
	"stderr-lines": func(s *script) int {
		fmt.Fprint(os.Stderr, "\x1b[33m"+StderrWarning+"\x1b[0m\n\n   \n\x1b[2K\r\n")
		s.write(s.d.begin(s)...)
		_, _ = os.Stderr.Write(append(bytes.Repeat([]byte("x"), StderrLongLine), '\n'))
		s.write(s.d.answer(s)...)
		s.write(s.d.finish(s)...)
		fmt.Fprint(os.Stderr, StderrLastWords)
		return 0
	},
	// clean-exit1: a successful run (no error before it), then exit
	// status 1.
	"clean-exit1": func(s *script) int {
		s.write(s.okLines()...)
		return 1
	},
	// close-stdout: a successful run, then stdout closed and the agent
	// keeps running.
	"close-stdout": func(s *script) int {
		s.write(s.okLines()...)
		_ = s.out.Close()
		hang()
		return 0
	},
	// close-stdout-early: the session start, then stdout closed and the
	// agent keeps running without a terminal event.
	"close-stdout-early": func(s *script) int {
		s.write(s.d.begin(s)...)
		_ = s.out.Close()
		hang()
		return 0
	},
	// tty: for `hub run --tty`. It checks that stdout and stderr are
	// terminals and stdin is not (else it says so on stderr and exits
	// TTYMissing), starts a grandchild that ignores SIGTERM and SIGHUP and
	// holds the terminal open (sleep 300, its pid in EnvPIDFile), ignores
	// SIGTERM (and SIGHUP) itself, draws a spinner frame on stderr, and answers
	// TTYAnswer (what it saw: the window size) in lines that end in
	// "\r\n", as a CLI writing for a terminal does, then exits 0.
	"tty": func(s *script) int {
		if code := s.onTerminal(); code != 0 {
			return code
		}
		s.v.answer = s.ttyAnswer()
		for _, l := range s.okLines() {
			s.writeLine(l, "\r\n")
		}
		return 0
	},
	// tty-hang: tty's start (the checks, the grandchild, SIGTERM ignored),
	// then the session start and no answer: it hangs until killed.
	"tty-hang": func(s *script) int {
		if code := s.onTerminal(); code != 0 {
			return code
		}
		for _, l := range s.d.begin(s) {
			s.writeLine(l, "\r\n")
		}
		hang()
		return 0
	},
	// grandchild: starts a grandchild (sleep 300, its pid in EnvPIDFile)
	// that inherits stdout and holds it open, answers, and exits 0.
	"grandchild": func(s *script) int {
		cmd := exec.Command("sleep", "300")
		cmd.Stdout = s.out
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 98
		}
		if f := os.Getenv(EnvPIDFile); f != "" {
			_ = os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		}
		s.write(s.okLines()...)
		return 0
	},
}

// TTYMissing is the exit status of the faults tty and tty-hang when stdout
// or stderr is not a terminal, or stdin is one.
const TTYMissing = 97

// TTYAnswer is the answer of the fault tty on terminals of cols × rows.
func TTYAnswer(cols, rows int) string {
	return fmt.Sprintf("stdout and stderr are terminals of %dx%d, stdin is not", cols, rows)
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// onTerminal is the start of the faults tty and tty-hang: it returns
// TTYMissing if stdout or stderr is no terminal or stdin is one, else 0
// once the grandchild runs and SIGTERM is ignored.
func (s *script) onTerminal() int {
	if !isTerminal(1) || !isTerminal(2) || isTerminal(0) {
		fmt.Fprintf(os.Stderr, "fake agent: want stdout and stderr on a terminal and stdin not: stdin %v, stdout %v, stderr %v\n", isTerminal(0), isTerminal(1), isTerminal(2))
		return TTYMissing
	}
	// Ignored before the grandchild starts, which inherits that: the
	// SIGHUP of this process's exit cannot come before its own trap.
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
	cmd := exec.Command("/bin/sh", "-c", `trap "" TERM HUP; exec sleep 300`)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 98
	}
	if f := os.Getenv(EnvPIDFile); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	}
	// A spinner frame, as a CLI on a terminal draws one.
	_, _ = io.WriteString(os.Stderr, "\x1b[2K\x1b[1G⠋ thinking\r")
	return 0
}

// ttyAnswer is TTYAnswer for stdout's window size.
func (s *script) ttyAnswer() string {
	ws, err := unix.IoctlGetWinsize(1, unix.TIOCGWINSZ)
	if err != nil {
		return err.Error()
	}
	return TTYAnswer(int(ws.Col), int(ws.Row))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func hang() { time.Sleep(time.Hour) }

// everyField writes the start of a run and an answer with p in every string
// field the dialect has (session id, model, tool name, call id, input,
// output, reasoning, answer split across deltas inside p), in a non-JSON
// banner line and in an unknown event; the caller writes how it ends.
func (s *script) everyField(p string) { s.everyFieldIn(p, 0) }

// everyFieldIn is everyField with the answer streamed in deltas of piece
// bytes (0: in two halves, split inside p).
func (s *script) everyFieldIn(p string, piece int) {
	s.v.session += p
	s.v.model += p
	s.v.tool += p
	s.v.callID += p
	s.v.command = "echo " + p
	s.v.output = "tool saw " + p + "\n"
	s.v.reasoning = "thinking about " + p
	s.v.answer = "the answer is " + p + " indeed"
	half := len("the answer is ") + len(p)/2
	for half > 0 && !utf8.RuneStart(s.v.answer[half]) {
		half--
	}
	s.v.deltas = []string{s.v.answer[:half], s.v.answer[half:]}
	if piece > 0 {
		s.v.deltas = nil
		for a := s.v.answer; a != ""; {
			n := min(piece, len(a))
			s.v.deltas, a = append(s.v.deltas, a[:n]), a[n:]
		}
	}
	s.write("banner " + p)
	s.write(s.d.begin(s)...)
	s.write(`{"type":"future_event` + strings.Trim(q(p), `"`) + `","detail":` + q(p) + `}`)
	s.write(s.d.extra(s, p)...)
	s.write(s.d.tool(s)...)
	s.write(s.d.answer(s)...)
}

// BoundaryAnswer returns the answer of the fault boundary when the answer
// starts at byte off of its line: 4-byte characters across the offsets in
// BoundaryOffsets, split 2+2, 1+3 and 3+1.
func BoundaryAnswer(off int) string {
	var b strings.Builder
	for i, at := range BoundaryOffsets {
		before := []int{2, 1, 3}[i] // bytes of the character before the offset
		pad := at - off - before - b.Len()
		for j := 0; j < pad; j++ {
			b.WriteByte("0123456789abcdef"[j%16])
		}
		b.WriteString(BoundaryRune)
	}
	b.WriteString(" end")
	return b.String()
}
