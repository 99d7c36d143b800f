package redact

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// This file finds what a Redactor (redactor.go) redacts in a text: pieces of
// credential values in any of their forms (needles), and strings shaped
// like keys whatever the environment holds. Matching runs on the text's
// view: the text with its escapes decoded (view, below), so that an escape
// cannot hide a key from hub while a reader of hub's output decodes it.

// marker replaces each redacted span.
const marker = "[REDACTED]"

// gram is how long a piece of a needle is redacted on its own, wherever it
// occurs: any gram bytes of a credential, in any of its forms, and the
// bytes around them as far as they are pieces too. A needle shorter than
// gram is redacted only whole.
const gram = 12

// span is a byte range [start, end) of a text.
type span struct{ start, end int }

// normalizeSpans sorts spans by start and merges those that overlap or
// touch. Spans are appended mostly in order, so insertion sort is cheap.
func normalizeSpans(sp []span) []span {
	for i := 1; i < len(sp); i++ {
		for j := i; j > 0 && sp[j].start < sp[j-1].start; j-- {
			sp[j], sp[j-1] = sp[j-1], sp[j]
		}
	}
	out := sp[:0]
	for _, s := range sp {
		if s.end <= s.start {
			continue
		}
		if n := len(out); n > 0 && s.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Fingerprints of byte strings: a polynomial hash mod 2^64, rolled one byte
// at a time over the text. Equal strings have equal fingerprints; a
// collision of different ones (about 2^-64 a lookup) only over-redacts.
const (
	hashBase = 0x9E3779B97F4A7C15
	hashMix  = 0xBF58476D1CE4E5B9
)

func hashOf(s string) uint64 {
	var h uint64
	for i := 0; i < len(s); i++ {
		h = h*hashBase + uint64(s[i]) + 1
	}
	return h
}

// hashPow is hashBase^gram, to roll a byte out of the window.
var hashPow = func() uint64 {
	p := uint64(1)
	for range gram {
		p *= hashBase
	}
	return p
}()

// fpSet is an open-addressing set of nonzero fingerprints.
type fpSet struct {
	t     []uint64
	shift uint
	n     int
}

func newFPSet(n int) fpSet {
	size, shift := 16, uint(64-4)
	for size < 4*n {
		size, shift = size*2, shift-1
	}
	return fpSet{t: make([]uint64, size), shift: shift}
}

func (s *fpSet) add(h uint64) {
	h |= 1
	mask := uint64(len(s.t) - 1)
	for i := (h * hashMix) >> s.shift; ; i = (i + 1) & mask {
		switch s.t[i] {
		case h:
			return
		case 0:
			s.t[i] = h
			s.n++
			return
		}
	}
}

func (s *fpSet) has(h uint64) bool {
	h |= 1
	mask := uint64(len(s.t) - 1)
	for i := (h * hashMix) >> s.shift; ; i = (i + 1) & mask {
		switch s.t[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// needles are the forms of a run's credential values (see secrets), ready
// to be found in texts. Read-only once built: safe for concurrent use.
type needles struct {
	quads  [1 << 16 / 64]uint64 // a bit for every 4 bytes of those needles (quadHash), to skip text fast
	grams  fpSet                // every gram-byte piece of every needle of gram bytes or more
	prefix fpSet                // every proper prefix of those pieces and of short needles (length folded in)
	short  []string             // needles shorter than gram: matched whole
	maxLen int                  // the longest needle
	minLen int                  // the shortest
}

func prefixKey(h uint64, k int) uint64 { return h*31 + uint64(k) }

func newNeedles(forms []string) *needles {
	pieces, prefixes := 0, 0
	for _, f := range forms {
		if len(f) >= gram {
			pieces += len(f) - gram + 1
			prefixes += (len(f) - gram + 1) * (gram - 1)
		} else {
			prefixes += len(f)
		}
	}
	n := &needles{grams: newFPSet(pieces), prefix: newFPSet(prefixes), minLen: gram}
	for _, f := range forms {
		n.maxLen, n.minLen = max(n.maxLen, len(f)), min(n.minLen, len(f))
		if len(f) < gram {
			n.short = append(n.short, f)
			for k := 1; k < len(f); k++ {
				n.prefix.add(prefixKey(hashOf(f[:k]), k))
			}
			continue
		}
		for i := 0; i+4 <= len(f); i++ {
			q := quadHash(f[i:])
			n.quads[q/64] |= 1 << (q % 64)
		}
		for i := 0; i+gram <= len(f); i++ {
			var h uint64
			for k := 1; k < gram; k++ {
				h = h*hashBase + uint64(f[i+k-1]) + 1
				n.prefix.add(prefixKey(h, k))
			}
			n.grams.add(h*hashBase + uint64(f[i+gram-1]) + 1)
		}
	}
	return n
}

// quadHash hashes the first 4 bytes of s into 16 bits.
func quadHash(s string) uint32 {
	x := uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
	return (x * 0x9E3779B1) >> 16
}

// find appends the spans of v[lo:] that are pieces of needles (a piece
// may start before lo). A piece of gram bytes holds 4 bytes at one of any
// 9 positions in a row, so only every 9th position is looked up in quads;
// a hit there is verified by the gram-byte fingerprints around it.
func (n *needles) find(v string, lo int, spans []span) []span {
	if n.grams.n > 0 && len(v)-lo >= gram {
		last := len(v) - gram // the last piece's start
		done := lo            // pieces starting before done are checked
		for p := lo + gram - 4; p-(gram-4) <= last; p += gram - 3 {
			q := quadHash(v[min(p, last):])
			if n.quads[q/64]&(1<<(q%64)) == 0 {
				continue
			}
			i := max(p-(gram-4), done)
			h := hashOf(v[i : i+gram])
			for ; i <= min(p, last); i++ {
				if i > max(p-(gram-4), done) {
					h = h*hashBase + uint64(v[i+gram-1]) + 1 - (uint64(v[i-1])+1)*hashPow
				}
				if n.grams.has(h) {
					if k := len(spans); k > 0 && spans[k-1].end >= i {
						spans[k-1].end = i + gram
					} else {
						spans = append(spans, span{i, i + gram})
					}
				}
			}
			done = i
		}
	}
	for _, s := range n.short {
		for i := lo; ; {
			j := strings.Index(v[i:], s)
			if j < 0 {
				break
			}
			spans = append(spans, span{i + j, i + j + len(s)})
			i += j + 1
		}
	}
	return spans
}

// pending returns where the longest end of v that could be the start of a
// piece begins (len(v) when none).
func (n *needles) pending(v string) int {
	var hs [gram]uint64 // hs[k]: the fingerprint of the last k bytes
	pow := uint64(1)
	kmax := min(gram-1, len(v))
	for k := 1; k <= kmax; k++ {
		hs[k] = hs[k-1] + (uint64(v[len(v)-k])+1)*pow
		pow *= hashBase
	}
	for k := kmax; k > 0; k-- {
		if n.prefix.has(prefixKey(hs[k], k)) {
			return len(v) - k
		}
	}
	return len(v)
}

// Byte classes.
type class [256]bool

func newClass(sets ...string) *class {
	var c class
	for _, s := range sets {
		for i := 0; i < len(s); i++ {
			if i+2 < len(s) && s[i+1] == '-' {
				for b := s[i]; b <= s[i+2]; b++ {
					c[b] = true
				}
				i += 2
				continue
			}
			c[s[i]] = true
		}
	}
	return &c
}

var (
	wordClass   = newClass("a-zA-Z0-9_")
	alnumClass  = newClass("a-zA-Z0-9")
	b64urlClass = newClass("a-zA-Z0-9", "_-")
	patClass    = newClass("a-zA-Z0-9_")
	slackClass  = newClass("a-zA-Z0-9", "-")
	pemClass    = newClass("a-zA-Z0-9", "+/=:,-", " \t\r\n")
	// pemLabel are the bytes of a PEM label ("RSA PRIVATE KEY").
	pemLabel = newClass("A-Z0-9", " ")
	// userinfoEnd ends the authority of a URL.
	userinfoEnd = newClass("/?#", " \t\r\n", `"'<>\`+"`")
	schemeClass = newClass("a-zA-Z0-9", "+.-")
)

// A keyKind is one shape of provider key: a prefix, then a run of bytes of
// a class. Conservative: a minimum length, and for the generic sk- prefix
// the mix of digits and upper- and lower-case letters random keys have.
type keyKind struct {
	prefix   string
	class    *class
	min, max int  // run length bounds (max 0: none)
	mixed    bool // the run needs a digit, an upper- and a lower-case letter
	digit    bool // the run needs a digit
	upper    bool // the run is [A-Z0-9] only (AWS)
}

// keyKinds, by the first byte of their prefix.
var keyKinds = []keyKind{
	{prefix: "sk-", class: b64urlClass, min: 20, mixed: true}, // OpenAI sk-, sk-proj-; Anthropic sk-ant-
	{prefix: "ghp_", class: alnumClass, min: 30},              // GitHub classic, OAuth, user, server, refresh
	{prefix: "gho_", class: alnumClass, min: 30},
	{prefix: "ghu_", class: alnumClass, min: 30},
	{prefix: "ghs_", class: alnumClass, min: 30},
	{prefix: "ghr_", class: alnumClass, min: 30},
	{prefix: "github_pat_", class: patClass, min: 22},
	{prefix: "AKIA", class: alnumClass, min: 16, max: 16, upper: true}, // AWS access key ids
	{prefix: "ASIA", class: alnumClass, min: 16, max: 16, upper: true},
	{prefix: "AIza", class: b64urlClass, min: 35}, // Google API keys
	{prefix: "xoxb-", class: slackClass, min: 15, digit: true},
	{prefix: "xoxa-", class: slackClass, min: 15, digit: true},
	{prefix: "xoxp-", class: slackClass, min: 15, digit: true},
	{prefix: "xoxr-", class: slackClass, min: 15, digit: true},
	{prefix: "xoxs-", class: slackClass, min: 15, digit: true},
}

// maxRun is how long a key's run can grow before it is redacted whatever
// its mix, so that what streaming holds back stays bounded.
const maxRun = 256

const (
	pemBegin = "-----BEGIN "
	pemEnd   = "-----END "
)

// carry is what a streamed text was in at the end of what was sent: the
// run of a key (redacted; its bytes go on being redacted) or the body of a
// PEM private key.
type carry struct {
	kind *keyKind // a key's run
	pem  bool
}

func mixed(s string) bool {
	var d, u, l bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			d = true
		case c >= 'A' && c <= 'Z':
			u = true
		case c >= 'a' && c <= 'z':
			l = true
		}
	}
	return d && u && l
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

func upperDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// scan appends to spans the byte ranges of v to redact: pieces of needles
// (n may be nil) and key shapes. Bytes before from are context only: they
// were sent already, as in carried at from. With final, v ends where the
// text ends; without it, more may follow: pending is where the earliest end
// of v that could still become (part of) something to redact begins, and
// end is what a text sent up to len(v) is left in.
func scan(n *needles, v string, from int, in carry, final bool, spans []span) (_ []span, pending int, end carry) {
	pending = len(v)
	if n != nil {
		// A piece that goes on from what was sent shows in its last
		// gram-1 bytes.
		spans = n.find(v, max(0, from-(gram-1)), spans)
		if !final {
			pending = n.pending(v)
		}
	}
	hold := func(p int) {
		if !final && p < pending {
			pending = p
		}
	}
	switch {
	case in.pem:
		e, open := pemBodyAfter(v, from)
		spans = append(spans, span{from, e})
		if open {
			end = in
		}
	case in.kind != nil:
		e := from
		for e < len(v) && in.kind.class[v[e]] {
			e++
		}
		spans = append(spans, span{from, e})
		if e == len(v) {
			end = in
		}
	}
	// Shapes are found from the bytes every one of them has — '-', '_',
	// 'A' or ':' — with strings.IndexByte, which skips the rest of the
	// text many bytes at a time. A shape that starts in what was sent is
	// looked for in its last bytes only: one cut short is held back whole
	// (partialShape), so only a text that ended (flush) leaves one there.
	lo := max(0, from-len("github_pat_"))
	key := func(at int) {
		if at < 0 || at > 0 && wordClass[v[at-1]] {
			return
		}
		for k := range keyKinds {
			kk := &keyKinds[k]
			if !strings.HasPrefix(v[at:], kk.prefix) {
				continue
			}
			rs := at + len(kk.prefix)
			re := rs
			for re < len(v) && kk.class[v[re]] {
				re++
			}
			run := v[rs:re]
			long := kk.max == 0 && len(run) >= maxRun
			fits := len(run) >= kk.min && (kk.max == 0 || len(run) <= kk.max) && (!kk.upper || upperDigits(run))
			ok := long || fits && (!kk.mixed || mixed(run)) && (!kk.digit || hasDigit(run))
			touching := re == len(v) && !final
			switch {
			case touching && ok && kk.max == 0:
				// A key whose run may go on: redacted so far, and after.
				spans = append(spans, span{at, re})
				end = carry{kind: kk}
			case touching && (kk.max == 0 || len(run) <= kk.max):
				hold(at) // too short to tell yet
			case ok:
				spans = append(spans, span{at, re})
			}
			return
		}
	}
	// at handles the anchor at i and returns where to go on from.
	at := func(i int) int {
		switch v[i] {
		case '-':
			if i >= 2 && v[i-2] == 's' && v[i-1] == 'k' {
				key(i - 2) // sk-
			}
			if i >= 4 && v[i-4:i-1] == "xox" {
				key(i - 4) // xox?-
			}
			if !strings.HasPrefix(v[i:], pemBegin) {
				return i + 1
			}
			h, ok, partial := pemHeader(v, i)
			if partial {
				hold(i)
				return i + 1
			}
			if !ok {
				return i + 1
			}
			e, open := pemBody(v, h)
			spans = append(spans, span{i, e})
			if open {
				end = carry{pem: true}
			}
			return e
		case '_':
			if i >= 3 && v[i-3] == 'g' && v[i-2] == 'h' {
				key(i - 3) // gh?_
			}
			if i >= 6 && v[i-6:i] == "github" {
				key(i - 6) // github_pat_
			}
		case 'A':
			key(i) // AKIA, ASIA, AIza
		case ':':
			sp, ok, partial := userinfo(v, i, final)
			if partial {
				hold(i + 3)
			} else if ok {
				spans = append(spans, sp)
			}
		}
		return i + 1
	}
	if len(v)-lo <= 64 { // a delta: one pass costs less than four calls
		for i := lo; i < len(v); {
			switch v[i] {
			case '-', '_', 'A', ':':
				i = at(i)
			default:
				i++
			}
		}
	} else {
		for _, anchor := range []byte{'-', '_', 'A', ':'} {
			for i := lo; i < len(v); {
				j := strings.IndexByte(v[i:], anchor)
				if j < 0 {
					break
				}
				i = at(i + j)
			}
		}
	}
	if !final {
		hold(partialShape(v, from))
	}
	return spans, pending, end
}

// partialShape returns where an end of v that could be the start of a key
// or PEM shape begins (len(v) when none), at or after from. It is no
// secret, and the context kept with the next delta would complete it; it
// is held so that the whole shape is redacted as one span, as in a text
// redacted whole. A URL's "://" is not held (a delta ending in ':' is
// common): only its userinfo is.
func partialShape(v string, from int) int {
	for at := max(from, len(v)-len(pemBegin)+1); at < len(v); at++ {
		rest := v[at:]
		switch c := v[at]; {
		case c == '-':
			if strings.HasPrefix(pemBegin, rest) {
				return at
			}
		case c == 's' || c == 'g' || c == 'A' || c == 'x':
			if at > 0 && wordClass[v[at-1]] {
				continue
			}
			for _, kk := range keyKinds {
				if len(rest) < len(kk.prefix) && strings.HasPrefix(kk.prefix, rest) {
					return at
				}
			}
		}
	}
	return len(v)
}

// pemHeader reads "-----BEGIN … PRIVATE KEY-----" at i: the end of the
// header, whether it is one, and whether v ends before that is known.
func pemHeader(v string, i int) (end int, ok, partial bool) {
	j := i + len(pemBegin)
	for ; j < len(v) && j-i < 80 && pemLabel[v[j]]; j++ {
	}
	label := v[i+len(pemBegin) : j]
	if j == len(v) {
		return 0, false, true
	}
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return 0, false, false
	}
	if len(v)-j < 5 {
		return 0, false, v[j:] == "-----"[:len(v)-j]
	}
	if v[j:j+5] != "-----" {
		return 0, false, false
	}
	return j + 5, true, false
}

// pemBody returns where the body of a PEM block that starts at i ends: at
// the end of its "-----END …-----" footer, or at the first byte that no
// PEM body has; open when v ends first.
func pemBody(v string, i int) (end int, open bool) {
	for j := i; j < len(v); j++ {
		c := v[j]
		if c == '-' && strings.HasPrefix(v[j:], pemEnd) {
			k := j + len(pemEnd)
			for ; k < len(v) && pemLabel[v[k]]; k++ {
			}
			if strings.HasPrefix(v[k:], "-----") {
				return k + 5, false
			}
			if len(v)-k < 5 && v[k:] == "-----"[:len(v)-k] {
				return len(v), true
			}
		}
		if !pemClass[c] {
			return j, false
		}
	}
	return len(v), true
}

// pemBodyAfter is pemBody for a block under way at from: its footer may
// have started in the context before from.
func pemBodyAfter(v string, from int) (end int, open bool) {
	lo := max(0, from-64)
	for j := lo; j < from; j++ {
		if v[j] == '-' && strings.HasPrefix(v[j:], pemEnd) {
			if e, open := pemBody(v, j); e > from && (open || e != j) {
				return e, open
			}
		}
	}
	return pemBody(v, from)
}

// userinfo reads a URL at the "://" at i: the span of the password in
// scheme://user:password@host, whether there is one, and whether v ends in
// the authority (more may come: an '@' later, or more of the password).
func userinfo(v string, i int, final bool) (sp span, ok, partial bool) {
	if !strings.HasPrefix(v[i:], "://") || i == 0 || !schemeClass[v[i-1]] {
		return span{}, false, false
	}
	u := i + 3
	at, j := -1, u
	for ; j < len(v) && !userinfoEnd[v[j]] && j-u < maxRun; j++ {
		if v[j] == '@' {
			at = j
		}
	}
	if j == len(v) && !final && j-u < maxRun {
		return span{}, false, true
	}
	if at < 0 {
		return span{}, false, false
	}
	c := strings.IndexByte(v[u:at], ':')
	if c < 0 || u+c+1 == at || placeholder(v[u+c+1:at]) {
		return span{}, false, false
	}
	return span{u + c + 1, at}, true, false
}

// placeholder reports whether a URL's password is a stand-in in code or
// docs, not a password: a format verb (%s), a template (${PASS}, {pass},
// <password>, $PASS), or stars.
func placeholder(pw string) bool {
	switch {
	case pw[0] == '%' && len(pw) <= 3, pw[0] == '$', pw[0] == '{', pw[0] == '<':
		return true
	}
	return strings.Trim(pw, "*") == ""
}

// unescape decodes the escape at the start of s — a run of backslashes
// and the escaped character (\uXXXX, \xXX, \n, \t, \r, or any byte as
// itself), or %XX (again while it decodes to '%' and hex digits follow,
// as double URL-encoding does) — into b; n is how many bytes of s it took.
func unescape(s string, b *[utf8.UTFMax]byte) (k, n int, ok bool) {
	if s[0] == '%' {
		if len(s) < 3 || !isHex(s[1]) || !isHex(s[2]) {
			return 0, 0, false
		}
		c, n := unhex(s[1])<<4|unhex(s[2]), 3
		for c == '%' && n+1 < len(s) && isHex(s[n]) && isHex(s[n+1]) {
			c, n = unhex(s[n])<<4|unhex(s[n+1]), n+2
		}
		b[0] = c
		return 1, n, true
	}
	j := 0
	for j < len(s) && s[j] == '\\' {
		j++
	}
	if j == len(s) {
		return 0, 0, false
	}
	switch c := s[j]; c {
	case 'u':
		if len(s) < j+5 || !isHex(s[j+1]) || !isHex(s[j+2]) || !isHex(s[j+3]) || !isHex(s[j+4]) {
			return 0, 0, false
		}
		r := rune(unhex(s[j+1]))<<12 | rune(unhex(s[j+2]))<<8 | rune(unhex(s[j+3]))<<4 | rune(unhex(s[j+4]))
		return utf8.EncodeRune(b[:], r), j + 5, true
	case 'x':
		if len(s) < j+3 || !isHex(s[j+1]) || !isHex(s[j+2]) {
			return 0, 0, false
		}
		b[0] = unhex(s[j+1])<<4 | unhex(s[j+2])
		return 1, j + 3, true
	case 'n':
		b[0] = '\n'
	case 't':
		b[0] = '\t'
	case 'r':
		b[0] = '\r'
	default:
		b[0] = c
	}
	return 1, j + 1, true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// tailEscape returns where an escape that s ends in the middle of begins
// (len(s) when none): its end may decode into a key's byte.
func tailEscape(s string) int {
	tail := s[max(0, len(s)-16):]
	first := strings.IndexByte(tail, '\\')
	if i := strings.IndexByte(tail, '%'); first < 0 || i >= 0 && i < first {
		first = i
	}
	if first < 0 {
		return len(s)
	}
	for p := len(s) - len(tail) + first; p < len(s); p++ {
		c := s[p]
		if c != '\\' && c != '%' || c == '\\' && p > 0 && s[p-1] == '\\' {
			continue
		}
		rest := s[p:]
		var b [utf8.UTFMax]byte
		if _, n, ok := unescape(rest, &b); ok {
			if c == '%' && b[0] == '%' && len(rest)-n < 2 && allHex(rest[n:]) {
				return p // %25 at the end: the hex digits it escapes may follow
			}
			p += n - 1
			continue
		}
		if c == '\\' && incompleteUnicode(rest) || c == '%' && len(rest) < 3 && allHex(rest[1:]) {
			return p
		}
	}
	return len(s)
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func incompleteUnicode(s string) bool {
	j := 0
	for j < len(s) && s[j] == '\\' {
		j++
	}
	if j == len(s) {
		return true
	}
	switch s[j] {
	case 'u':
		return len(s)-j-1 < 4 && allHex(s[j+1:])
	case 'x':
		return len(s)-j-1 < 2 && allHex(s[j+1:])
	}
	return false
}

// view is a text with its escapes decoded, and where each escape was, so
// that spans found in it map back to the text. Between escapes the view is
// the text's bytes, copied in bulk.
type view struct {
	b   []byte
	esc []escape // in order
}

// An escape decoded at view byte v (into vn bytes) was the on bytes of the
// text at o.
type escape struct{ v, vn, o, on int }

// hasEscape reports whether s has anything that view decodes.
func hasEscape(s string) bool {
	return strings.IndexByte(s, '\\') >= 0 || strings.IndexByte(s, '%') >= 0
}

func (vw *view) build(s string) {
	vw.b, vw.esc = vw.b[:0], vw.esc[:0]
	var b [utf8.UTFMax]byte
	nb, np := -1, -1 // the next '\\' and '%' at or after i, -1 before looking
	for i := 0; i < len(s); {
		if nb < i && nb != len(s) {
			if nb = strings.IndexByte(s[i:], '\\'); nb < 0 {
				nb = len(s)
			} else {
				nb += i
			}
		}
		if np < i && np != len(s) {
			if np = strings.IndexByte(s[i:], '%'); np < 0 {
				np = len(s)
			} else {
				np += i
			}
		}
		j := min(nb, np)
		vw.b = append(vw.b, s[i:j]...)
		if j == len(s) {
			break
		}
		if k, n, ok := unescape(s[j:], &b); ok {
			vw.esc = append(vw.esc, escape{v: len(vw.b), vn: k, o: j, on: n})
			vw.b = append(vw.b, b[:k]...)
			i = j + n
			continue
		}
		vw.b = append(vw.b, s[j])
		i = j + 1
	}
}

// text returns the offset in the text of view byte x (of the escape it
// comes from); x = len(vw.b) maps to the text's end.
func (vw *view) text(x int) int {
	i := sort.Search(len(vw.esc), func(i int) bool { return vw.esc[i].v > x }) - 1
	if i < 0 {
		return x
	}
	e := vw.esc[i]
	if x < e.v+e.vn {
		return e.o
	}
	return e.o + e.on + x - e.v - e.vn
}

// at returns the first view byte whose text offset is t or more.
func (vw *view) at(t int) int {
	i := sort.Search(len(vw.esc), func(i int) bool { return vw.esc[i].o >= t }) - 1
	if i < 0 {
		return t
	}
	e := vw.esc[i]
	if t < e.o+e.on {
		return e.v + e.vn
	}
	return e.v + e.vn + t - e.o - e.on
}

// decodeView returns s with its escapes decoded.
func decodeView(s string) string {
	if !hasEscape(s) {
		return s
	}
	var vw view
	vw.build(s)
	return string(vw.b)
}
