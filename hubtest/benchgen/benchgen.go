// Package benchgen makes large agent transcripts for benchmarks, shaped like
// the real ones recorded in testdata/<agent>: the lines of a recorded tool
// turn (text deltas, a tool call and its result, usage) are repeated with
// generated text and a tool output of 1 KiB to 2 MiB per turn, until a
// size is reached. Everything else in a line (ids, metadata, usage) is the
// recorded bytes.
//
// It is benchmark support only: it decodes nothing and checks nothing (the
// benchmarks and checks that run on its transcripts are in package
// hubtest). Command benchgen (cmd/benchgen) writes one to a file, for
// scripts/bench.sh.
package benchgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Agents are the agents Generate knows.
var Agents = []string{"claude", "codex", "opencode", "pi"}

// Tool outputs are log-uniform between these sizes (median 45 KiB, mean
// about 270 KiB).
const (
	MinOutput = 1 << 10
	MaxOutput = 2 << 20
)

// Root returns the root of hub's module: the directory holding its go.mod,
// found by walking up from this source file (in a clone, the repository;
// for a program that requires hub, its copy in the module cache), so it
// does not depend on how deep this package sits. It returns "" when the
// source is not on disk (a binary built with -trimpath, moved elsewhere).
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	for dir := filepath.Dir(file); ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// Recorded returns the lines of every recorded transcript of agent
// (testdata/<agent>/*.jsonl without the golden files), one slice per file,
// each line without its newline.
func Recorded(agent string) ([][][]byte, error) {
	files, err := filepath.Glob(filepath.Join(Root(), "testdata", agent, "*.jsonl"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("benchgen: no transcripts for %q", agent)
	}
	var out [][][]byte
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.jsonl") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")))
	}
	return out, nil
}

// Text is the kind of text in generated answers and tool outputs: what
// decides how often a JSON escape comes, which is what most of the cost of
// reading a string is.
type Text int

const (
	// Code is like source code: a newline, tab, quote or backslash (a JSON
	// escape) every 14 bytes or so, as in Go source (stream.go: one
	// every 13.6 bytes).
	Code Text = iota
	// Logs is like a build or test log: a newline every 65 bytes or so and
	// no tabs, quotes or backslashes (dpkg.log, `ls -la`: one escape every
	// 70 bytes; `go test -v`: every 36).
	Logs
)

// Texts names the kinds of Text, for flags.
var Texts = map[string]Text{"code": Code, "logs": Logs}

