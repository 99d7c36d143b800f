//go:build !purego

package normalize

import "golang.org/x/sys/cpu"

// hasAVX2 reports whether this CPU can run stringBlocksAVX2 (AVX2, and
// BMI1's ANDN and POPCNT, which every AVX2 CPU has). Whether scanBlocks
// uses it is decided by measuring (see Kernel).
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasBMI1 && cpu.X86.HasPOPCNT

// noAVX2 says why there is no AVX2 kernel to choose, when hasAVX2 is false.
const noAVX2 = "the CPU has no AVX2"

// stringBlocksAVX2 reads the n >= 1 blocks of 64 bytes at p, inside a JSON
// string, for as long as each is one that scanBlocks need not look at: no
// closing quote, no byte below 0x20, and no escape but the two-byte ones
// (\uXXXX and bad escapes stop it). It returns how many blocks it read and
// updates s for them as scanBlocks does. When it stops at a block before
// the n-th, it leaves that block to scanBlocks, with its masks in *stop.
// One call reads every block of a tool output up to its end: the
// constants are loaded once, and the state stays in registers.
//
//go:noescape
func stringBlocksAVX2(p *byte, n int, s *avx2State, stop *masks) (blocks int)
