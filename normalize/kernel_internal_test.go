package normalize

import (
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
)

// toolOutput returns a JSON string (quotes included) of about size bytes
// of tool output shaped as hubtest/benchgen's texts: an escape every
// ~every bytes.
func toolOutput(size, every int) []byte {
	r := rand.New(rand.NewPCG(11, 12))
	escs := []string{`\n`, `\t`, `\"`, `\\`}
	var sb strings.Builder
	sb.WriteString(`"`)
	for sb.Len() < size {
		sb.WriteString(strings.Repeat("x", r.IntN(2*every-2)))
		sb.WriteString(escs[r.IntN(len(escs))])
	}
	sb.WriteString(`"`)
	return []byte(sb.String())
}

// TestKernelNotSlower checks that the kernel this process chose is not
// slower than the other one on fixed tool outputs (64 KiB of code text
// and of log text): the fastest of 15 scans of each, alternated, within a
// generous margin (1.5×), and three tries, so that a busy machine does not
// fail it. It compares the two kernels, not a time with a bound.
func TestKernelNotSlower(t *testing.T) {
	k := Kernel()
	t.Logf("Kernel() = %v", k)
	if !hasAVX2 {
		if k.Name != "words" || k.Reason != noAVX2 {
			t.Fatalf("Kernel() = %+v without AVX2, want words (%s)", k, noAVX2)
		}
		t.Skip("one kernel here: nothing to compare")
	}
	chosen, other := kernelWords, kernelAVX2
	switch k.Name {
	case "avx2":
		chosen, other = kernelAVX2, kernelWords
	case "words":
	default:
		t.Fatalf("Kernel().Name = %q, want avx2 or words", k.Name)
	}
	if useAVX2() != (chosen == kernelAVX2) {
		t.Fatalf("useAVX2() = %v, but Kernel() = %v", useAVX2(), k)
	}
	const margin = 1.5
	for _, shape := range []struct {
		name  string
		every int
	}{{"code", 14}, {"logs", 65}} {
		line := toolOutput(64<<10, shape.every)
		for try := 1; ; try++ {
			tc, to := scanTime(line, chosen, other, 15)
			if float64(tc) <= margin*float64(to) {
				t.Logf("%s: %v %v, %v %v", shape.name, chosen, tc, other, to)
				break
			}
			if try == 3 {
				t.Fatalf("%s text: the chosen kernel %v took %v, %v took %v (fastest of 15, 3 tries): more than %.1f× slower",
					shape.name, chosen, tc, other, to, margin)
			}
		}
	}
}

// TestKernelVEXOnly checks that every instruction of the AVX2 kernel that
// names a vector register is VEX-encoded (its mnemonic starts with V): a
// legacy-SSE one while the upper halves of the YMM registers are dirty is
// what made the kernel before this one 10× slower than the portable code
// (issue 40). The Go assembler writes MOVQ AX, X8, for one, as SSE.
func TestKernelVEXOnly(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("scan_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	vec := regexp.MustCompile(`\b[XY]\d+\b`)
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSuffix(strings.TrimSpace(line), `\`)
		if j := strings.Index(line, "//"); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || strings.HasSuffix(f[0], ":") || f[0] == "DATA" || f[0] == "GLOBL" || f[0] == "TEXT" {
			continue
		}
		if vec.MatchString(strings.Join(f[1:], " ")) {
			n++
			if !strings.HasPrefix(f[0], "V") {
				t.Errorf("scan_amd64.s:%d: %s: a legacy-SSE instruction on a vector register", i+1, strings.Join(f, " "))
			}
		}
	}
	if n < 20 {
		t.Fatalf("scan_amd64.s: %d vector instructions found; the check reads the file wrong", n)
	}
}