// Generate writes a transcript of agent with text of the given kind, of at
// least size bytes, to w and returns how many bytes it wrote. The same seed
// gives the same bytes.
func Generate(w io.Writer, agent string, text Text, size int64, seed uint64) (int64, error) {
	sh, ok := shapes[agent]
	if !ok {
		return 0, fmt.Errorf("benchgen: unknown agent %q", agent)
	}
	raw, err := os.ReadFile(filepath.Join(Root(), "testdata", agent, sh.file))
	if err != nil {
		return 0, err
	}
	lines := bytes.Split(raw, []byte("\n"))
	var head, turn, tail []tmpl
	for _, part := range []struct {
		steps []step
		out   *[]tmpl
	}{{sh.head, &head}, {sh.turn, &turn}, {sh.tail, &tail}} {
		for _, s := range part.steps {
			t, err := compile(lines, s)
			if err != nil {
				return 0, fmt.Errorf("benchgen: %s/%s: %w", agent, sh.file, err)
			}
			*part.out = append(*part.out, t)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	g := &gen{rng: rand.New(rand.NewPCG(seed, 0x62656e6368)), w: bw, words: codeWords, tabs: true}
	if text == Logs {
		g.words, g.tabs = logWords, false
	}
	g.write(head, 0)
	for n := 1; g.n < size-g.size(tail); n++ {
		g.newTurn()
		g.write(turn, n)
	}
	g.newTurn()
	g.write(tail, 0)
	if err := bw.Flush(); err != nil {
		return g.n, err
	}
	return g.n, g.err
}

// A step picks the first recorded line whose fields match where (path,
// value pairs) and writes it with its holes filled: once, or once per text
// delta of the turn (perDelta), or times times.
type step struct {
	where    []string
	perDelta bool
	times    int
	holes    []hole
}

// A hole is a field of a recorded line that gets a generated value.
type hole struct {
	path string
	val  val
	tag  string // for id: what is appended to the recorded id with the turn number
}

type val int

const (
	delta  val = iota // this delta's text
	soFar             // the turn's text up to and including this delta
	text              // the turn's whole text
	output            // the turn's tool output
	id                // the recorded id + "-<turn><tag>", so ids differ per turn
)

func match(w ...string) []string { return w }

// shapes are the recorded tool turns, per agent.
var shapes = map[string]struct {
	file             string
	head, turn, tail []step
}{
	"claude": {
		file: "tool.jsonl",
		head: []step{{where: match("type", "system", "subtype", "init")}},
		turn: []step{
			// An answer streamed in text deltas.
			{where: match("type", "system", "subtype", "status")},
			{where: match("event.type", "message_start"), holes: []hole{{"event.message.id", id, "a"}, {"api_message_id", id, "a"}}},
			{where: match("event.content_block.type", "text")},
			{where: match("event.delta.type", "text_delta"), perDelta: true, holes: []hole{{"event.delta.text", delta, ""}}},
			{where: match("type", "assistant", "message.content.0.type", "text"), holes: []hole{{"message.id", id, "a"}, {"message.content.0.text", text, ""}}},
			{where: match("event.type", "content_block_stop")},
			{where: match("event.type", "message_delta")},
			{where: match("event.type", "message_stop")},
			// A tool call and its result.
			{where: match("type", "system", "subtype", "status")},
			{where: match("event.type", "message_start"), holes: []hole{{"event.message.id", id, "b"}, {"api_message_id", id, "b"}}},
			{where: match("event.content_block.type", "tool_use"), holes: []hole{{"event.content_block.id", id, ""}}},
			{where: match("event.delta.type", "input_json_delta"), times: 3},
			{where: match("type", "assistant", "message.content.0.type", "tool_use"), holes: []hole{{"message.id", id, "b"}, {"message.content.0.id", id, ""}}},
			{where: match("event.type", "content_block_stop")},
			{where: match("event.type", "message_delta")},
			{where: match("event.type", "message_stop")},
			{where: match("type", "user"), holes: []hole{{"message.content.0.tool_use_id", id, ""},
				{"message.content.0.content", output, ""}, {"tool_use_result.stdout", output, ""}}},
		},
		tail: []step{{where: match("type", "result")}},
	},
	"codex": {
		// codex exec runs one turn per process; repeating turns gives
		// the stream one usage event per generated turn.
		file: "tool.jsonl",
		head: []step{{where: match("type", "thread.started")}},
		turn: []step{
			{where: match("type", "turn.started")},
			{where: match("item.type", "reasoning"), holes: []hole{{"item.text", text, ""}}},
			{where: match("type", "item.started", "item.type", "command_execution"), holes: []hole{{"item.id", id, ""}}},
			{where: match("type", "item.completed", "item.type", "command_execution"), holes: []hole{{"item.id", id, ""}, {"item.aggregated_output", output, ""}}},
			{where: match("item.type", "agent_message"), holes: []hole{{"item.text", text, ""}}},
			{where: match("type", "turn.completed")},
		},
	},
	"opencode": {
		// OpenCode prints whole text parts, no deltas.
		file: "tool.jsonl",
		turn: []step{
			{where: match("type", "step_start")},
			{where: match("type", "tool_use"), holes: []hole{{"part.callID", id, ""},
				{"part.state.output", output, ""}, {"part.state.metadata.output", output, ""}}},
			{where: match("type", "step_finish", "part.reason", "tool-calls")},
			{where: match("type", "step_start")},
			{where: match("type", "text"), holes: []hole{{"part.text", text, ""}}},
			{where: match("type", "step_finish", "part.reason", "stop")},
		},
	},
	"pi": {
		// Every message_update repeats the partial message twice: the
		// lines grow with the answer, as pi's do.
		file: "tool.jsonl",
		head: []step{
			{where: match("type", "session")},
			{where: match("type", "agent_start")},
			{where: match("type", "message_start", "message.role", "user")},
			{where: match("type", "message_end", "message.role", "user")},
		},
		turn: []step{
			{where: match("type", "turn_start")},
			{where: match("type", "message_start", "message.role", "assistant")},
			{where: match("assistantMessageEvent.type", "toolcall_start")},
			{where: match("assistantMessageEvent.type", "toolcall_delta"), times: 3},
			{where: match("assistantMessageEvent.type", "toolcall_end")},
			{where: match("type", "message_end", "message.content.0.type", "toolCall"), holes: []hole{{"message.responseId", id, "a"}}},
			{where: match("type", "tool_execution_start"), holes: []hole{{"toolCallId", id, ""}}},
			{where: match("type", "tool_execution_update", "partialResult.content.0.type", "text"), holes: []hole{{"toolCallId", id, ""}, {"partialResult.content.0.text", output, ""}}},
			{where: match("type", "tool_execution_end"), holes: []hole{{"toolCallId", id, ""}, {"result.content.0.text", output, ""}}},
			{where: match("type", "message_start", "message.role", "toolResult"), holes: []hole{{"message.content.0.text", output, ""}}},
			{where: match("type", "message_end", "message.role", "toolResult"), holes: []hole{{"message.content.0.text", output, ""}}},
			{where: match("type", "turn_end", "toolResults.0.role", "toolResult"), holes: []hole{{"toolResults.0.content.0.text", output, ""}}},
			{where: match("type", "turn_start")},
			{where: match("type", "message_start", "message.role", "assistant")},
			{where: match("assistantMessageEvent.type", "text_start")},
			{where: match("assistantMessageEvent.type", "text_delta"), perDelta: true, holes: []hole{{"assistantMessageEvent.delta", delta, ""},
				{"assistantMessageEvent.partial.content.0.text", soFar, ""}, {"message.content.0.text", soFar, ""}}},
			{where: match("assistantMessageEvent.type", "text_end"), holes: []hole{{"assistantMessageEvent.content", text, ""},
				{"assistantMessageEvent.partial.content.0.text", text, ""}, {"message.content.0.text", text, ""}}},
			{where: match("type", "message_end", "message.role", "assistant", "message.content.0.type", "text"), holes: []hole{{"message.content.0.text", text, ""}, {"message.responseId", id, "b"}}},
			{where: match("type", "turn_end", "message.content.0.type", "text"), holes: []hole{{"message.content.0.text", text, ""}}},
		},
		tail: []step{{where: match("type", "agent_end")}},
	},
}

// tmpl is a compiled step: the recorded line cut around its holes.
type tmpl struct {
	step
	lits [][]byte // len(holes)+1 pieces of the line around the holes
	ids  []string // the recorded value of each hole
}

func compile(lines [][]byte, s step) (tmpl, error) {
	for _, l := range lines {
		ok := len(l) > 0
		for i := 0; ok && i+1 < len(s.where); i += 2 {
			ok = gjson.GetBytes(l, s.where[i]).String() == s.where[i+1]
		}
		if !ok {
			continue
		}
		t := tmpl{step: s}
		type span struct{ at, end, hole int }
		var spans []span
		for i, h := range s.holes {
			r := gjson.GetBytes(l, h.path)
			if r.Index <= 0 || r.Type != gjson.String {
				return t, fmt.Errorf("line %v has no string at %s", s.where, h.path)
			}
			spans = append(spans, span{r.Index, r.Index + len(r.Raw), i})
		}
		slices.SortFunc(spans, func(a, b span) int { return a.at - b.at })
		holes := make([]hole, len(spans))
		last := 0
		for i, sp := range spans {
			t.lits = append(t.lits, l[last:sp.at])
			holes[i] = s.holes[sp.hole]
			t.ids = append(t.ids, gjson.GetBytes(l, holes[i].path).Str)
			last = sp.end
		}
		t.holes = holes
		t.lits = append(t.lits, l[last:])
		return t, nil
	}
	return tmpl{}, fmt.Errorf("no line where %v", s.where)
}

type gen struct {
	rng   *rand.Rand
	w     *bufio.Writer
	n     int64
	err   error
	words []string
	tabs  bool // indent some lines with a tab

	// The current turn: its text in deltas, and its tool output, each
	// already JSON-quoted.
	deltas, soFar [][]byte
	text, output  []byte
}

// size is the length of the template pieces of ts: what they add at least.
func (g *gen) size(ts []tmpl) int64 {
	var n int64
	for _, t := range ts {
		for _, l := range t.lits {
			n += int64(len(l)) + 1
		}
	}
	return n
}

func (g *gen) write(ts []tmpl, turn int) {
	for _, t := range ts {
		times := max(t.times, 1)
		if t.perDelta {
			times = len(g.deltas)
		}
		for k := range times {
			for i, h := range t.holes {
				g.put(t.lits[i])
				switch h.val {
				case delta:
					g.put(g.deltas[k])
				case soFar:
					g.put(g.soFar[k])
				case text:
					g.put(g.text)
				case output:
					g.put(g.output)
				case id:
					g.put(quote(t.ids[i] + "-" + strconv.Itoa(turn) + h.tag))
				}
			}
			g.put(t.lits[len(t.lits)-1])
			g.put([]byte{'\n'})
		}
	}
}

func (g *gen) put(b []byte) {
	if g.err != nil {
		return
	}
	n, err := g.w.Write(b)
	g.n += int64(n)
	g.err = err
}

// Words of generated text and tool output: prose, code, paths, and
// characters that JSON escapes or that are more than one byte in UTF-8;
// logWords leaves out those with a quote or a backslash.
var (
	codeWords = strings.Fields(`the a of to in is and it that for on with as this be
	by function return error nil value file line test run agent tool output
	config build cmd/hub/main.go internal/framer/framer.go "quoted" \path\to
	x:=1; if err != nil { return err } naïve café → ✓ 日本語 😀 42 0.5 -1 <tag>
	&amp; [1,2,3] {"k":"v"} TODO: FIXME(ann) ok: PASS FAIL --- ===`)
	logWords = slices.DeleteFunc(slices.Clone(codeWords), func(w string) bool { return strings.ContainsAny(w, `"\`) })
)

// newTurn makes the next turn's text (50 to 400 words in deltas of one to
// three words) and its tool output.
func (g *gen) newTurn() {
	var sb strings.Builder
	g.deltas, g.soFar = g.deltas[:0], g.soFar[:0]
	for n := 50 + g.rng.IntN(351); n > 0; {
		k := min(1+g.rng.IntN(3), n)
		start := sb.Len()
		for range k {
			sb.WriteString(g.word())
		}
		n -= k
		g.deltas = append(g.deltas, quote(sb.String()[start:]))
		g.soFar = append(g.soFar, quote(sb.String()))
	}
	g.text = quote(sb.String())

	size := int(math.Exp(math.Log(MinOutput) + g.rng.Float64()*(math.Log(MaxOutput)-math.Log(MinOutput))))
	var ob strings.Builder
	ob.Grow(size + 64)
	for ob.Len() < size {
		ob.WriteString(g.word())
	}
	g.output = quote(ob.String()[:size])
}

// word is one word with the space or line break after it.
func (g *gen) word() string {
	w := g.words[g.rng.IntN(len(g.words))]
	switch g.rng.IntN(12) {
	case 0:
		return w + "\n"
	case 1:
		if g.tabs {
			return w + "\n\t"
		}
	}
	return w + " "
}

// quote encodes s as a JSON string as Node's JSON.stringify does (no HTML
// escaping). A cut in the middle of a UTF-8 character becomes U+FFFD.
func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
