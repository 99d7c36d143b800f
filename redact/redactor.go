package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"unsafe"

	"github.com/hubcli/hub/events"
)

// Redactor replaces credentials with "[REDACTED]" in every string of every
// event hub emits (SPEC §6.1: hub never logs a credential, in any
// encoding). Two things are credentials:
//
//   - the values of the agent's environment variables named like keys,
//     tokens, secrets or passwords (secretName), and the password of any
//     URL with one (scheme://user:password@…), 8 bytes or longer; each in
//     several forms: as it is, with the spaces of URL query escaping,
//     in hex (lower and upper case) and in base64 (standard and URL
//     alphabets, padded or not, at each of the three alignments it can
//     have inside a longer base64 text). Any 12 bytes of a form (gram) are
//     redacted wherever they occur, and the bytes around them as far as
//     they are pieces of a form too: decoders shorten texts (an error
//     message, a notice's head, a tool's output) before they are redacted,
//     and may cut a credential anywhere. A form shorter than 12 bytes is
//     redacted only whole.
//   - strings shaped like provider keys, whatever the environment holds
//     (scan.go: sk-…, ghp_…, github_pat_…, AKIA…, xox?-…, AIza…, PEM
//     private keys, URL passwords), with minimum lengths so that ordinary
//     prose and code are left alone.
//
// Matching runs on the decoded text: a string's JSON, backslash and
// percent escapes are decoded first (view), so no escape hides a
// credential from hub that a reader of hub's output would decode.
//
// Text deltas are redacted as one text: the end of a delta that could be
// the start of something to redact is held back (delta) until the next
// delta shows whether it is, or an event that ends the text comes (flush),
// so that a credential the agent streams in any number of pieces is never
// put together by a reader of the deltas, and the deltas put together read
// as the text redacted whole. What is held is bounded: the end that could
// begin a 12-byte piece (11 bytes at most), an escape cut short, or a key
// shape under way (its run up to maxRun bytes, a URL's userinfo, a PEM
// header); a piece or a key found is sent redacted at once, and the rest
// of it after (carry). The last ctxKeep bytes sent are kept as context, so
// that the rest of a credential whose start had to be sent (at a flush,
// when a text ends) is still redacted.
//
// A Redactor is used by one run's emitting goroutine at a time; its
// zero value redacts key shapes only, and does not hold deltas back.
type Redactor struct {
	n  *needles    // the forms of the credential values; nil: none
	st *deltaState // nil in the zero value
	// notes is the text of the notices' messages (stray lines, stderr), a
	// text of its own: a notice between two deltas is not part of theirs.
	notes *deltaState
}

// deltaState is what delta keeps between calls.
type deltaState struct {
	buf    []byte // the context (the last ctxLen bytes sent) and then the held text, as the agent wrote them
	ctxLen int
	carry  carry // what the text held starts in
	open   bool  // what was sent ends in a redacted span
	vw     view  // scratch: the view of the last text scanned
	viewed bool  // vw is that text's view
	spans  []span
	// The last whole text redacted by text, and what it became.
	lastIn, lastOut string
}

// minSecret is the shortest credential value redacted: shorter ones are
// too likely to occur by chance.
const minSecret = 8

// minMatch is the shortest text that can hold something to redact: a
// form of a credential is minSecret bytes or more (its base64 too), a key
// shape or URL password longer.
const minMatch = minSecret

// ctxKeep is how many of the last bytes sent delta keeps as context.
const ctxKeep = 64

