/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A64 instruction words, decoded from the raw 32 bits the way the kernel
 * decodes them (arch/arm64/include/asm/insn.h's __AARCH64_INSN_FUNCS(name,
 * mask, value)): fixed width, so a function is its words in order.  Shared
 * by the probe-offset choice, the search for return instructions and the
 * PLT reader.
 */
#ifndef CULPERT_A64INSN_H
#define CULPERT_A64INSN_H

#include <stdbool.h>
#include <stdint.h>

#define A64_INSN 4

#define A64_IS(insn, mask, value) (((insn) & (mask)) == (value))

static inline uint32_t a64_word(const uint8_t *c)
{
	return (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
}

static inline int64_t a64_sext(uint32_t v, int bits)
{
	return (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

static inline bool a64_b_bl(uint32_t i)		{ return A64_IS(i, 0x7C000000, 0x14000000); }
static inline bool a64_b(uint32_t i)		{ return A64_IS(i, 0xFC000000, 0x14000000); }
static inline bool a64_bl(uint32_t i)		{ return A64_IS(i, 0xFC000000, 0x94000000); }
static inline bool a64_bcond(uint32_t i)	{ return A64_IS(i, 0xFF000010, 0x54000000); }
static inline bool a64_cb(uint32_t i)		{ return A64_IS(i, 0x7E000000, 0x34000000); }
static inline bool a64_tb(uint32_t i)		{ return A64_IS(i, 0x7E000000, 0x36000000); }
static inline bool a64_adr_adrp(uint32_t i)	{ return A64_IS(i, 0x1F000000, 0x10000000); }
static inline bool a64_adrp(uint32_t i)		{ return A64_IS(i, 0x9F000000, 0x90000000); }
static inline bool a64_hint(uint32_t i)		{ return A64_IS(i, 0xFFFFF01F, 0xD503201F); }
/* ret Xn (ret alone is ret x30), br Xn, blr Xn: no pointer authentication */
static inline bool a64_ret(uint32_t i)		{ return A64_IS(i, 0xFFFFFC1F, 0xD65F0000); }
static inline bool a64_br(uint32_t i)		{ return A64_IS(i, 0xFFFFFC1F, 0xD61F0000); }
static inline bool a64_blr(uint32_t i)		{ return A64_IS(i, 0xFFFFFC1F, 0xD63F0000); }
static inline bool a64_br_blr_ret(uint32_t i)	{ return a64_br(i) || a64_blr(i) || a64_ret(i); }
/* retaa, retab; braa, brab, braaz, brabz: the kernel rejects probes on them */
static inline bool a64_ret_auth(uint32_t i)	{ return A64_IS(i, 0xFFFFFBFF, 0xD65F0BFF); }
static inline bool a64_br_auth(uint32_t i)	{ return A64_IS(i, 0xFEFFF800, 0xD61F0800); }
static inline bool a64_blr_auth(uint32_t i)	{ return A64_IS(i, 0xFEFFF800, 0xD63F0800); }
/* ldr Xt, [Xn, #imm] (unsigned offset, 64-bit): a GOT slot read after an adrp */
static inline bool a64_ldr64_imm(uint32_t i)	{ return A64_IS(i, 0xFFC00000, 0xF9400000); }

/* bti, bti c, bti j, bti jc: a landing pad, no effect once executed */
static inline bool a64_bti(uint32_t i)		{ return a64_hint(i) && (i & 0xF20) == 0x400; }

/* the register a branch through a register (br, blr, ret) or an ldr's base reads */
static inline unsigned int a64_rn(uint32_t i)	{ return (i >> 5) & 0x1F; }
/* the register an adrp or an ldr writes */
static inline unsigned int a64_rd(uint32_t i)	{ return i & 0x1F; }

/* a direct branch's target (b, bl, b.cond, cbz/cbnz, tbz/tbnz); false for anything else */
static inline bool a64_branch_target(uint32_t i, uint64_t pc, uint64_t *to)
{
	if (a64_b_bl(i))
		*to = pc + (uint64_t)(a64_sext(i & 0x3FFFFFF, 26) * 4);
	else if (a64_bcond(i) || a64_cb(i))
		*to = pc + (uint64_t)(a64_sext((i >> 5) & 0x7FFFF, 19) * 4);
	else if (a64_tb(i))
		*to = pc + (uint64_t)(a64_sext((i >> 5) & 0x3FFF, 14) * 4);
	else
		return false;
	return true;
}

/* the 4 KiB page an adrp at pc names */
static inline uint64_t a64_adrp_page(uint32_t i, uint64_t pc)
{
	uint32_t imm = ((i >> 5) & 0x7FFFF) << 2 | ((i >> 29) & 0x3);

	return (pc & ~0xFFFULL) + (uint64_t)(a64_sext(imm, 21) * 4096);
}

/* the byte offset of an ldr (unsigned offset, 64-bit) */
static inline uint64_t a64_ldr64_offset(uint32_t i)
{
	return (uint64_t)((i >> 10) & 0xFFF) * 8;
}

/*
 * adrp xA, PAGE at pc then ldr xB, [xA, #OFF]: how a PLT entry, and code
 * built with -fno-plt, read a GOT slot before br or blr xB.  The slot's
 * address and xB; false for any other pair.
 */
static inline bool a64_got_load(uint32_t adrp, uint32_t ldr, uint64_t pc, uint64_t *slot,
				unsigned int *reg)
{
	if (!a64_adrp(adrp) || !a64_ldr64_imm(ldr) || a64_rn(ldr) != a64_rd(adrp))
		return false;
	*slot = a64_adrp_page(adrp, pc) + a64_ldr64_offset(ldr);
	*reg = a64_rd(ldr);
	return true;
}

#endif /* CULPERT_A64INSN_H */
