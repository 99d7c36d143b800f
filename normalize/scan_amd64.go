//go:build !purego

package normalize

import "golang.org/x/sys/cpu"

// wide reports whether scanBlocks reads blocks with AVX2 (blockMasksAVX2);
// else it uses the word-at-a-time code of scan.go. Tests set it to check
// both.
var wide = cpu.X86.HasAVX2

// blockMasksAVX2 returns, for the 64 bytes at p, the bit masks (bit k for
// byte k) of '"', of '\\', of the bytes below 0x20, of the bytes that may
// not follow an escape's backslash (all but " \ / b f n r t u), and of 'u'.
//
//go:noescape
func blockMasksAVX2(p *byte) (quote, backslash, ctrl, notEsc, u uint64)
