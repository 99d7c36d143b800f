package normalize

import "strings"

// JoinLines joins lines with " | " into at most limit bytes: when they do not
// fit, each line is cut (see Shorten) to an equal share, so that one long
// line (a minified source line in a stack trace, a progress bar) does not
// push the others — often the error itself, which comes last — out of the
// message.
func JoinLines(lines []string, limit int) string {
	s := strings.Join(lines, " | ")
	if len(s) <= limit || len(lines) == 0 {
		return s
	}
	each := max((limit-len(" | ")*(len(lines)-1))/len(lines)-len("…"), 1)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = Shorten(l, each)
	}
	return Shorten(strings.Join(out, " | "), limit)
}
