package adapters

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/hubcli/hub/events"
)

// secrets replaces credential values — those of environment variables named
// like keys, tokens, secrets or passwords in the agent's environment — with
// "[REDACTED]" in every string of every event hub emits (SPEC §6: hub never
// logs a credential). Values shorter than 8 bytes are left alone: too likely
// to occur by chance.
//
// A fragment of a value is redacted too, because decoders shorten texts
// (an error message, a notice's head) before they are redacted and may cut
// a credential: a run of bytes that matches the start of a value (its
// first minFragment bytes, or the whole value when shorter) wherever it
// occurs, extended as far as it matches, and a run that matches the end of
// a value (at least minFragment bytes), extended backwards as far as it
// matches. Text that merely begins like a key is over-redacted; that is the
// price of never leaking one cut short.
//
// Text deltas are redacted as one text: the end of a delta that could be
// the start of a credential is held back (delta) until the next delta shows
// whether it is one, or a non-delta event comes (flush), so that a key the
// agent streams in pieces is never put together by a reader of the deltas.
// A secrets value is used by one run's emitting goroutine at a time.
type secrets struct {
	r      *strings.Replacer
	values []string
	held   *string // text held back from the deltas so far
}

func newSecrets(env []string) secrets {
	var pairs, values []string
	seen := map[string]bool{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < 8 || seen[v] || !secretName.MatchString(k) {
			continue
		}
		// A value with a quote, backslash or control character appears
		// escaped in the agent's JSON (a tool's input, a notice's data).
		for _, v := range []string{v, jsonString(v, false), jsonString(v, true)} {
			if !seen[v] {
				seen[v] = true
				pairs = append(pairs, v, "[REDACTED]")
				values = append(values, v)
			}
		}
	}
	if len(pairs) == 0 {
		return secrets{}
	}
	return secrets{r: strings.NewReplacer(pairs...), values: values, held: new(string)}
}

// jsonString returns v as it is inside a JSON string, with <, > and &
// escaped or not.
func jsonString(v string, html bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(html)
	_ = e.Encode(v)
	return string(bytes.TrimSuffix(b.Bytes()[1:], []byte("\"\n")))
}

// minFragment is the shortest start or end of a credential value that is
// redacted on its own (see secrets).
const minFragment = 12

func (s secrets) str(v string) string {
	if s.r == nil || v == "" {
		return v
	}
	var spans [][2]int // byte ranges of v to redact
	find := func(anchor string, at func(i int) [2]int) {
		for i := 0; i+len(anchor) <= len(v); {
			j := strings.Index(v[i:], anchor)
			if j < 0 {
				return
			}
			spans = append(spans, at(i+j))
			i += j + 1
		}
	}
	for _, val := range s.values {
		head := val[:min(len(val), minFragment)]
		find(head, func(i int) [2]int { // extend forwards
			end, k := i+len(head), len(head)
			for ; k < len(val) && end < len(v) && v[end] == val[k]; k++ {
				end++
			}
			return [2]int{i, end}
		})
		if len(val) > minFragment {
			tail := val[len(val)-minFragment:]
			find(tail, func(i int) [2]int { // extend backwards
				start := i
				for k := len(val) - minFragment; k > 0 && start > 0 && v[start-1] == val[k-1]; k-- {
					start--
				}
				return [2]int{start, i + minFragment}
			})
		}
	}
	if len(spans) == 0 {
		return v
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out strings.Builder
	out.Grow(len(v))
	done := 0 // v[:done] is written
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] < end; i++ { // overlapping: one span
			end = max(end, spans[i][1])
		}
		out.WriteString(v[done:start])
		out.WriteString("[REDACTED]")
		done = end
	}
	out.WriteString(v[done:])
	return out.String()
}

func (s secrets) ptr(v *string) *string {
	if v == nil {
		return nil
	}
	r := s.str(*v)
	return &r
}

func (s secrets) strs(v []string) []string {
	if v == nil {
		return nil
	}
	out := make([]string, len(v))
	for i := range v {
		out[i] = s.str(v[i])
	}
	return out
}

func (s secrets) raw(v json.RawMessage) json.RawMessage {
	if s.r == nil || len(v) == 0 {
		return v
	}
	out := s.str(string(v))
	if out == string(v) {
		return v
	}
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	// The value ran into a JSON escape: redact the decoded strings instead.
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil {
		return json.RawMessage(out) // it was not JSON to begin with
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(s.walk(x)) != nil {
		return json.RawMessage(out)
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// walk redacts every string, and every object key, of a decoded JSON value.
func (s secrets) walk(x any) any {
	switch x := x.(type) {
	case string:
		return s.str(x)
	case []any:
		for i := range x {
			x[i] = s.walk(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[s.str(k)] = s.walk(v)
		}
		return out
	}
	return x
}

// body returns b with every string field redacted. A TextDelta is redacted
// on its own here; Run's deltas go through delta.
func (s secrets) body(b events.Body) events.Body {
	if s.r == nil {
		return b
	}
	switch b := b.(type) {
	case events.TextDelta:
		b.Text = s.str(b.Text)
		return b
	case events.Message:
		b.Text = s.str(b.Text)
		return b
	case events.Reasoning:
		b.Text = s.str(b.Text)
		return b
	case events.SessionStarted:
		b.SessionID, b.Model, b.Tools = s.str(b.SessionID), s.ptr(b.Model), s.strs(b.Tools)
		return b
	case events.ToolStarted:
		b.CallID, b.Name, b.Input = s.str(b.CallID), s.str(b.Name), s.raw(b.Input)
		return b
	case events.ToolFinished:
		b.CallID, b.Name, b.Output = s.str(b.CallID), s.str(b.Name), s.str(b.Output)
		return b
	case events.Usage:
		b.Model = s.ptr(b.Model)
		return b
	case events.Notice:
		b.Message, b.Data = s.str(b.Message), s.raw(b.Data)
		return b
	case events.RunStarted:
		b.Argv, b.Cwd, b.AgentVersion = s.strs(b.Argv), s.str(b.Cwd), s.ptr(b.AgentVersion)
		return b
	case events.RunFinished:
		b.Text, b.SessionID = s.str(b.Text), s.ptr(b.SessionID)
		if b.Error != nil {
			e := *b.Error
			e.Message, e.Hint = s.str(e.Message), s.str(e.Hint)
			b.Error = &e
		}
		return b
	}
	return b
}

// delta redacts a text delta of a run as part of all the run's deltas: it
// returns the text to send now (redacted) and holds back the end that could
// be the start of a credential.
func (s secrets) delta(text string) string {
	if s.r == nil {
		return text
	}
	t := s.r.Replace(*s.held + text)
	hold := 0
	for _, v := range s.values {
		for n := min(len(v)-1, len(t)); n > hold; n-- {
			if strings.HasSuffix(t, v[:n]) {
				hold = n
				break
			}
		}
	}
	*s.held = t[len(t)-hold:]
	return s.str(t[:len(t)-hold])
}

// flush returns the text the deltas held back, to send before an event that
// is not a delta ("" when none).
func (s secrets) flush() string {
	if s.r == nil || *s.held == "" {
		return ""
	}
	t := *s.held
	*s.held = ""
	return s.str(t)
}
