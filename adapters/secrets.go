package adapters

import (
	"encoding/json"
	"strings"

	"github.com/hubcli/hub/events"
)

// secrets replaces credential values — those of environment variables named
// like keys, tokens, secrets or passwords in the agent's environment — with
// "[REDACTED]" in every string of every event hub emits (SPEC §6: hub never
// logs a credential). Values shorter than 8 bytes are left alone: too likely
// to occur by chance.
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
		seen[v] = true
		pairs = append(pairs, v, "[REDACTED]")
		values = append(values, v)
	}
	if len(pairs) == 0 {
		return secrets{}
	}
	return secrets{r: strings.NewReplacer(pairs...), values: values, held: new(string)}
}

func (s secrets) str(v string) string {
	if s.r == nil || v == "" {
		return v
	}
	return s.r.Replace(v)
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
	out := s.r.Replace(string(v))
	if out == string(v) || !json.Valid([]byte(out)) {
		return v
	}
	return json.RawMessage(out)
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
	return t[:len(t)-hold]
}

// flush returns the text the deltas held back, to send before an event that
// is not a delta ("" when none).
func (s secrets) flush() string {
	if s.r == nil || *s.held == "" {
		return ""
	}
	t := *s.held
	*s.held = ""
	return t
}