// New returns the redactor of a run whose agent has the environment env
// (K=V pairs): the values of its variables named like credentials, and URL
// passwords, in every form described at Redactor, besides the key shapes
// any redactor finds.
func New(env []string) Redactor {
	var forms []string
	seen := map[string]bool{}
	add := func(v string) {
		if len(v) < minSecret || seen[v] {
			return
		}
		seen[v] = true
		for _, f := range secretForms(v) {
			if !seen[f] || f == v {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if pw := urlPassword(v); pw != "" {
			add(pw)
		}
		if secretName.MatchString(k) && !notSecret(v) {
			add(v)
		}
	}
	s := Redactor{st: &deltaState{}, notes: &deltaState{}}
	if len(forms) > 0 {
		s.n = newNeedles(forms)
	}
	return s
}

// notSecret reports whether the value of a variable named like a secret
// is something else: a number, or the path of a file that exists (a
// credentials file's name, not its content).
func notSecret(v string) bool {
	if strings.Trim(v, "0123456789") == "" {
		return true
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") {
		p := v
		if strings.HasPrefix(p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return false
			}
			p = home + p[1:]
		}
		_, err := os.Stat(p)
		return err == nil
	}
	return false
}

// urlPassword returns the password of v when v is a URL with one.
func urlPassword(v string) string {
	i := strings.Index(v, "://")
	if i <= 0 || !strings.Contains(v[i:], "@") {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// secretForms returns the forms of v that secrets redacts (see secrets):
// v; v decoded as view decodes a text, when that differs; v with the
// spaces query escaping makes '+' (its %XX escapes are decoded in the
// view); v in hex; and the parts of v's base64 that do not depend on the
// bytes around it.
func secretForms(v string) []string {
	forms := []string{v}
	if d := decodeView(v); d != v {
		forms = append(forms, d)
	}
	if strings.Contains(v, " ") {
		forms = append(forms, strings.ReplaceAll(v, " ", "+"))
	}
	h := hex.EncodeToString([]byte(v))
	forms = append(forms, h, strings.ToUpper(h))
	for off := range 3 {
		b := []byte(v[off:])
		b = b[:len(b)/3*3] // whole groups only: the rest depends on what follows
		if len(b) == 0 {
			continue
		}
		forms = append(forms, base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b))
	}
	return forms
}

// spans returns the spans of w to redact, merged, in w's bytes; see scan
// for from, in, final, pending and end, which are in w's bytes too.
func (s Redactor) spans(w string, from int, in carry, final bool) (spans []span, pending int, end carry) {
	var vw *view
	if s.st != nil {
		vw, spans = &s.st.vw, s.st.spans[:0]
	}
	// scan looks back from from a few bytes only (but into a PEM block
	// under way): escapes before that do not matter.
	look := max(0, from-2*gram)
	if in.pem {
		look = 0
	}
	if !hasEscape(w[look:]) {
		spans, pending, end = scan(s.n, w, from, in, final, spans)
		spans = normalizeSpans(spans)
	} else {
		if vw == nil {
			vw = new(view)
		}
		vw.build(w)
		v := unsafe.String(unsafe.SliceData(vw.b), len(vw.b))
		spans, pending, end = scan(s.n, v, vw.at(from), in, final, spans)
		for i := range spans {
			spans[i] = span{vw.text(spans[i].start), vw.text(spans[i].end)}
		}
		spans = normalizeSpans(spans)
		pending = vw.text(pending)
	}
	if s.st != nil {
		s.st.spans, s.st.viewed = spans, hasEscape(w[look:])
	}
	return spans, pending, end
}

// str returns v redacted.
func (s Redactor) String(v string) string {
	if len(v) < minMatch && (s.n == nil || len(v) < s.n.minLen) {
		return v
	}
	spans, _, _ := s.spans(v, 0, carry{}, true)
	return redactSpans(v, spans)
}

// redactSpans returns v with each of spans (sorted, disjoint) replaced by
// marker; v itself when there are none.
func redactSpans(v string, spans []span) string {
	if len(spans) == 0 {
		return v
	}
	var out strings.Builder
	out.Grow(len(v))
	done := 0
	for _, sp := range spans {
		out.WriteString(v[done:sp.start])
		out.WriteString(marker)
		done = sp.end
	}
	out.WriteString(v[done:])
	return out.String()
}

func (s Redactor) ptr(v *string) *string {
	if v == nil {
		return nil
	}
	r := s.String(*v)
	return &r
}

func (s Redactor) strs(v []string) []string {
	if v == nil {
		return nil
	}
	out := make([]string, len(v))
	for i := range v {
		out[i] = s.String(v[i])
	}
	return out
}

// raw redacts a JSON value. Matching decodes its escapes, so the spans
// cover whole escapes; when a span ran across the JSON's own syntax, the
// decoded strings are redacted instead.
func (s Redactor) Raw(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return v
	}
	out := s.String(string(v))
	if out == string(v) {
		return v
	}
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
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
func (s Redactor) walk(x any) any {
	switch x := x.(type) {
	case string:
		return s.String(x)
	case []any:
		for i := range x {
			x[i] = s.walk(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[s.String(k)] = s.walk(v)
		}
		return out
	}
	return x
}

// body returns b with every string field redacted. A TextDelta is redacted
// on its own here; Run's deltas go through delta.
func (s Redactor) Body(b events.Body) events.Body {
	switch b := b.(type) {
	case events.TextDelta:
		b.Text = s.String(b.Text)
		return b
	case events.Message:
		b.Text = s.text(b.Text)
		return b
	case events.Reasoning:
		b.Text = s.text(b.Text)
		return b
	case events.SessionStarted:
		b.SessionID, b.Model, b.Tools = s.String(b.SessionID), s.ptr(b.Model), s.strs(b.Tools)
		return b
	case events.ToolStarted:
		b.CallID, b.Name, b.Input = s.String(b.CallID), s.String(b.Name), s.Raw(b.Input)
		return b
	case events.ToolFinished:
		b.CallID, b.Name = s.String(b.CallID), s.String(b.Name)
		if b.Truncated {
			b.Output = s.CutText(b.Output)
		} else {
			b.Output = s.String(b.Output)
		}
		return b
	case events.Usage:
		b.Model = s.ptr(b.Model)
		return b
	case events.ApprovalRequested:
		b.CallID, b.Name, b.Input, b.Paths, b.Reason = s.String(b.CallID), s.String(b.Name), s.Raw(b.Input), s.strs(b.Paths), s.String(b.Reason)
		return b
	case events.ApprovalDecided:
		b.CallID, b.Name, b.Message = s.String(b.CallID), s.String(b.Name), s.String(b.Message)
		return b
	case events.Notice:
		b.Message, b.Data = s.textOf(s.notes, s.cutEnds(b.Message)), s.Raw(b.Data)
		return b
	case events.RunStarted:
		b.Argv, b.Cwd, b.AgentVersion = s.strs(b.Argv), s.String(b.Cwd), s.ptr(b.AgentVersion)
		if sb := b.Sandbox; sb != nil {
			b.Sandbox = &events.Sandbox{Mode: sb.Mode, Root: s.String(sb.Root), Dir: s.String(sb.Dir)}
		}
		return b
	case events.FileChanged:
		b.Path, b.OldPath, b.Protected = s.String(b.Path), s.ptr(b.OldPath), s.String(b.Protected)
		return b
	case events.RunFinished:
		b.Text, b.SessionID, b.Structured = s.answer(b.Text), s.ptr(b.SessionID), s.Raw(b.Structured)
		b.Diff = s.ptr(b.Diff)
		if b.Error != nil {
			e := *b.Error
			e.Message, e.Hint = s.joined(s.cutEnds(e.Message)), s.String(e.Hint)
			b.Error = &e
		}
		return b
	}
	return b
}

// delta redacts a text delta of a run as part of all the run's deltas: it
// returns the text to send now (redacted) and holds back the end that could
// be the start of something to redact.
func (s Redactor) Delta(text string) string {
	st := s.st
	if st == nil {
		return s.String(text)
	}
	var fresh string // with nothing held, what is sent may be text itself
	if len(st.buf) == st.ctxLen {
		fresh = text
	}
	st.buf = append(st.buf, text...)
	return st.send(s, false, fresh)
}

// text redacts v, the text of a whole event (a message, a notice's line),
// as the continuation of the text the run sent before it, deltas or other
// whole texts: a credential split between two messages, or two stray
// lines, is redacted in the second (all but a start too short to match,
// see minMatch). v itself is never held back. While deltas are held (a
// notice between two deltas), v is redacted on its own.
func (s Redactor) text(v string) string { return s.textOf(s.st, v) }

// textOf is text in the text st: the deltas' and messages', or the
// notices'.
func (s Redactor) textOf(st *deltaState, v string) string {
	if st == nil || len(st.buf) != st.ctxLen {
		return s.String(v)
	}
	st.buf = append(st.buf, v...)
	out := st.send(s, true, v)
	st.carry, st.open = carry{}, false
	st.lastIn, st.lastOut = v, out
	return out
}

// lineJoin is how error messages join the lines of an agent's stderr
// (normalize.JoinLines).
const lineJoin = " | "

// joined redacts v, an error message that may join stderr lines with
// lineJoin, as if the lines were one text: a credential split across two
// lines is redacted in each piece.
func (s Redactor) joined(v string) string {
	if !strings.Contains(v, lineJoin) {
		return s.String(v)
	}
	parts := strings.Split(v, lineJoin)
	c := strings.Join(parts, "")
	spans, _, _ := s.spans(c, 0, carry{}, true)
	if len(spans) == 0 {
		return v
	}
	out := make([]string, len(parts))
	off := 0
	for i, p := range parts {
		lo, hi := off, off+len(p)
		var b strings.Builder
		done := lo
		for _, sp := range spans {
			if st, en := max(sp.start, lo), min(sp.end, hi); st < en {
				b.WriteString(c[done:st])
				b.WriteString(marker)
				done = en
			}
		}
		b.WriteString(c[done:hi])
		out[i], off = b.String(), hi
	}
	return strings.Join(out, lineJoin)
}

// cutText redacts v, a text hub cut short (a tool output over its cap):
// its end may be the start of a credential, too short to match by itself,
// so an end that could still become one is redacted too.
func (s Redactor) CutText(v string) string {
	spans, pending, _ := s.spans(v, 0, carry{}, false)
	if pending < len(v) {
		spans = normalizeSpans(append(spans, span{pending, len(v)}))
	}
	return redactSpans(v, spans)
}

// cutEnds redacts, in a message, the text before each "…": where
// normalize.Shorten cut an agent's text (an error message, a stderr line
// in it), the cut end may be the start of a credential too short to match
// by itself, as in a cut tool output (cutText). A "…" the agent wrote
// itself costs at most an end that could begin a credential.
func (s Redactor) cutEnds(v string) string {
	if !strings.Contains(v, "…") {
		return v
	}
	parts := strings.Split(v, "…")
	for i := range parts[:len(parts)-1] {
		parts[i] = s.CutText(parts[i])
	}
	return strings.Join(parts, "…")
}

// answer redacts the run's final text as it was redacted when it went out
// as a message (see text), so that the answer and that message agree; any
// other text on its own.
func (s Redactor) answer(v string) string {
	if st := s.st; st != nil && v == st.lastIn && v != "" {
		return st.lastOut
	}
	return s.String(v)
}

// flush returns the text the deltas held back, redacted, to send before an
// event that ends the text ("" when none). What comes after starts anew,
// but for the context kept.
func (s Redactor) Flush() string {
	st := s.st
	if st == nil || len(st.buf) == st.ctxLen {
		return ""
	}
	out := st.send(s, true, "")
	st.carry, st.open = carry{}, false
	return out
}

// send sends what it can of the held text: all of it with final. When
// the held text is fresh (it is all the caller's text), what is sent
// unchanged is a substring of it rather than a copy.
func (st *deltaState) send(s Redactor, final bool, fresh string) (out string) {
	w := unsafe.String(unsafe.SliceData(st.buf), len(st.buf))
	from := st.ctxLen
	scanned := w
	if !final {
		// An escape cut short is held whole: its end may decode into a
		// credential's byte.
		scanned = w[:max(tailEscape(w), from)]
	}
	spans, pending, end := s.spans(scanned, from, st.carry, final)
	cut := len(w)
	if !final {
		cut = max(pending, from)
		for _, sp := range spans { // what is redacted can be sent
			if sp.start <= cut && cut < sp.end {
				cut = sp.end
			}
		}
	}
	var b strings.Builder
	done := from
	for _, sp := range spans {
		if sp.end <= from || sp.start >= cut {
			continue
		}
		start, end := max(sp.start, from), min(sp.end, cut)
		b.WriteString(w[done:start])
		if !(start == from && st.open && (sp.start < from || st.carry != carry{})) {
			b.WriteString(marker) // else it goes on from what was sent
		}
		done = end
	}
	plain := done == from
	switch {
	case plain && fresh != "":
		out = fresh[:cut-from]
	case plain:
		out = strings.Clone(w[from:cut])
	default:
		b.WriteString(w[done:cut])
		out = b.String()
	}
	if cut > from {
		st.open = done == cut && !plain
	}
	if cut == len(w) {
		st.carry = end
	} else {
		st.carry = carry{}
	}
	// Keep the last ctxKeep bytes sent (more when escaped: ctxKeep bytes of
	// their view), then what is held.
	keep := max(cut-ctxKeep, 0)
	if vw := &st.vw; st.viewed && keep > 0 {
		keep = min(keep, vw.text(max(vw.at(cut)-ctxKeep, 0)))
	}
	n := copy(st.buf, st.buf[keep:])
	st.buf = st.buf[:n]
	st.ctxLen = cut - keep
	return out
}
