//go:build !purego

#include "textflag.h"

// Nibble tables for the bytes that may follow an escape's backslash,
// " \ / b f n r t u (0x22 0x5c 0x2f 0x62 0x66 0x6e 0x72 0x74 0x75): a byte
// is one of them iff escLo[its low nibble] & escHi[its high nibble] != 0.
// Bit 0: high nibble 2 (low 2, f); bit 1: 5 (c); bit 2: 6 (2, 6, e);
// bit 3: 7 (2, 4, 5). Each table is repeated for both 128-bit lanes.
DATA escLo<>+0x00(SB)/8, $0x00040808000d0000
DATA escLo<>+0x08(SB)/8, $0x0104000200000000
DATA escLo<>+0x10(SB)/8, $0x00040808000d0000
DATA escLo<>+0x18(SB)/8, $0x0104000200000000
GLOBL escLo<>(SB), RODATA|NOPTR, $32

DATA escHi<>+0x00(SB)/8, $0x0804020000010000
DATA escHi<>+0x08(SB)/8, $0
DATA escHi<>+0x10(SB)/8, $0x0804020000010000
DATA escHi<>+0x18(SB)/8, $0
GLOBL escHi<>(SB), RODATA|NOPTR, $32

// BITS stores at dst the 64-bit mask of the bytes set in Y2 (the block's
// first 32 bytes) and Y3 (its last 32).
#define BITS(dst) \
	VPMOVMSKB Y2, AX \
	VPMOVMSKB Y3, DX \
	SHLQ $32, DX \
	ORQ AX, DX \
	MOVQ DX, dst

// func blockMasksAVX2(p *byte) (quote, backslash, ctrl, notEsc, u uint64)
TEXT ·blockMasksAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), SI
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1

	MOVQ $0x2222222222222222, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	VPCMPEQB Y0, Y8, Y2
	VPCMPEQB Y1, Y8, Y3
	BITS(quote+8(FP))

	MOVQ $0x5c5c5c5c5c5c5c5c, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	VPCMPEQB Y0, Y8, Y2
	VPCMPEQB Y1, Y8, Y3
	BITS(backslash+16(FP))

	// Below 0x20: max(b, 0x1f) == 0x1f.
	MOVQ $0x1f1f1f1f1f1f1f1f, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	VPMAXUB Y0, Y8, Y2
	VPCMPEQB Y2, Y8, Y2
	VPMAXUB Y1, Y8, Y3
	VPCMPEQB Y3, Y8, Y3
	BITS(ctrl+24(FP))

	// Not a byte that may follow an escape's backslash (tables above).
	MOVQ $0x0f0f0f0f0f0f0f0f, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	VMOVDQU escLo<>(SB), Y6
	VMOVDQU escHi<>(SB), Y7
	VPXOR Y9, Y9, Y9
	VPAND Y0, Y8, Y2
	VPSHUFB Y2, Y6, Y2
	VPSRLW $4, Y0, Y4
	VPAND Y4, Y8, Y4
	VPSHUFB Y4, Y7, Y4
	VPAND Y2, Y4, Y2
	VPCMPEQB Y2, Y9, Y2
	VPAND Y1, Y8, Y3
	VPSHUFB Y3, Y6, Y3
	VPSRLW $4, Y1, Y5
	VPAND Y5, Y8, Y5
	VPSHUFB Y5, Y7, Y5
	VPAND Y3, Y5, Y3
	VPCMPEQB Y3, Y9, Y3
	BITS(notEsc+32(FP))

	MOVQ $0x7575757575757575, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	VPCMPEQB Y0, Y8, Y2
	VPCMPEQB Y1, Y8, Y3
	BITS(u+40(FP))

	VZEROUPPER
	RET
