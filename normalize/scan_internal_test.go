package normalize

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// refString is scanString a byte at a time, the plain way: the reference
// the wide scan is checked against. The length is gjson's unescaping.
func refString(b []byte, i int) (end, n int, esc, ok bool) {
	start := i
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, len(gjson.ParseBytes(b[start-1 : i+1]).String()), esc, true
		case c < 0x20:
			return i, 0, false, false
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, 0, false, false
				}
				i += 6
			default:
				return i, 0, false, false
			}
		default:
			i++
		}
	}
	return i, 0, false, false
}

// checkString compares scanString, with and without AVX2, with refString
// on the string that content starts (after an opening quote), at several
// offsets in the first 64 bytes (so that a byte meets many positions of a
// block).
func checkString(t *testing.T, content []byte) {
	t.Helper()
	for shift := 0; shift < 64; shift += 1 + shift/8 {
		b := append(append(make([]byte, shift), '"'), content...)
		rend, rn, resc, rok := refString(b, shift+1)
		for _, avx2 := range []bool{false, wide} {
			end, n, esc, ok := scanStringWith(b, shift+1, avx2)
			if ok != rok || ok && (end != rend || n != rn || esc != resc) {
				t.Fatalf("scanString(%q at %d, AVX2 %v) = end %d, n %d, esc %v, ok %v; want %d, %d, %v, %v",
					content, shift, avx2, end, n, esc, ok, rend, rn, resc, rok)
			}
		}
	}
}

var stringCases = []string{
	`"`, ``, `abc"`, `abc`, `a\"b"`, `a\\"`, `a\\\"b"`, `\\\\\\\\"`, `\u00e9"`, `\ud83d\ude00"`, `\ud800x"`,
	`\ud83d\u0041"`, `\udc00\ud83d"`, `\u12"`, `\u12g4"`, `\x"`, "a\x01b\"", "a\tb\"", `\/\b\f\n\r\t"`,
	"\xff\xfe\"", `é日本"`, strings.Repeat(`abcdefg\"`, 20) + `"`, strings.Repeat(`\\`, 63) + `"`,
	strings.Repeat(`x`, 63) + `\"` + strings.Repeat(`y`, 70) + `"`, strings.Repeat(`x`, 62) + `\u0041"`,
	strings.Repeat(`x`, 58) + `\ud83d\ude00` + strings.Repeat(`z`, 80) + `"`, strings.Repeat("x", 200),
	strings.Repeat("x", 63) + "\\", strings.Repeat("x", 130) + "\x1f" + `"`, strings.Repeat("x", 100) + `"` + "\x00",
	strings.Repeat(`\\`, 100) + `\"` + `"`, strings.Repeat(`ab\n\"é\u00e9\ud83d\ude00\ud800x\\`, 20) + `"`,
}

func TestScanString(t *testing.T) {
	t.Parallel()
	for _, c := range stringCases {
		checkString(t, []byte(c))
	}
	// Random strings of the bytes that matter, in runs.
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{`a`, `\`, `"`, `\\`, `\"`, `\n`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "\x01", `\u`, `é`, `0`}
	for range 3000 {
		var sb strings.Builder
		for range r.IntN(300) {
			if r.IntN(3) == 0 {
				sb.WriteString(strings.Repeat("x", r.IntN(70)))
			}
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		checkString(t, []byte(sb.String()))
	}
}

func FuzzScanString(f *testing.F) {
	for _, c := range stringCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, content []byte) { checkString(t, content) })
}

