package normalize

import (
	"fmt"
	"sync"
	"time"
)

// This file chooses, once per process, the code that scanString reads
// blocks of 64 bytes with: stringBlocksAVX2 where the build has it, the CPU
// has AVX2 and it measures faster on this machine than the word-at-a-time
// reference (blockMasks), else the reference. A CPU's name does not say
// which is faster: the VMs of issue 40 call theirs "AMD EPYC", and there
// the AVX2 kernel hub had before ran 10× slower than the reference (see
// scan_amd64.s). So the two are timed on a fixed string of tool output,
// alternately, the fastest of a few runs each (tens of microseconds in
// all), and AVX2 runs only when it won.

// ScanKernel says which code reads JSON strings in this process and why
// (hub version --verbose prints it).
type ScanKernel struct {
	// Name is "avx2" (stringBlocksAVX2) or "words" (eight bytes at a time,
	// the portable reference).
	Name string
	// Reason is why there was no choice to make; empty when Name was
	// chosen by the calibration.
	Reason string
	// AVX2 and Words are the calibration's times to scan its string of
	// Bytes bytes once, the fastest of Runs runs of each; zero when there
	// was no choice.
	AVX2, Words time.Duration
	Bytes, Runs int
	// Took is how long choosing took, the calibration included.
	Took time.Duration
}

// String says which kernel runs and why, in one line.
func (k ScanKernel) String() string {
	if k.Reason != "" {
		return k.Name + " (" + k.Reason + ")"
	}
	return fmt.Sprintf("%s (calibrated in %v: %d bytes of code text in %v with AVX2, %v a word at a time, fastest of %d runs each)",
		k.Name, k.Took.Round(time.Microsecond), k.Bytes, k.AVX2, k.Words, k.Runs)
}

// Kernel returns the scan code of this process, choosing it on the first
// call (or the first scan of a long string). Safe for concurrent use.
func Kernel() ScanKernel {
	chosen.once.Do(choose)
	return chosen.k
}

var chosen struct {
	once sync.Once
	avx2 bool
	k    ScanKernel
}

// useAVX2 reports whether scanBlocks uses stringBlocksAVX2 in this process.
func useAVX2() bool {
	chosen.once.Do(choose)
	return chosen.avx2
}

// Calibration: calRounds timed runs of each kernel on calBytes of code
// text, after one untimed run of each.
const (
	calBytes  = 2048
	calRounds = 7
)

func choose() {
	t0 := time.Now()
	chosen.k = ScanKernel{Name: "words", Reason: noAVX2}
	if hasAVX2 {
		chosen.avx2, chosen.k = calibrate(calibrationString(calBytes), calRounds)
	}
	chosen.k.Took = time.Since(t0)
}

// calibrate times scanning line (a JSON string, from its opening quote)
// with each kernel, alternately, rounds times each, and chooses AVX2 when
// its fastest run beat the reference's. A kernel whose answer differs from
// the reference's is never chosen.
func calibrate(line []byte, rounds int) (avx2 bool, k ScanKernel) {
	end, n, esc, ok := scanStringWith(line, 1, kernelWords)
	aEnd, aN, aEsc, aOK := scanStringWith(line, 1, kernelAVX2)
	if !ok || aEnd != end || aN != n || aEsc != esc || aOK != ok {
		return false, ScanKernel{Name: "words", Reason: "the AVX2 kernel disagreed with the reference on the calibration string"}
	}
	k.AVX2, k.Words = scanTime(line, kernelAVX2, kernelWords, rounds)
	avx2 = k.AVX2 < k.Words
	k.Name, k.Bytes, k.Runs = "words", len(line), rounds
	if avx2 {
		k.Name = "avx2"
	}
	return avx2, k
}

// scanTime returns the fastest of rounds scans of line (a JSON string,
// from its opening quote) with kernel a and with kernel b, timed
// alternately (each round swaps which goes first), after an untimed scan
// of each. The fastest run is the one the load interrupted least.
func scanTime(line []byte, a, b kernel, rounds int) (ta, tb time.Duration) {
	ta, tb = time.Hour, time.Hour
	for r := -1; r < rounds; r++ {
		for s := range 2 {
			k := a
			if (r+s)%2 != 0 {
				k = b
			}
			t0 := time.Now()
			scanStringWith(line, 1, k)
			d := time.Since(t0)
			switch {
			case r < 0: // warming up
			case k == a:
				ta = min(ta, d)
			default:
				tb = min(tb, d)
			}
		}
	}
	return ta, tb
}

// calibrationSnippet is a few lines of Go source as JSON escapes them in a
// tool output: an escape every ~12 bytes, as in hubtest/benchgen's "code"
// text (~14).
const calibrationSnippet = `func (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n` +
	`\tif err := s.check(r); err != nil {\n\t\thttp.Error(w, \"bad request\", 400)\n\t\treturn\n\t}\n` +
	`\tpath := strings.TrimPrefix(r.URL.Path, \"/api/\")\n\tlog.Printf(\"%s %s\\n\", r.Method, path)\n}\n\n`

// calibrationString returns a JSON string (quotes included) of about size
// bytes of calibrationSnippet, repeated.
func calibrationString(size int) []byte {
	b := make([]byte, 0, size+len(calibrationSnippet)+2)
	b = append(b, '"')
	for len(b) < size {
		b = append(b, calibrationSnippet...)
	}
	return append(b, '"')
}
