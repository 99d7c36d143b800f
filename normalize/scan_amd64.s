//go:build !purego

#include "textflag.h"

// Every vector instruction here is VEX-encoded (TestKernelVEXOnly), and
// VZEROUPPER ends each call before Go's code (which uses SSE) runs again.
// A legacy-SSE instruction run while the upper halves of the YMM registers
// are dirty costs an AVX/SSE state transition: on the AMD EPYC VMs of
// issue 40 about 110 ns of CPU time each (~280 cycles). The kernel before
// this one broadcast its constants with MOVQ AX, X8 (which the Go
// assembler writes as legacy SSE: 66 REX.W 0F 6E) after loading the block
// into Y0 and Y1, five times a 64-byte block, and ran 10× slower than the
// portable code. Here the constants are broadcast from memory, once per
// call, and a call reads every block of a string up to the one that needs
// Go's attention, its state in registers.

// The bytes the kernel compares with, broadcast to every byte of a YMM
// register: '"', '\\', 0x1f (the largest control byte), 0x0f (a nibble),
// 'u'.
DATA consts<>+0x00(SB)/1, $0x22
DATA consts<>+0x01(SB)/1, $0x5c
DATA consts<>+0x02(SB)/1, $0x1f
DATA consts<>+0x03(SB)/1, $0x0f
DATA consts<>+0x04(SB)/1, $0x75
GLOBL consts<>(SB), RODATA|NOPTR, $8

// The odd bit positions, for escapes (scan.go).
DATA odd<>+0x00(SB)/8, $0xaaaaaaaaaaaaaaaa
GLOBL odd<>(SB), RODATA|NOPTR, $8

// Nibble tables for the bytes that may follow an escape's backslash,
// " \ / b f n r t u (0x22 0x5c 0x2f 0x62 0x66 0x6e 0x72 0x74 0x75): a byte
// is one of them iff escLo[its low nibble] & escHi[its high nibble] != 0.
// Bit 0: high nibble 2 (low 2, f); bit 1: 5 (c); bit 2: 6 (2, 6, e);
// bit 3: 7 (2, 4, 5). Each table is repeated for both 128-bit lanes.
// simpleLo is escLo without u (low 5 of bit 3): the escapes that take
// two bytes, which the loop below goes past.
DATA escLo<>+0x00(SB)/8, $0x00040808000d0000
DATA escLo<>+0x08(SB)/8, $0x0104000200000000
DATA escLo<>+0x10(SB)/8, $0x00040808000d0000
DATA escLo<>+0x18(SB)/8, $0x0104000200000000
GLOBL escLo<>(SB), RODATA|NOPTR, $32

DATA simpleLo<>+0x00(SB)/8, $0x00040008000d0000
DATA simpleLo<>+0x08(SB)/8, $0x0104000200000000
DATA simpleLo<>+0x10(SB)/8, $0x00040008000d0000
DATA simpleLo<>+0x18(SB)/8, $0x0104000200000000
GLOBL simpleLo<>(SB), RODATA|NOPTR, $32

DATA escHi<>+0x00(SB)/8, $0x0804020000010000
DATA escHi<>+0x08(SB)/8, $0
DATA escHi<>+0x10(SB)/8, $0x0804020000010000
DATA escHi<>+0x18(SB)/8, $0
GLOBL escHi<>(SB), RODATA|NOPTR, $32

// MASK sets dst to the 64-bit mask of the bytes set in Y2 (the block's
// first 32 bytes) and Y3 (its last 32); AX is clobbered.
#define MASK(dst) \
	VPMOVMSKB Y2, AX \
	VPMOVMSKB Y3, dst \
	SHLQ $32, dst \
	ORQ AX, dst

// NOTIN sets Y2 and Y3 to the bytes of Y0 and Y1 that are not in the
// nibble tables lo and Y7 (escHi); Y4 and Y5 are clobbered.
#define NOTIN(lo) \
	VPAND Y0, Y11, Y2 \
	VPSHUFB Y2, lo, Y2 \
	VPSRLW $4, Y0, Y4 \
	VPAND Y4, Y11, Y4 \
	VPSHUFB Y4, Y7, Y4 \
	VPAND Y2, Y4, Y2 \
	VPCMPEQB Y2, Y13, Y2 \
	VPAND Y1, Y11, Y3 \
	VPSHUFB Y3, lo, Y3 \
	VPSRLW $4, Y1, Y5 \
	VPAND Y5, Y11, Y5 \
	VPSHUFB Y5, Y7, Y5 \
	VPAND Y3, Y5, Y3 \
	VPCMPEQB Y3, Y13, Y3

