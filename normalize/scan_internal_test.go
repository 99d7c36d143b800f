package normalize

import (
	"encoding/binary"
	"math/bits"
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

// kernels are the kernels this build and CPU can run, the reference first.
func kernels() []kernel {
	if hasAVX2 {
		return []kernel{kernelWords, kernelAVX2}
	}
	return []kernel{kernelWords}
}

func (k kernel) String() string {
	return [...]string{kernelAuto: "auto", kernelWords: "words", kernelAVX2: "avx2"}[k]
}

// checkString compares scanString, with each kernel, with refString on
// the string that content starts (after an opening quote), at several
// offsets in the first 64 bytes (so that a byte meets many positions of a
// block).
func checkString(t *testing.T, content []byte) {
	t.Helper()
	for shift := 0; shift < 64; shift += 1 + shift/8 {
		b := append(append(make([]byte, shift), '"'), content...)
		rend, rn, resc, rok := refString(b, shift+1)
		for _, k := range kernels() {
			end, n, esc, ok := scanStringWith(b, shift+1, k)
			if ok != rok || ok && (end != rend || n != rn || esc != resc) {
				t.Fatalf("scanString(%q at %d, kernel %v) = end %d, n %d, esc %v, ok %v; want %d, %d, %v, %v",
					content, shift, k, end, n, esc, ok, rend, rn, resc, rok)
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

// refMasks returns the masks of blk[:64], found a byte at a time.
func refMasks(blk []byte) (m masks) {
	for i, c := range blk[:64] {
		bit := uint64(1) << i
		if c == '"' {
			m.quote |= bit
		}
		if c == '\\' {
			m.backslash |= bit
		}
		if c < 0x20 {
			m.ctrl |= bit
		}
		if escClass[c] == escBad {
			m.notEsc |= bit
		}
		if c == 'u' {
			m.u |= bit
		}
	}
	return m
}

// refBlocks is stringBlocksAVX2 a byte at a time (refMasks) and a block at
// a time (escapes), the way scanBlocks reads a block: the reference the
// kernel is checked against.
func refBlocks(p []byte, n int, s *avx2State, stop *masks) int {
	for j := range n {
		m := refMasks(p[64*j:])
		carry := s.carry
		escaped, escape := escapes(m.backslash, &carry)
		if m.quote&^escaped != 0 || m.ctrl != 0 || escaped&(m.notEsc|m.u) != 0 {
			*stop = m
			return j
		}
		s.carry = carry
		s.removed += bits.OnesCount64(escape)
		s.escBits |= escape
	}
	return n
}

// TestStringBlocksAVX2 checks stringBlocksAVX2 against refBlocks on runs
// of 1 to 16 blocks of random tool output: mostly text and two-byte
// escapes, with now and then what makes the kernel stop (a quote, a
// control byte, a \u or bad escape, a random byte) at any position.
func TestStringBlocksAVX2(t *testing.T) {
	t.Parallel()
	if !hasAVX2 {
		t.Skip("no AVX2 kernel here")
	}
	r := rand.New(rand.NewPCG(7, 8))
	common := []string{"x", "y", "uu", `\n`, `\\`, `\"`, `\t`, `\/`, `\\\\`, "\xff", "n", `\b`, `\f`, `\r`}
	rare := []string{`"`, "\x00", "\x1f", `\u00e9`, `\x`, `\U`, "\x7f", "\xdc", `\u`, `\`}
	const maxBlocks = 16
	for trial := range 6000 {
		var sb strings.Builder
		every := 1 + r.IntN(2000) // pieces per rare one, about
		for sb.Len() < 64*maxBlocks+64 {
			if r.IntN(every) == 0 {
				sb.WriteString(rare[r.IntN(len(rare))])
			} else {
				sb.WriteString(common[r.IntN(len(common))])
			}
		}
		buf := []byte(sb.String())
		if trial%8 == 0 {
			buf[r.IntN(64*maxBlocks)] = byte(r.Uint32())
		}
		off, n := r.IntN(64), 1+r.IntN(maxBlocks)
		in := avx2State{carry: uint64(r.IntN(2)), removed: r.IntN(100), escBits: uint64(r.IntN(2)) << 63}
		got, want := in, in
		const canary = 0x5a5a5a5a5a5a5a5a
		gotStop := masks{canary, canary, canary, canary, canary}
		wantStop := gotStop
		gotN := stringBlocksAVX2(&buf[off], n, &got, &gotStop)
		wantN := refBlocks(buf[off:], n, &want, &wantStop)
		if gotN != wantN || got != want || gotStop != wantStop {
			t.Fatalf("stringBlocksAVX2(%q, %d blocks, %+v) = %d, %+v, stop %x; want %d, %+v, stop %x",
				buf[off:off+64*n], n, in, gotN, got, gotStop, wantN, want, wantStop)
		}
	}
}

// FuzzStringBlocks checks stringBlocksAVX2 against refBlocks on the whole
// blocks of any bytes, with any carry in.
func FuzzStringBlocks(f *testing.F) {
	if !hasAVX2 {
		f.Skip("no AVX2 kernel here")
	}
	for _, c := range stringCases {
		f.Add([]byte(strings.Repeat(c, 1+128/len(c+"x"))), false)
	}
	f.Add([]byte(strings.Repeat(`\\`, 64)+`\"`+strings.Repeat("x", 126)), true)
	f.Fuzz(func(t *testing.T, data []byte, carry bool) {
		n := len(data) / 64
		if n == 0 {
			return
		}
		in := avx2State{removed: 7}
		if carry {
			in.carry = 1
		}
		got, want := in, in
		var gotStop, wantStop masks
		gotN := stringBlocksAVX2(&data[0], n, &got, &gotStop)
		wantN := refBlocks(data, n, &want, &wantStop)
		if gotN != wantN || got != want || gotStop != wantStop {
			t.Fatalf("stringBlocksAVX2(%q, %d blocks, %+v) = %d, %+v, stop %x; want %d, %+v, stop %x",
				data, n, in, gotN, got, gotStop, wantN, want, wantStop)
		}
	})
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

// forceKernel makes scanString use k until the returned func is called;
// for benchmarks, which run one at a time.
func forceKernel(k kernel) (restore func()) {
	Kernel()
	was := chosen.avx2
	chosen.avx2 = k == kernelAVX2
	return func() { chosen.avx2 = was }
}

// validLines are BenchmarkValid's lines, 1 MiB each: "code" is a tool
// output with an escape every ~14 bytes, "logs" every ~65, as
// hubtest/benchgen writes them; "short" an array of strings of 25 to 200
// bytes (longer than scanString reads a byte at a time), an escape every
// ~14 bytes.
func validLines() (names []string, lines [][]byte) {
	escs := []string{`\n`, `\t`, `\"`, `\\`}
	for _, shape := range []struct {
		name  string
		every int
	}{{"code", 14}, {"logs", 65}} {
		r := rand.New(rand.NewPCG(5, 6))
		var sb strings.Builder
		sb.WriteString(`{"type":"tool_result","content":"`)
		for sb.Len() < 1<<20 {
			sb.WriteString(strings.Repeat("x", r.IntN(2*shape.every-2)))
			sb.WriteString(escs[r.IntN(len(escs))])
		}
		sb.WriteString(`"}`)
		names, lines = append(names, shape.name), append(lines, []byte(sb.String()))
	}
	r := rand.New(rand.NewPCG(9, 10))
	var sb strings.Builder
	sb.WriteString(`[`)
	for sb.Len() < 1<<20 {
		sb.WriteString(`"`)
		for n := 25 + r.IntN(176); n > 0; {
			k := min(n, r.IntN(26))
			sb.WriteString(strings.Repeat("x", k))
			n -= k
			if n >= 2 {
				sb.WriteString(escs[r.IntN(len(escs))])
				n -= 2
			}
		}
		sb.WriteString(`",`)
	}
	sb.WriteString(`"x"]`)
	return append(names, "short"), append(lines, []byte(sb.String()))
}

// BenchmarkValid checks validLines with each kernel.
func BenchmarkValid(b *testing.B) {
	names, lines := validLines()
	for i, line := range lines {
		for _, k := range kernels() {
			b.Run(names[i]+"/"+k.String(), func(b *testing.B) {
				defer forceKernel(k)()
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
