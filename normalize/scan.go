package normalize

import (
	"encoding/binary"
	"math/bits"
)

// This file scans the content of a JSON string 64 bytes at a time: it finds
// the closing quote, checks the escapes and control bytes, and counts the
// string's unescaped length in one pass, with a branch per 64-byte block
// rather than per escape. Agents' tool outputs are megabytes of source code
// with a JSON escape every ~14 bytes; a byte loop takes a mispredicted branch
// at nearly each of them.
//
// A block is read as eight 64-bit words. In each word, the bytes equal to
// '"' or '\\', or below 0x20, are found with exact word-at-a-time tests
// (eqMask, ctrlMask), and their high bits gathered into one bit per byte
// (gather), giving a 64-bit mask per class with bit k for byte k. Which
// quotes and backslashes are escaped follows from the backslash mask by
// carry arithmetic (escapes, the method of simdjson's json_escape_scanner:
// Langdale and Lemire, "Parsing Gigabytes of JSON per Second", VLDB Journal
// 28(6), 2019, section 3.1.1). Only \u escapes, rare in tool output, are
// looked at one by one.
//
// That is the portable code, and the reference. On amd64, stringBlocksAVX2
// (scan_amd64.s) finds the same masks with 32-byte vectors and goes past
// the blocks that need nothing but their escapes counted; a process uses
// it where it measures faster (kernel.go).

const (
	ones  = 0x0101010101010101 // 0x01 in each byte
	highs = 0x8080808080808080 // the high bit of each byte
	low7  = 0x7f7f7f7f7f7f7f7f // the low seven bits of each byte
	odd   = 0xaaaaaaaaaaaaaaaa // the odd bit positions
)

// eqMask returns the high bit of each byte of w that equals the byte of
// rep (c*ones), and nothing else: ((x&low7)+low7)|x has a byte's high bit
// set iff the byte of x is not zero, with no carry between bytes.
func eqMask(w, rep uint64) uint64 {
	x := w ^ rep
	return ^(((x & low7) + low7) | x) & highs
}

// ctrlMask returns the high bit of each byte of w below 0x20: a byte's low
// seven bits plus 0x60 reach its high bit iff they are at least 0x20.
func ctrlMask(w uint64) uint64 {
	return ^(((w & low7) + 0x6060606060606060) | w) & highs
}

// gather moves the high bit of byte k of m (m has no other bits) to bit k
// of the result: each byte's bit lands in the top byte of the product at a
// position of its own, and no two partial products overlap.
func gather(m uint64) uint64 {
	return ((m >> 7) * 0x0102040810204080) >> 56
}

// blockMasks returns, for the 64 bytes b[:64], the bit masks of '"', of
// '\\', and whether any byte is below 0x20 (anyCtrl: its positions are
// rarely needed, see ctrlBits).
func blockMasks(b []byte) (quote, backslash uint64, anyCtrl bool) {
	_ = b[63]
	var ctrl uint64
	for k := 0; k < 64; k += 8 {
		w := binary.LittleEndian.Uint64(b[k:])
		quote |= gather(eqMask(w, '"'*ones)) << k
		backslash |= gather(eqMask(w, '\\'*ones)) << k
		ctrl |= ctrlMask(w)
	}
	return quote, backslash, ctrl != 0
}

// ctrlBits returns the bit mask of the bytes of b[:64] below 0x20.
func ctrlBits(b []byte) (m uint64) {
	_ = b[63]
	for k := 0; k < 64; k += 8 {
		m |= gather(ctrlMask(binary.LittleEndian.Uint64(b[k:]))) << k
	}
	return m
}

// escapes finds, from the backslash mask of a block, the bytes that an
// escape's backslash makes literal (escaped: the n of \n, the second \ of
// \\) and the backslashes that begin an escape (escape). carry is 1 when
// the block's first byte is escaped by the last backslash of the block
// before; it is updated for the next block. In a run of backslashes every
// other one begins an escape, counting from the run's start: subtracting
// the run's starts from the odd bits tells the runs that start on an odd
// byte from those that start on an even one.
func escapes(backslash uint64, carry *uint64) (escaped, escape uint64) {
	if backslash == 0 {
		escaped, *carry = *carry, 0
		return escaped, 0
	}
	potential := backslash &^ *carry
	code := (((potential << 1) | odd) - potential) ^ odd
	escaped = code ^ (backslash | *carry)
	escape = code & backslash
	*carry = escape >> 63
	return escaped, escape
}

// escClass classifies the byte after an escape's backslash: 0 for
// " \ / b f n r t, escU for u, escBad for the rest.
var escClass = func() (t [256]uint8) {
	for c := range t {
		t[c] = escBad
	}
	for _, c := range []byte(`"\/bfnrt`) {
		t[c] = 0
	}
	t['u'] = escU
	return t
}()

const (
	escBad = 1
	escU   = 2
)

// shortString is how many bytes of a string scanString reads a byte at a
// time before it goes on 64 at a time: keys and ids end sooner.
const shortString = 24

// scanString reads the string whose content starts at b[i] (after its
// opening quote). It returns the index after the closing quote, the
// length of the string once unescaped as gjson unescapes it (a bad
// surrogate is U+FFFD's three bytes), whether it has escapes, and whether
// it is a valid JSON string (closed, no byte below 0x20, every escape one
// of \" \\ \/ \b \f \n \r \t \uXXXX). Like gjson, it does not check UTF-8.
func scanString(b []byte, i int) (end, n int, esc, ok bool) {
	return scanStringWith(b, i, kernelAuto)
}