// func stringBlocksAVX2(p *byte, n int, s *avx2State, stop *masks) (blocks int)
//
// Reads the n >= 1 blocks of 64 bytes at p, inside a JSON string, while
// each is one Go need not look at: no closing quote, no byte below 0x20,
// and no escape but the two-byte ones. It returns how many it read, and
// updates s for them as scanBlocks would (the carry of escapes, the
// escapes' count and mask). When it stops before the n-th, the block it
// stopped at is left to Go, with its masks in *stop.
TEXT ·stringBlocksAVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ s+16(FP), DI
	MOVQ 0(DI), R8   // carry
	MOVQ 8(DI), R9   // removed
	MOVQ 16(DI), R10 // escBits
	XORQ BX, BX      // blocks read
	TESTQ CX, CX
	JLE out

	VPBROADCASTB consts<>+0x00(SB), Y8  // '"'
	VPBROADCASTB consts<>+0x01(SB), Y9  // '\\'
	VPBROADCASTB consts<>+0x02(SB), Y10 // 0x1f
	VPBROADCASTB consts<>+0x03(SB), Y11 // 0x0f
	VMOVDQU simpleLo<>(SB), Y6
	VMOVDQU escHi<>(SB), Y7
	VPXOR Y13, Y13, Y13

loop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1

	VPCMPEQB Y0, Y8, Y2
	VPCMPEQB Y1, Y8, Y3
	MASK(R11) // quote

	VPCMPEQB Y0, Y9, Y2
	VPCMPEQB Y1, Y9, Y3
	MASK(R12) // backslash

	// Below 0x20: max(b, 0x1f) == 0x1f.
	VPMAXUB Y0, Y10, Y2
	VPCMPEQB Y2, Y10, Y2
	VPMAXUB Y1, Y10, Y3
	VPCMPEQB Y3, Y10, Y3
	MASK(R13) // ctrl

	NOTIN(Y6)
	MASK(DI) // not the second byte of a two-byte escape

	// escapes (scan.go), with carry R8.
	ANDNQ R12, R8, AX  // potential = backslash &^ carry
	MOVQ AX, DX
	SHLQ $1, DX
	ORQ odd<>(SB), DX
	SUBQ AX, DX
	XORQ odd<>(SB), DX // code
	MOVQ R12, AX
	ORQ R8, AX
	XORQ DX, AX        // escaped = code ^ (backslash | carry)
	ANDQ R12, DX       // escape = code & backslash

	// Go looks at this block if it has a closing quote, a control byte,
	// or an escape that is not two bytes long (\u, or a bad one).
	ANDQ AX, DI
	ANDNQ R11, AX, R11 // closing = quote &^ escaped
	ORQ R11, R13
	ORQ DI, R13
	JNZ stop

	MOVQ DX, R8
	SHRQ $63, R8
	POPCNTQ DX, AX
	ADDQ AX, R9
	ORQ DX, R10
	ADDQ $64, SI
	INCQ BX
	DECQ CX
	JNZ loop
	JMP done

stop:
	// The masks of the block in Y0 and Y1, for Go.
	MOVQ stop+24(FP), DI
	VPCMPEQB Y0, Y8, Y2
	VPCMPEQB Y1, Y8, Y3
	MASK(DX)
	MOVQ DX, 0(DI)
	VPCMPEQB Y0, Y9, Y2
	VPCMPEQB Y1, Y9, Y3
	MASK(DX)
	MOVQ DX, 8(DI)
	VPMAXUB Y0, Y10, Y2
	VPCMPEQB Y2, Y10, Y2
	VPMAXUB Y1, Y10, Y3
	VPCMPEQB Y3, Y10, Y3
	MASK(DX)
	MOVQ DX, 16(DI)
	VMOVDQU escLo<>(SB), Y12
	NOTIN(Y12)
	MASK(DX)
	MOVQ DX, 24(DI)
	VPBROADCASTB consts<>+0x04(SB), Y12 // 'u'
	VPCMPEQB Y0, Y12, Y2
	VPCMPEQB Y1, Y12, Y3
	MASK(DX)
	MOVQ DX, 32(DI)

done:
	VZEROUPPER

out:
	MOVQ s+16(FP), DI
	MOVQ R8, 0(DI)
	MOVQ R9, 8(DI)
	MOVQ R10, 16(DI)
	MOVQ BX, blocks+32(FP)
	RET
