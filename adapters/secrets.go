package adapters

import (
	"encoding/json"
	"strings"

	"github.com/hubcli/hub/events"
)

// secrets replaces credential values — those of environment variables named
// like keys, tokens, secrets or passwords in the agent's environment — with
// "[REDACTED]" in every event hub emits (SPEC §6: hub never logs a
// credential). Values shorter than 8 bytes are left alone: too likely to
// occur by chance.
type secrets struct{ r *strings.Replacer }

func newSecrets(env []string) secrets {
	var pairs []string
	seen := map[string]bool{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < 8 || seen[v] || !secretName.MatchString(k) {
			continue
		}
		seen[v] = true
		pairs = append(pairs, v, "[REDACTED]")
	}
	if len(pairs) == 0 {
		return secrets{}
	}
	return secrets{strings.NewReplacer(pairs...)}
}

func (s secrets) str(v string) string {
	if s.r == nil || v == "" {
		return v
	}
	return s.r.Replace(v)
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

// body returns b with every text field redacted.
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
	case events.ToolStarted:
		b.Input = s.raw(b.Input)
		return b
	case events.ToolFinished:
		b.Output = s.str(b.Output)
		return b
	case events.Notice:
		b.Message, b.Data = s.str(b.Message), s.raw(b.Data)
		return b
	case events.RunStarted:
		for i := range b.Argv {
			b.Argv[i] = s.str(b.Argv[i])
		}
		return b
	case events.RunFinished:
		b.Text = s.str(b.Text)
		if b.Error != nil {
			e := *b.Error
			e.Message = s.str(e.Message)
			b.Error = &e
		}
		return b
	}
	return b
}