// kernel is the code scanBlocks reads blocks with.
type kernel uint8

const (
	kernelAuto  kernel = iota // the one this process chose (see Kernel)
	kernelWords               // a word at a time (blockMasks): the reference
	kernelAVX2                // stringBlocksAVX2
)

// masks are the bit masks (bit k for byte k) of a 64-byte block: its '"',
// its '\\', its bytes below 0x20, the bytes that may not follow an
// escape's backslash (all but " \ / b f n r t u), and its 'u'. The AVX2
// kernel finds all five; the word-at-a-time code the first three, and the
// last two for the escaped bytes only (escClasses).
type masks struct {
	quote, backslash, ctrl, notEsc, u uint64
}

// avx2State is what scanBlocks carries from one block to the next, as
// stringBlocksAVX2 reads and updates it (the order of the fields is the
// kernel's).
type avx2State struct {
	carry   uint64 // 1 when the next block's first byte is escaped
	removed int    // bytes that unescaping removes, one per escape so far
	escBits uint64 // every escape's backslash seen, for hasEsc
}

// scanStringWith is scanString with the kernel k (tests check each).
func scanStringWith(b []byte, i int, k kernel) (end, n int, esc, ok bool) {
	start := i
	removed := 0 // bytes that unescaping removes
	for lim := min(len(b), i+shortString); i < lim; {
		c := b[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, i - start - removed, esc, true
		case c < 0x20:
			return i, 0, esc, false
		}
		w, l, good := escapeAt(b, i)
		if !good {
			return i, 0, esc, false
		}
		esc = true
		removed += w - l
		i += w
	}
	return scanBlocks(b, start, i, removed, esc, k)
}

// escapeAt checks the escape whose backslash is b[i] and returns its
// length in b and once unescaped (see escapeLen).
func escapeAt(b []byte, i int) (w, l int, ok bool) {
	if i+1 >= len(b) {
		return 0, 0, false
	}
	switch escClass[b[i+1]] {
	case 0:
		return 2, 1, true
	case escU:
		if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
			return 0, 0, false
		}
		w, l = escapeLen(View(b[i:min(len(b), i+12)]))
		return w, l, true
	}
	return 0, 0, false
}

// scanBlocks goes on with scanString from b[i] (not inside an escape), 64
// bytes at a time; the last, shorter block is read from a copy padded with
// zero bytes, which end the string as invalid unless a quote closes it
// first. With AVX2, stringBlocksAVX2 reads the blocks that need nothing
// more than counting their escapes, and the loop below the others: the
// last, and those with a \u escape or an error.
func scanBlocks(b []byte, start, i, removed int, esc bool, k kernel) (end, n int, hasEsc, ok bool) {
	avx2 := k == kernelAVX2 || k == kernelAuto && useAVX2()
	var (
		carry   uint64 // the next block's first byte is escaped
		uSkip   = i    // \u escapes before this index were read already
		pad     [64]byte
		escBits uint64 // every escape's backslash seen, for hasEsc
	)
	for i < len(b) {
		blk := b[i:]
		if len(blk) < 64 {
			copy(pad[:], blk) // once: it is the last block
			blk = pad[:]
		}
		var m masks
		if avx2 {
			st := avx2State{carry, removed, escBits}
			whole := len(blk) >> 6
			read := stringBlocksAVX2(&blk[0], whole, &st, &m)
			carry, removed, escBits = st.carry, st.removed, st.escBits
			if i += read << 6; read == whole {
				continue
			}
		} else {
			var anyCtrl bool
			m.quote, m.backslash, anyCtrl = blockMasks(blk)
			if anyCtrl {
				m.ctrl = ctrlBits(blk)
			}
		}
		escaped, escape := escapes(m.backslash, &carry)
		inside := ^uint64(0) // the bytes of the block before the closing quote
		closing := m.quote &^ escaped
		if closing != 0 {
			inside = uint64(1)<<bits.TrailingZeros64(closing) - 1
		}
		if m.ctrl&inside != 0 {
			return i + bits.TrailingZeros64(m.ctrl&inside), 0, false, false
		}
		escape &= inside
		escBits |= escape
		removed += bits.OnesCount64(escape)
		escaped &= inside
		notEsc, u := m.notEsc, m.u
		if !avx2 {
			notEsc, u = escClasses(blk, escaped)
		}
		if escaped&notEsc != 0 {
			return i, 0, false, false
		}
		// Each \u escape: its hex digits, and the bytes it unescapes to
		// beyond the one counted for its backslash.
		for us := escaped & u; us != 0; us &= us - 1 {
			at := i + bits.TrailingZeros64(us) - 1 // its backslash
			if at < uSkip {
				continue // the second half of a surrogate pair
			}
			w, l, good := escapeAt(b, at)
			if !good {
				return at, 0, false, false
			}
			removed += w - l - w/6 // w/6 backslashes counted above
			uSkip = at + w
		}
		if closing != 0 {
			end = i + bits.TrailingZeros64(closing) + 1
			return end, end - 1 - start - removed, esc || escBits != 0, true
		}
		i += 64
	}
	return len(b), 0, false, false
}

// escClasses returns, of the bytes of blk[:64] that m marks, those that may
// not follow an escape's backslash and those that are 'u': what
// stringBlocksAVX2 gives for all the bytes, for the escaped ones only.
func escClasses(blk []byte, m uint64) (notEsc, u uint64) {
	for ; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		switch escClass[blk[k&63]] {
		case escBad:
			notEsc |= 1 << k
		case escU:
			u |= 1 << k
		}
	}
	return notEsc, u
}
