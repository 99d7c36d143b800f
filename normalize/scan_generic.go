//go:build !amd64 || purego

package normalize

// wide is false: scanBlocks reads blocks a word at a time (scan.go).
var wide = false

func blockMasksAVX2(*byte) (quote, backslash, ctrl, notEsc, u uint64) {
	panic("normalize: no AVX2 code on this architecture")
}
