//go:build !amd64 || purego

package normalize

// hasAVX2 is false: there is no assembly in this build, and scanBlocks
// reads blocks a word at a time (scan.go).
const hasAVX2 = false

// noAVX2 says why there is no AVX2 kernel to choose.
const noAVX2 = "no assembly in this build: purego, or not amd64"

func stringBlocksAVX2(*byte, int, *avx2State, *masks) int {
	panic("normalize: no AVX2 code in this build")
}
