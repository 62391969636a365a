// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>

#include "elfobj.h"
#include "fpcheck.h"
#include "objcache.h"
#include "plt.h"
#include "procmaps.h"

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

/* a prologue's first bytes: the window examine() reads at a function's start */
#define PROLOGUE_BYTES_X86	16
#define PROLOGUE_BYTES_A64	24
/*
 * A function that calls the allocator may be shrink-wrapped (GCC's default
 * at -O2): an early return first, its frame set up after that test and
 * before its calls.  Its window is wider; a function built without frame
 * pointers never sets %rbp from %rsp (or x29 from sp) anywhere.
 */
#define SHRINK_WRAP_BYTES	64

static void examine_window(struct elfobj *obj, uint64_t vaddr, struct fp_evidence *ev,
			   size_t window)
{
	unsigned char code[SHRINK_WRAP_BYTES];
	long got = elfobj__read(obj, vaddr, code, window);

	if (got < 4)
		return;
	ev->functions++;
	ev->with_fp += ev->a64 ? a64_sets_up_fp(code, got) : sets_up_fp(code, got);
}

static void examine(struct elfobj *obj, uint64_t vaddr, struct fp_evidence *ev)
{
	examine_window(obj, vaddr, ev, ev->a64 ? PROLOGUE_BYTES_A64 : PROLOGUE_BYTES_X86);
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

/* no evidence yet, for the object's architecture */
static void evidence_init(struct elfobj *obj, struct fp_evidence *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->a64 = elfobj__machine(obj) == EM_AARCH64;
	ev->fp_reg = ev->a64 ? "x29" : "%rbp";
}

int fpcheck(struct elfobj *obj, struct fp_evidence *ev)
{
	const struct elf_symbol *syms;
	size_t n, i;

	evidence_init(obj, ev);
	/* a stripped object's exported symbols are a few entry points: the unwind table knows all */
	if (!elfobj__has_symtab(obj)) {
		examine_fde_starts(obj, ev);
		if (ev->functions)
			return 0;
	}
	syms = elfobj__symbols(obj, &n);
	for (i = 0; i < n && ev->functions < FPCHECK_MAX_FUNCS; i++) {
		/*
		 * Tiny functions (thunks, getters) have no frame either way; a
		 * .cold part runs in its function's frame, set up by its hot part.
		 */
		if (syms[i].size < 16 || (i && syms[i].value == syms[i - 1].value) ||
		    runtime_glue(syms[i].name) || strstr(syms[i].name, ".cold"))
			continue;
		examine(obj, syms[i].value, ev);
	}
	return ev->functions ? 0 : -ENOENT;
}

bool fp_evidence__has_fp(const struct fp_evidence *ev)
{
	return ev->functions && ev->with_fp * 2 >= ev->functions;
}

/*
 * What a program allocates through: the C API, operator new, Rust's
 * allocator shims.  A function named here is not judged as a caller: its
 * callers are.  Rust's std-built __rdl_* (no frame pointers, like all of
 * the prebuilt std) tail-call malloc and realloc; only their over-aligned
 * path calls posix_memalign with a frame of their own, where an FP stack
 * loses the shim's caller (__rust_alloc, itself a shim).
 */
static const char *const alloc_names[] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
	"valloc", "pvalloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "__rust_alloc", "__rust_alloc_zeroed",
	"__rust_realloc", "__rdl_alloc", "__rdl_alloc_zeroed", "__rdl_realloc",
};

struct examine_ctx {
	struct elfobj *obj;
	struct fp_evidence *ev;
};

static void examine_caller(void *ctx, uint64_t vaddr)
{
	struct examine_ctx *c = ctx;

	examine_window(c->obj, vaddr, c->ev, SHRINK_WRAP_BYTES);
}

/*
 * The same evidence over the functions of obj that call the allocator
 * (malloc & co., operator new, Rust's __rust_alloc, through the PLT, the
 * GOT or directly): a frame-pointer walk from the allocator passes through
 * them first.  0 or -errno.
 */
static int fpcheck_allocating(struct elfobj *obj, struct fp_evidence *ev)
{
	struct examine_ctx c = { obj, ev };
	int n;

	evidence_init(obj, ev);
	n = plt__callers(obj, alloc_names, sizeof(alloc_names) / sizeof(alloc_names[0]),
			 FPCHECK_MAX_FUNCS, examine_caller, &c);
	return n < 0 ? n : 0;
}

/* three in four of those keep one: the walk through them holds (allocating code is never leaf) */
static bool fp_evidence__all_fp(const struct fp_evidence *ev)
{
	/* three in four: the prologue test misses a few (a push scheduled late, hand-written code) */
	return !ev->functions || ev->with_fp * 4 >= ev->functions * 3;
}