// TestMasks checks the word-at-a-time tests and the escape arithmetic
// against byte loops, on random blocks of the bytes that matter.
func TestMasks(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	bytes := []byte{'"', '\\', 0, 0x1f, 0x20, 'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff, 0x9f, 'u', 'b', 'f', 'n', 'r', 't', '/', 'v', 'U', 'e', 0xf5}
	var carry uint64
	refCarry := false
	for range 20000 {
		var blk [64]byte
		for i := range blk {
			blk[i] = bytes[r.IntN(len(bytes))]
			if r.IntN(4) == 0 {
				blk[i] = byte(r.Uint32())
			}
		}
		quote, backslash, anyCtrl := blockMasks(blk[:])
		ctrl := ctrlBits(blk[:])
		var wq, wb, wc, wEscaped, wEscape uint64
		for i, c := range blk {
			bit := uint64(1) << i
			if c == '"' {
				wq |= bit
			}
			if c == '\\' {
				wb |= bit
			}
			if c < 0x20 {
				wc |= bit
			}
			switch {
			case refCarry:
				wEscaped |= bit
				refCarry = false
			case c == '\\':
				wEscape |= bit
				refCarry = true
			}
		}
		escaped, escape := escapes(backslash, &carry)
		if wide {
			q, bs, c, notEsc, u := blockMasksAVX2(&blk[0])
			var wNotEsc, wU uint64
			for i, c := range blk {
				if escClass[c] == escBad {
					wNotEsc |= 1 << i
				}
				if c == 'u' {
					wU |= 1 << i
				}
			}
			if q != wq || bs != wb || c != wc || notEsc != wNotEsc || u != wU {
				t.Fatalf("block %q: AVX2 masks %x %x %x %x %x, want %x %x %x %x %x", blk, q, bs, c, notEsc, u, wq, wb, wc, wNotEsc, wU)
			}
		}
		if quote != wq || backslash != wb || ctrl != wc || anyCtrl != (wc != 0) {
			t.Fatalf("block %q: masks %x %x %x %v, want %x %x %x", blk, quote, backslash, ctrl, anyCtrl, wq, wb, wc)
		}
		if escaped != wEscaped || escape != wEscape || (carry == 1) != refCarry {
			t.Fatalf("block %q: escaped %x escape %x carry %d, want %x %x %v", blk, escaped, escape, carry, wEscaped, wEscape, refCarry)
		}
	}
	// Each byte value at each position of a word of 'a's.
	for k := range 8 {
		for v := range 256 {
			w := [8]byte{'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a'}
			w[k] = byte(v)
			word := binary.LittleEndian.Uint64(w[:])
			for _, c := range []struct {
				got  uint64
				want bool
			}{{gather(ctrlMask(word)), v < 0x20}, {gather(eqMask(word, '"'*ones)), v == '"'}, {gather(eqMask(word, '\\'*ones)), v == '\\'}} {
				if want := uint64(0); c.want && c.got != 1<<k || !c.want && c.got != want {
					t.Fatalf("byte %#x at %d: mask %#x, want it set: %v", v, k, c.got, c.want)
				}
			}
		}
	}
}

// BenchmarkValid checks 1 MiB lines of tool output: "code" has an escape
// every ~14 bytes, "logs" every ~65, as hubtest/benchgen writes them;
// "avx2" and "words" are the two ways scanBlocks reads a block.
func BenchmarkValid(b *testing.B) {
	for _, shape := range []struct {
		name  string
		every int
	}{{"code", 14}, {"logs", 65}} {
		r := rand.New(rand.NewPCG(5, 6))
		var sb strings.Builder
		sb.WriteString(`{"type":"tool_result","content":"`)
		escs := []string{`\n`, `\t`, `\"`, `\\`}
		for sb.Len() < 1<<20 {
			sb.WriteString(strings.Repeat("x", r.IntN(2*shape.every-2)))
			sb.WriteString(escs[r.IntN(len(escs))])
		}
		sb.WriteString(`"}`)
		line := []byte(sb.String())
		for _, avx2 := range []bool{false, true} {
			if avx2 && !wide {
				continue // no AVX2 here
			}
			name := shape.name + "/words"
			if avx2 {
				name = shape.name + "/avx2"
			}
			b.Run(name, func(b *testing.B) {
				defer func(w bool) { wide = w }(wide)
				wide = avx2
				var x Index
				b.SetBytes(int64(len(line)))
				for b.Loop() {
					if !x.Valid(line) {
						b.Fatal("invalid")
					}
				}
			})
		}
	}
}
