// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Address lookup without .debug_aranges (LLVM and rustc may omit it, and
 * libdw's dwarf_addrdie needs it): a sorted table of compilation-unit
 * ranges, then per unit a sorted table of its functions, then a walk down
 * the one function's inlined subroutines that contain the address.  Each
 * step is a binary search or a walk of one function's DIEs, never of the
 * whole unit per address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "bsearch.h"
#include "dwarfsym.h"
#include "hashtab.h"
#include "vec.h"

/* DIE nesting walked at most: namespaces and classes, or lexical blocks in a function */
#define MAX_DIE_DEPTH 64

struct pc_range {
	uint64_t lo, hi;		/* [lo, hi) */
	uint64_t ref;			/* unit index (unit table) or DIE offset (function table) */
};

struct dwarf_unit {
	Dwarf_Off die_off;
	struct pc_range *fns;		/* sorted by lo; built on first hit */
	size_t n_fns, cap_fns;
	bool indexed;
};

/* a relative source path joined with its unit's DW_AT_comp_dir, once per path */
struct full_path {
	const char *rel;		/* libdw's string: its address is the key */
	char *full;
};

struct dwarfsym {
	Dwarf *dw;
	struct full_path *paths;
	size_t n_paths, cap_paths;
	struct hashtab path_ht;
	struct dwarf_unit *units;
	size_t n_units, cap_units;
	struct pc_range *ranges;	/* unit ranges, sorted by lo */
	size_t n_ranges, cap_ranges;
	bool loaded;
};

struct dwarfsym *dwarfsym__new(Elf *elf)
{
	struct dwarfsym *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		free(d);
		errno = ENODATA;
		return NULL;
	}
	return d;
}

void dwarfsym__free(struct dwarfsym *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n_units; i++)
		free(d->units[i].fns);
	for (i = 0; i < d->n_paths; i++)
		free(d->paths[i].full);
	free(d->paths);
	hashtab__free(&d->path_ht);
	free(d->units);
	free(d->ranges);
	dwarf_end(d->dw);
	free(d);
}

Dwarf *dwarfsym__dwarf(struct dwarfsym *d)
{
	return d->dw;
}

static int range_cmp(const void *a, const void *b)
{
	const struct pc_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static bool range_starts_by(const void *elem, const void *key)
{
	return ((const struct pc_range *)elem)->lo <= *(const uint64_t *)key;
}

/* the entry of a sorted table that contains addr, or NULL */
static const struct pc_range *range_find(const struct pc_range *v, size_t n, uint64_t addr)
{
	size_t lo = lower_bound(&addr, v, n, sizeof(*v), range_starts_by), k;

	/* ranges may nest (a unit's range around another's function): look back a little */
	for (k = 0; lo > 0 && k < 4; k++) {
		const struct pc_range *r = &v[--lo];

		if (addr < r->hi)
			return r;
	}
	return NULL;
}

/*
 * Each [lo, hi) of die (low/high pc or DW_AT_ranges).  Code of discarded
 * COMDAT copies keeps its DWARF with addresses resolved to 0 or 1 by the
 * linker: those are no code and must not cover the first page.
 */
static int add_ranges(Dwarf_Die *die, uint64_t ref, struct pc_range **v, size_t *n, size_t *cap)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int added = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo <= 1 || hi <= lo)
			continue;
		if (vec_reserve(v, cap, *n + 1, sizeof(**v)))
			return -ENOMEM;
		(*v)[(*n)++] = (struct pc_range){ lo, hi, ref };
		added++;
	}
	return added;
}

