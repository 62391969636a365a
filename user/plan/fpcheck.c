// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <string.h>

#include "elfobj.h"
#include "fpcheck.h"

/* enough functions for a clear majority without reading a whole large binary */
#define FPCHECK_MAX_FUNCS 4000

/* start-up code the C runtime links into every program, built its own way */
static bool runtime_glue(const char *name)
{
	static const char *const glue[] = {
		"_start", "_init", "_fini", "deregister_tm_clones", "register_tm_clones",
		"__do_global_dtors_aux", "frame_dummy", "__libc_csu_init", "__libc_csu_fini",
	};
	size_t i;

	for (i = 0; i < sizeof(glue) / sizeof(glue[0]); i++)
		if (!strcmp(name, glue[i]))
			return true;
	return false;
}

/*
 * push %rbp (55), then mov %rsp,%rbp (48 89 e5) within the first bytes:
 * the compiler may schedule an argument move or an endbr64 around them.
 */
static bool sets_up_fp(const unsigned char *c, long n)
{
	static const unsigned char mov_rsp_rbp[] = { 0x48, 0x89, 0xe5 };
	const unsigned char *push = memchr(c, 0x55, (size_t)n);
	long i;

	if (!push)
		return false;
	for (i = push - c + 1; i + 3 <= n; i++)
		if (!memcmp(c + i, mov_rsp_rbp, sizeof(mov_rsp_rbp)))
			return true;
	return false;
}

/*
 * arm64: a frame record stored (stp x29, x30, [sp, #N] with or without
 * writeback), then x29 pointed at it (add x29, sp, #N; mov x29, sp is
 * #0), within the first instructions: paciasp, bti or a sub sp may come
 * first.  -fomit-frame-pointer still saves x29 and x30 as a pair, but never
 * sets x29.
 */
static bool a64_sets_up_fp(const unsigned char *c, long n)
{
	bool record = false;
	uint32_t i;
	long at;

	for (at = 0; at + 4 <= n; at += 4) {
		i = (uint32_t)c[at] | (uint32_t)c[at + 1] << 8 | (uint32_t)c[at + 2] << 16 |
		    (uint32_t)c[at + 3] << 24;
		if ((i & 0xFE407FFF) == 0xA8007BFD && (i & 0x01800000))	/* stp x29, x30, [sp..] */
			record = true;
		else if (record && (i & 0xFFC003FF) == 0x910003FD)		/* add x29, sp, #N */
			return true;
	}
	return false;
}

static void examine(struct elfobj *obj, uint64_t vaddr, struct fp_evidence *ev)
{
	unsigned char code[24];
	long got = elfobj__read(obj, vaddr, code, ev->a64 ? 24 : 16);

	if (got < 4)
		return;
	ev->functions++;
	ev->with_fp += ev->a64 ? a64_sets_up_fp(code, got) : sets_up_fp(code, got);
}

static int32_t le32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/*
 * A stripped object still says where its functions start: the binary
 * search table of .eh_frame_hdr (PT_GNU_EH_FRAME), pairs of (start, FDE)
 * as 4-byte offsets from the header in the encoding every GNU linker
 * writes (DW_EH_PE_datarel | DW_EH_PE_sdata4).  Samples spread over it.
 */
static void examine_fde_starts(struct elfobj *obj, struct fp_evidence *ev)
{
	unsigned char hdr[12], pair[8];
	uint64_t hdr_vaddr;
	size_t count, step, i;

	if (elfobj__eh_frame_hdr(obj, &hdr_vaddr) ||
	    elfobj__read(obj, hdr_vaddr, hdr, sizeof(hdr)) != sizeof(hdr))
		return;
	/* version 1; eh_frame_ptr as sdata4 (0x1b); count as udata4 (0x03); table 0x3b */
	if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
		return;
	count = (uint32_t)le32(hdr + 8);
	step = count > FPCHECK_MAX_FUNCS ? count / FPCHECK_MAX_FUNCS : 1;
	for (i = 0; i < count && ev->functions < FPCHECK_MAX_FUNCS; i += step) {
		if (elfobj__read(obj, hdr_vaddr + 12 + i * 8, pair, sizeof(pair)) != sizeof(pair))
			return;
		examine(obj, hdr_vaddr + (uint64_t)(int64_t)le32(pair), ev);
	}
}

int fpcheck(struct elfobj *obj, struct fp_evidence *ev)
{
	const struct elf_symbol *syms;
	GElf_Ehdr ehdr;
	size_t n, i;

	memset(ev, 0, sizeof(*ev));
	ev->a64 = gelf_getehdr(elfobj__elf(obj), &ehdr) && ehdr.e_machine == EM_AARCH64;
	ev->fp_reg = ev->a64 ? "x29" : "%rbp";
	/* a stripped object's exported symbols are a few entry points: the unwind table knows all */
	if (!elfobj__has_symtab(obj)) {
		examine_fde_starts(obj, ev);
		if (ev->functions)
			return 0;
	}
	syms = elfobj__symbols(obj, &n);
	for (i = 0; i < n && ev->functions < FPCHECK_MAX_FUNCS; i++) {
		/* tiny functions (thunks, getters) have no frame either way */
		if (syms[i].size < 16 || (i && syms[i].value == syms[i - 1].value) ||
		    runtime_glue(syms[i].name))
			continue;
		examine(obj, syms[i].value, ev);
	}
	return ev->functions ? 0 : -ENOENT;
}

bool fp_evidence__has_fp(const struct fp_evidence *ev)
{
	return ev->functions && ev->with_fp * 2 >= ev->functions;
}
