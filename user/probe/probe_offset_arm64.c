// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Choosing a function's probe offset on arm64.  A uprobe's instruction is
 * either simulated (the kernel computes its effect: b, bl, b.cond, cbz,
 * cbnz, tbz, tbnz, adr, adrp, br, blr, ret), single-stepped out of line
 * (everything "steppable"), or rejected, and then the uprobe cannot be
 * registered at all.  The classes follow arch/arm64/kernel/probes/
 * decode-insn.c (arm_probe_decode_insn(), aarch64_insn_is_steppable()) and
 * the encodings of arch/arm64/include/asm/insn.h, from the raw word;
 * capstone only prints the instruction.
 *
 * The probe moves past leading instructions with no effect the probe could
 * see (nop, bti: landing pads, no-ops once executed; cmp, cmn, tst: flags
 * only) to a simulated one, as on x86.  paciasp is not among them: it signs
 * lr, and at +4 the return address would carry a PAC.  The typical glibc
 * entry, stp x29, x30, [sp, #-N]!, is single-stepped at +0.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "a64insn.h"
#include "probe_offset.h"

/*
 * Only no-ops and flag-only compares are moved past here (register writes
 * are not: see docs/arm64.md), and compilers open a function with one or
 * two of them at most.
 */
#define A64_MAX_SKIP 16

/* A64_IS as the kernel's insn.h: the short name keeps the encoding tables readable */
#define IS A64_IS

/* HINT #imm, as (insn & 0xFE0): the kernel's AARCH64_INSN_HINT_* */
enum {
	HINT_NOP = 0x000,
	HINT_XPACLRI = 0x0E0,
	HINT_PACIA_1716 = 0x100,
	HINT_PACIB_1716 = 0x140,
	HINT_PACIAZ = 0x300,
	HINT_PACIASP = 0x320,
	HINT_PACIBZ = 0x340,
	HINT_PACIBSP = 0x360,
	HINT_BTI = 0x400,
	HINT_BTIC = 0x440,
	HINT_BTIJ = 0x480,
	HINT_BTIJC = 0x4C0,
};

/* the hints aarch64_insn_is_steppable_hint() lets through; any other hint is rejected */
static bool steppable_hint(uint32_t i)
{
	switch (i & 0xFE0) {
	case HINT_NOP:
	case HINT_XPACLRI:
	case HINT_PACIA_1716:
	case HINT_PACIB_1716:
	case HINT_PACIAZ:
	case HINT_PACIASP:
	case HINT_PACIBZ:
	case HINT_PACIBSP:
	case HINT_BTI:
	case HINT_BTIC:
	case HINT_BTIJ:
	case HINT_BTIJC:
		return true;
	}
	return false;
}

/* every branch aarch64_insn_is_branch() names, with the pointer-authenticated forms */
static bool a64_branch(uint32_t i)
{
	return a64_b_bl(i) || a64_bcond(i) || a64_cb(i) || a64_tb(i) || a64_br_blr_ret(i) ||
	       a64_ret_auth(i) || a64_br_auth(i) || a64_blr_auth(i);
}

/* mrs's bits 20..5 naming DAIF (op0 3, op1 3, CRn 4, CRm 2, op2 1): the one read not stepped */
#define A64_MRS_DAIF_SYSREG 0xDA11

static bool steppable(uint32_t i)
{
	/* op0 = 101x: branches, exception generation, system instructions */
	if (IS(i, 0x1C000000, 0x14000000)) {
		if (a64_branch(i) || IS(i, 0xFFF8F01F, 0xD500401F) ||	/* msr (immediate) */
		    IS(i, 0xFFF00000, 0xD5100000) ||			/* msr (register) */
		    IS(i, 0xFF000000, 0xD4000000) ||			/* svc, brk, ... */
		    IS(i, 0xFFFFFFFF, 0xD69F03E0) || IS(i, 0xFFFFFBFF, 0xD69F0BFF)) /* eret */
			return false;
		if (IS(i, 0xFFF00000, 0xD5300000))			/* mrs */
			return ((i >> 5) & 0xFFFF) != A64_MRS_DAIF_SYSREG;
		if (a64_hint(i))
			return steppable_hint(i);
		return true;
	}
	/*
	 * PC-relative literals would be read from the XOL slot (ldr, ldrsw, prfm
	 * literal; adr, adrp); exclusives (ldxr/stxr...) never complete there
	 */
	if (IS(i, 0xBF000000, 0x18000000) || IS(i, 0xFF000000, 0x98000000) ||
	    IS(i, 0xFF000000, 0xD8000000) || a64_adr_adrp(i) ||
	    IS(i, 0x3F400000, 0x08400000) || IS(i, 0x3F400000, 0x08000000))
		return false;
	return true;
}

enum a64_class {
	A64_STEPPED,
	A64_SIMULATED,
	A64_REJECTED,
};

/* arm_probe_decode_insn(): INSN_GOOD, INSN_GOOD_NO_SLOT, INSN_REJECTED */
static enum a64_class classify(uint32_t i)
{
	if (steppable(i))
		return A64_STEPPED;
	if (a64_bcond(i) || a64_cb(i) || a64_tb(i) || a64_adr_adrp(i) || a64_b_bl(i) ||
	    a64_br_blr_ret(i))
		return A64_SIMULATED;
	/* ldr (literal) too: simulated for uprobes only before 6.12 and its stable backports */
	return A64_REJECTED;
}

/* what a leading instruction the probe may move past does; NULL if it may not */
static const char *skippable(uint32_t i)
{
	/* bti, bti c, bti j, bti jc: HINT_BTI with bits 6-7 set or not */
	if (a64_hint(i) && ((i & 0xFE0) == HINT_NOP || a64_bti(i)))
		return "no effect";
	/* subs/adds (shifted, extended register or immediate) and ands into xzr: cmp, cmn, tst */
	if ((i & 0x1F) == 0x1F &&
	    (IS(i, 0x3F200000, 0x2B000000) || IS(i, 0x3F200000, 0x2B200000) ||
	     IS(i, 0x3F800000, 0x31000000) || IS(i, 0x7F800000, 0x72000000) ||
	     IS(i, 0x7F200000, 0x6A000000)))
		return "flags only";
	return NULL;
}

struct a64_text {
	csh cs;
	cs_insn *insn;
	bool ok;
};

/* the hints a function starts with, by name: capstone 4 prints them as "hint #0x19" */
static const char *hint_name(uint32_t i)
{
	switch (i & 0xFE0) {
	case HINT_NOP: return "nop";
	case HINT_PACIAZ: return "paciaz";
	case HINT_PACIASP: return "paciasp";
	case HINT_PACIBZ: return "pacibz";
	case HINT_PACIBSP: return "pacibsp";
	case HINT_BTI: return "bti";
	case HINT_BTIC: return "bti c";
	case HINT_BTIJ: return "bti j";
	case HINT_BTIJC: return "bti jc";
	}
	return NULL;
}

/* "stp x29, x30, [sp, #-0x40]!" */
static void text_of(struct a64_text *t, const uint8_t *code, uint64_t pc, char *buf,
			   size_t len)
{
	const uint8_t *p = code;
	size_t left = A64_INSN;
	uint32_t i = a64_word(code);

	if (a64_hint(i) && hint_name(i))
		snprintf(buf, len, "%s", hint_name(i));
	else if (t->ok && cs_disasm_iter(t->cs, &p, &left, &pc, t->insn))
		snprintf(buf, len, "%.15s%s%.78s", t->insn->mnemonic,
			 t->insn->op_str[0] ? " " : "", t->insn->op_str);
	else
		snprintf(buf, len, ".inst 0x%08x", a64_word(code));
}

static const char *const class_names[] = {
	[A64_STEPPED] = "single-stepped",
	[A64_SIMULATED] = "simulated",
	[A64_REJECTED] = "rejected by the kernel: neither steppable nor simulated",
};

/* the candidate offset, 1, or the final decision at +0, 0 */
static int find_candidate(struct a64_text *t, const uint8_t *code, size_t len, uint64_t addr,
			  struct probe_offset *po)
{
	char text[96], past[PROBE_OFFSET_REASON_LEN] = "";
	size_t pos, n = 0;
	enum a64_class cls;
	const char *kind;
	uint32_t i;

	for (pos = 0; pos + A64_INSN <= len; pos += A64_INSN) {
		i = a64_word(code + pos);
		cls = classify(i);
		text_of(t, code + pos, addr + pos, text, sizeof(text));
		if (cls == A64_SIMULATED && pos) {
			probe_offset__decide(po, pos, "+%zu: past %s to %s (simulated)", pos, past,
					     text);
			return 1;
		}
		kind = cls == A64_SIMULATED ? NULL : skippable(i);
		if (!pos && !kind)
			return probe_offset__decide(po, 0, "+0: %s (%s)", text, class_names[cls]);
		if (!kind)
			return probe_offset__decide(po, 0, "+0: past %s comes %s, not simulated",
						    past, text);
		if (pos + A64_INSN > A64_MAX_SKIP)
			break;
		n += (size_t)snprintf(past + n, sizeof(past) - n, "%s%s (%s)", pos ? ", " : "",
				      text, kind);
		if (n >= sizeof(past))
			n = sizeof(past) - 1;
	}
	return probe_offset__decide(po, 0, "+0: no simulated instruction within the first %d bytes",
				    A64_MAX_SKIP);
}

/*
 * As on x86: moving to +off is only invisible if no branch enters the
 * function at +4..+off; an indirect jump (br, a jump table) could go anywhere.
 */
static bool entries_clear(struct a64_text *t, const uint8_t *code, size_t len, uint64_t addr,
			  struct probe_offset *po)
{
	uint64_t off = po->offset, to;
	char text[96];
	size_t pos;
	uint32_t i;

	for (pos = 0; pos + A64_INSN <= len; pos += A64_INSN) {
		i = a64_word(code + pos);
		/* br, braa...: a jump table or a computed goto */
		if (a64_br(i) || a64_br_auth(i)) {
			text_of(t, code + pos, addr + pos, text, sizeof(text));
			probe_offset__decide(po, 0, "+0: indirect jump in function (%s at +%zu), "
					     "cannot prove", text, pos);
			return false;
		}
		if (!a64_branch_target(i, addr + pos, &to) || to <= addr || to > addr + off)
			continue;
		text_of(t, code + pos, addr + pos, text, sizeof(text));
		probe_offset__decide(po, 0, "+0: %s at +%zu enters the function at +%llu, "
				     "cannot skip to +%llu", text, pos,
				     (unsigned long long)(to - addr), (unsigned long long)off);
		return false;
	}
	return true;
}

int probe_offset__choose_arm64(const uint8_t *code, size_t len, uint64_t addr,
			       struct probe_offset *po)
{
	struct a64_text t = { 0 };

	if (!po || (!code && len))
		return -EINVAL;
	/* arguments stay where the ABI has them: nothing that writes a register is skipped here */
	probe_offset__init(po);
	if (!probe_offset__size_checkable(len, po))
		return 0;
	if (len % A64_INSN || addr % A64_INSN)
		return probe_offset__decide(po, 0, "+0: %zu bytes at %#llx are not whole A64 "
					    "instructions", len, (unsigned long long)addr);
	/* without capstone the decision stands; only the text is the raw word */
	t.ok = cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &t.cs) == CS_ERR_OK;
	if (t.ok) {
		t.insn = cs_malloc(t.cs);
		if (!t.insn)
			cs_close(&t.cs);
		t.ok = t.insn != NULL;
	}
	if (find_candidate(&t, code, len, addr, po) > 0)
		entries_clear(&t, code, len, addr, po);
	switch (classify(a64_word(code + po->offset))) {
	case A64_SIMULATED:
		po->insn_class = PROBE_INSN_EMULATED;
		break;
	case A64_STEPPED:
		po->insn_class = PROBE_INSN_STEPPED;
		break;
	default:
		po->insn_class = PROBE_INSN_REJECTED;
	}
	if (t.ok) {
		cs_free(t.insn, 1);
		cs_close(&t.cs);
	}
	return 0;
}