static void index_functions(struct dwarf_unit *u, Dwarf_Die *scope, int depth)
{
	Dwarf_Die child;

	if (depth > MAX_DIE_DEPTH || dwarf_child(scope, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			/* its inlined subroutines are walked per address; nested functions are rare */
			if (!dwarf_hasattr(&child, DW_AT_declaration))
				add_ranges(&child, dwarf_dieoffset(&child), &u->fns, &u->n_fns,
					   &u->cap_fns);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			/* C++ and Rust nest functions in namespaces, and in types for methods */
			index_functions(u, &child, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static void index_unit(struct dwarfsym *d, struct dwarf_unit *u)
{
	Dwarf_Die cudie;

	u->indexed = true;
	if (!dwarf_offdie(d->dw, u->die_off, &cudie))
		return;
	index_functions(u, &cudie, 0);
	if (u->n_fns)	/* a unit without functions has no array: qsort() must not see NULL */
		qsort(u->fns, u->n_fns, sizeof(*u->fns), range_cmp);
}

/* one entry per unit; a unit without ranges of its own is covered by its functions' */
static int load_units(struct dwarfsym *d)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie, subdie;
	Dwarf_Half version;
	uint8_t type;
	size_t i;

	d->loaded = true;
	while (dwarf_get_units(d->dw, cu, &next, &version, &type, &cudie, &subdie) == 0) {
		struct dwarf_unit *u;
		int n;

		cu = next;
		if (type != DW_UT_compile)
			continue;
		if (vec_reserve(&d->units, &d->cap_units, d->n_units + 1, sizeof(*d->units)))
			return -ENOMEM;
		u = &d->units[d->n_units];
		memset(u, 0, sizeof(*u));
		u->die_off = dwarf_dieoffset(&cudie);
		n = add_ranges(&cudie, d->n_units, &d->ranges, &d->n_ranges, &d->cap_ranges);
		if (n < 0)
			return n;
		if (!n) {
			index_unit(d, u);
			for (i = 0; i < u->n_fns; i++) {
				if (vec_reserve(&d->ranges, &d->cap_ranges, d->n_ranges + 1,
						sizeof(*d->ranges)))
					return -ENOMEM;
				d->ranges[d->n_ranges++] = (struct pc_range){ u->fns[i].lo,
									      u->fns[i].hi,
									      d->n_units };
			}
		}
		d->n_units++;
	}
	qsort(d->ranges, d->n_ranges, sizeof(*d->ranges), range_cmp);
	return 0;
}

/* --- one address ------------------------------------------------------------------------ */

static bool has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/* append to chain the inlined subroutines below scope that contain addr, outermost first */
static int inline_chain(Dwarf_Die *scope, uint64_t addr, Dwarf_Die *chain, int n, int max,
			int depth)
{
	Dwarf_Die child;

	if (depth > MAX_DIE_DEPTH || dwarf_child(scope, &child) != 0)
		return n;
	do {
		int tag = dwarf_tag(&child), m;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block &&
		    tag != DW_TAG_try_block && tag != DW_TAG_catch_block)
			continue;
		if (dwarf_haspc(&child, addr) == 1) {
			if (tag == DW_TAG_inlined_subroutine && n < max)
				chain[n++] = child;
			return inline_chain(&child, addr, chain, n, max, depth + 1);
		}
		/* a block without addresses of its own may still hold inlined code */
		if (tag == DW_TAG_lexical_block && !has_pc_attrs(&child)) {
			m = inline_chain(&child, addr, chain, n, max, depth + 1);
			if (m > n)
				return m;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return n;
}

static void function_of(Dwarf_Die *die, struct dwarf_frame *f)
{
	Dwarf_Attribute attr;
	int line;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		f->linkage_name = dwarf_formstring(&attr);
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		f->name = dwarf_formstring(&attr);
	if (dwarf_decl_line(die, &line) == 0)
		f->decl_line = line;
}

static bool path_eq(uint32_t idx, const void *key, void *ctx)
{
	return ((struct dwarfsym *)ctx)->paths[idx].rel == key;
}

/*
 * libdw leaves a file relative when its directory entry is (DWARF 5 names
 * the compilation directory once, as entry 0): join it with DW_AT_comp_dir,
 * as addr2line and llvm-symbolizer print it.
 */
static const char *full_path(struct dwarfsym *d, Dwarf_Die *cudie, const char *rel)
{
	uint64_t h = hash_u64((uint64_t)(uintptr_t)rel, 0);
	Dwarf_Attribute attr;
	const char *dir;
	struct full_path *p;
	uint32_t idx;

	if (!rel || *rel == '/')
		return rel;
	if (hashtab__find(&d->path_ht, h, rel, path_eq, d, &idx))
		return d->paths[idx].full ?: rel;
	if (vec_reserve(&d->paths, &d->cap_paths, d->n_paths + 1, sizeof(*d->paths)) ||
	    hashtab__insert(&d->path_ht, h, (uint32_t)d->n_paths))
		return rel;
	p = &d->paths[d->n_paths++];
	p->rel = rel;
	p->full = NULL;
	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	if (dir && *dir && asprintf(&p->full, "%s/%s", dir, rel) < 0)
		p->full = NULL;
	return p->full ?: rel;
}

/* the caller's position recorded on an inlined subroutine: DW_AT_call_file/line/column */
static void call_site(struct dwarfsym *d, Dwarf_Die *cudie, Dwarf_Die *inl,
		      struct dwarf_frame *f)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word w;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &w) == 0 &&
	    dwarf_getsrcfiles(cudie, &files, &nfiles) == 0 && w < nfiles)
		f->file = full_path(d, cudie, dwarf_filesrc(files, w, NULL, NULL));
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &w) == 0)
		f->line = (int64_t)w;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_column, &attr), &w) == 0)
		f->column = (int64_t)w;
}

static void line_of(struct dwarfsym *d, Dwarf_Die *cudie, uint64_t addr, struct dwarf_frame *f)
{
	Dwarf_Line *line = dwarf_getsrc_die(cudie, addr);
	int v;

	if (!line)
		return;
	f->file = full_path(d, cudie, dwarf_linesrc(line, NULL, NULL));
	if (dwarf_lineno(line, &v) == 0)
		f->line = v;
	if (dwarf_linecol(line, &v) == 0)
		f->column = v;
}

int dwarfsym__frames(struct dwarfsym *d, uint64_t vaddr, struct dwarf_frame *out, int max)
{
	Dwarf_Die cudie, fn, chain[MAX_DIE_DEPTH];
	const struct pc_range *r;
	struct dwarf_unit *u;
	int n = 0, i;

	if (max < 1 || (!d->loaded && load_units(d)))
		return 0;
	r = range_find(d->ranges, d->n_ranges, vaddr);
	if (!r)
		return 0;
	u = &d->units[r->ref];
	if (!u->indexed)
		index_unit(d, u);
	if (!dwarf_offdie(d->dw, u->die_off, &cudie))
		return 0;
	r = range_find(u->fns, u->n_fns, vaddr);
	if (r && dwarf_offdie(d->dw, (Dwarf_Off)r->ref, &fn)) {
		chain[0] = fn;
		/* deeper inline chains keep their outer part: frames stay joined to the caller */
		n = inline_chain(&fn, vaddr, chain, 1, max < MAX_DIE_DEPTH ? max : MAX_DIE_DEPTH, 0);
	}
	/* innermost first: the line table places the address, each call site its caller */
	memset(out, 0, sizeof(*out) * (size_t)(n ?: 1));
	line_of(d, &cudie, vaddr, &out[0]);
	for (i = 0; i < n; i++) {
		function_of(&chain[n - 1 - i], &out[i]);
		if (i + 1 < n)
			call_site(d, &cudie, &chain[n - 1 - i], &out[i + 1]);
	}
	/* no function DIE covers the address: the line alone, the caller names it */
	return n ?: (out[0].file ? 1 : 0);
}