/*
 * A library the stacks of allocations pass through: it calls the
 * allocator and is not one.  The unwinder's runtime (libgcc_s) allocates
 * only while an exception unwinds, not on a program's allocation paths.
 */
static bool allocates(struct elfobj *obj)
{
	return !elfobj__sym_by_name(obj, "malloc") && !elfobj__sym_by_name(obj, "_Unwind_RaiseException");
}

/* a library's functions that call the allocator and that the executable can call: by name */
#define FPCHECK_MAX_ENTRIES 512
struct entry_ctx {
	struct elfobj *obj;
	const char *names[FPCHECK_MAX_ENTRIES];
	size_t n;
};

static void collect_entry(void *ctx, uint64_t vaddr)
{
	struct entry_ctx *c = ctx;
	const struct elf_symbol *sym = elfobj__sym_by_addr(c->obj, vaddr);

	if (sym && sym->name && sym->bind != STB_LOCAL && c->n < FPCHECK_MAX_ENTRIES)
		c->names[c->n++] = sym->name;
}

static void count_call(void *ctx, uint64_t vaddr)
{
	(void)vaddr;
	++*(size_t *)ctx;
}

/*
 * Is library `obj` on an allocation path of the executable: does the
 * executable call (through its PLT or GOT) one of the library's exported
 * functions that call the allocator?  A library only other libraries call
 * into, or whose allocating code the executable does not call, is not
 * judged (docs/unwind.md, "Choosing").
 */
static bool on_alloc_path(struct elfobj *exe, struct elfobj *obj)
{
	struct entry_ctx c = { .obj = obj };
	size_t calls = 0;

	if (!exe || plt__callers(obj, alloc_names, sizeof(alloc_names) / sizeof(alloc_names[0]),
				 FPCHECK_MAX_FUNCS, collect_entry, &c) <= 0 || !c.n)
		return false;
	return plt__callers(exe, c.names, c.n, 1, count_call, &calls) > 0 && calls;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

int fp_path_judge(const struct procmaps *maps, struct objcache *objs, const struct procmap *exe,
		  char *why, size_t len)
{
	struct fp_evidence ev;
	size_t i, j, libs = 0, fns = 0, with = 0, skipped = 0, off_path = 0;
	struct elfobj *exe_obj = objcache__get(objs, exe);
	const char *reg = exe_obj && elfobj__machine(exe_obj) == EM_AARCH64 ? "x29" : "%rbp";
	char names[256] = "";
	size_t used = 0;

	for (i = 0; i < maps->n; i++) {
		const struct procmap *m = &maps->v[i];
		struct elfobj *obj;
		bool seen = false;

		if (!m->executable || !procmap__is_file(m))
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = maps->v[j].executable && !strcmp(maps->v[j].path, m->path);
		obj = seen ? NULL : objcache__get(objs, m);
		if (!obj)
			continue;
		if (m != exe && strcmp(m->path, exe->path) &&
		    (!allocates(obj) || !on_alloc_path(exe_obj, obj))) {
			/* named when built without frame pointers: the walk would have met them */
			if (fpcheck(obj, &ev) || fp_evidence__has_fp(&ev))
				continue;
			/* an allocator itself (libc) is no caller of one */
			if (elfobj__sym_by_name(obj, "malloc"))
				continue;
			off_path++;
			if (used + strlen(base_name(m->path)) + 2 < sizeof(names)) {
				used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
							 used ? ", " : "", base_name(m->path));
				skipped++;
			}
			continue;
		}
		if (fpcheck_allocating(obj, &ev) || !ev.functions)
			continue;
		if (!fp_evidence__all_fp(&ev)) {
			snprintf(why, len, "%s calls the allocator from code built without frame pointers "
				 "(%zu of %zu such functions set up %s)", m->path, ev.with_fp,
				 ev.functions, ev.fp_reg);
			return 0;
		}
		libs += strcmp(m->path, exe->path) != 0;
		fns += ev.functions;
		with += ev.with_fp;
	}
	if (!fns)
		used = (size_t)snprintf(why, len, "%s keeps frame pointers, and no code of it or its "
					"libraries calls the allocator through an import to judge "
					"beyond that", exe->path);
	else
		used = (size_t)snprintf(why, len, "%s and %zu libraries keep frame pointers where "
					"they call the allocator (%zu of %zu such functions set up "
					"%s)", exe->path, libs, with, fns, reg);
	if (off_path && used < len)
		snprintf(why + used, len - used, "; %zu %s built without frame pointers %s on no "
			 "allocation path (they call no allocator, or the executable calls none of "
			 "their functions that do): %s%s", off_path,
			 off_path == 1 ? "library" : "libraries", off_path == 1 ? "is" : "are", names,
			 skipped < off_path ? ", ..." : "");
	return 1;
}
