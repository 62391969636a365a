// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "debuginfo.h"
#include "demangle.h"
#include "dwarfsym.h"
#include "elfobj.h"
#include "hashtab.h"
#include "log.h"
#include "symbolize.h"
#include "vec.h"

struct sym_object {
	struct symbolizer *owner;
	char *key;			/* build ID, or what identifies an object without one */
	char *build_id;
	char *path;			/* as the profile names it */
	struct elfobj *bin;		/* the binary, when found */
	bool bin_borrowed;
	struct elfobj *dbg;		/* separate debug info, when found */
	int dbg_seg_err;		/* only dbg: 0 when dbg_seg is known (debug_exec_segment()) */
	uint64_t dbg_seg;
	struct dwarfsym *dw;		/* NULL without DWARF */
	struct elfobj *syms;		/* where function symbols come from */
	enum sym_level level;
	struct search_notes why;
	const char *source;
};

/* display names by raw name: each name is demangled once per run */
struct name_entry {
	const char *raw;		/* owned by an object's ELF or DWARF data */
	char *display;			/* NULL when raw is its own display name */
};

/*
 * A dwz supplementary file, shared by the objects whose DWARF names it:
 * found, opened and parsed once per run (dw NULL: not found).
 */
struct alt_file {
	char build_id[2 * 64 + 1];
	struct elfobj *obj;
	Dwarf *dw;
};

struct symbolizer {
	struct debuginfo *di;
	struct alt_file *alts;
	size_t n_alts, cap_alts;
	struct sym_object **objs;
	size_t n_objs, cap_objs;
	struct hashtab obj_ht;
	struct name_entry *names;
	size_t n_names, cap_names;
	struct hashtab name_ht;
};

struct symbolizer *symbolizer__new(const struct symbolizer_opts *o)
{
	struct debuginfo_opts dio = {
		.sz = sizeof(dio),
		.debug_dirs = o->debug_dirs,
		.n_debug_dirs = o->n_debug_dirs,
		.binary_dirs = o->binary_dirs,
		.n_binary_dirs = o->n_binary_dirs,
		.no_debuginfod = o->no_debuginfod,
	};
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->di = debuginfo__new(&dio);
	if (!s->di) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

static void object_free(struct sym_object *o)
{
	/* libdw's handles first: they point into the ELF files */
	dwarfsym__free(o->dw);
	elfobj__free(o->dbg);
	if (!o->bin_borrowed)
		elfobj__free(o->bin);
	free(o->key);
	free(o->build_id);
	free(o->path);
	free(o);
}

void symbolizer__free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n_objs; i++)
		object_free(s->objs[i]);
	/* after every object: their DWARF refers to these */
	for (i = 0; i < s->n_alts; i++) {
		if (s->alts[i].dw)
			dwarf_end(s->alts[i].dw);
		elfobj__free(s->alts[i].obj);
	}
	free(s->alts);
	for (i = 0; i < s->n_names; i++)
		free(s->names[i].display);
	free(s->objs);
	free(s->names);
	hashtab__free(&s->obj_ht);
	hashtab__free(&s->name_ht);
	debuginfo__free(s->di);
	free(s);
}

/* --- finding an object's files ----------------------------------------------------------- */

/* the supplementary file with this build ID: looked for once per run; NULL on ENOMEM */
static struct alt_file *alt_file(struct symbolizer *s, const char *bid)
{
	struct search_notes notes = { 0 };
	struct alt_file *a;
	size_t i;

	for (i = 0; i < s->n_alts; i++)
		if (!strcmp(s->alts[i].build_id, bid))
			return &s->alts[i];
	if (vec_reserve(&s->alts, &s->cap_alts, s->n_alts + 1, sizeof(*s->alts)))
		return NULL;
	a = &s->alts[s->n_alts++];
	memset(a, 0, sizeof(*a));
	snprintf(a->build_id, sizeof(a->build_id), "%s", bid);
	a->obj = debuginfo__find_debug(s->di, bid, NULL, NULL, &notes);
	if (!a->obj)
		a->obj = debuginfo__fetch(s->di, bid, true, &notes);
	if (a->obj)
		a->dw = dwarf_begin_elf(elfobj__elf(a->obj), DWARF_C_READ, NULL);
	return a;
}

/* dwz moves DWARF shared by several objects to a supplementary file named by build ID */
static void attach_altlink(struct symbolizer *s, struct sym_object *o)
{
	Dwarf *dw = dwarfsym__dwarf(o->dw);
	const void *bid_bytes;
	const char *name;
	char bid[2 * 64 + 1];
	struct alt_file *alt;
	ssize_t n;

	n = dwelf_dwarf_gnu_debugaltlink(dw, &name, &bid_bytes);
	/* libdw finds the file itself when it sits next to the object or under /usr/lib/debug */
	if (n <= 0 || n > 64 || dwarf_getalt(dw))
		return;
	hex_encode(bid, bid_bytes, (size_t)n);
	alt = alt_file(s, bid);
	if (alt && alt->dw)
		dwarf_setalt(dw, alt->dw);
	else
		search_notes__add(&o->why, "DWARF incomplete: supplementary file %s (build ID %s) "
				  "not found", name, bid);
}

static void use_dwarf(struct symbolizer *s, struct sym_object *o, struct elfobj *from)
{
	if (!from || o->dw)
		return;
	o->dw = dwarfsym__new(elfobj__elf(from));
	if (!o->dw)
		return;
	o->source = elfobj__path(from);
	attach_altlink(s, o);
}

/*
 * Only a debug file: strip and objcopy --only-keep-debug zero its segments'
 * file offsets, so the mapping's offset cannot be looked up.  The kernel
 * maps a segment from its first page: the mapping starts at the page of the
 * one executable segment's p_vaddr.
 */
static int debug_exec_segment(struct elfobj *dbg, uint64_t *seg)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), vaddr;

	if (elfobj__exec_segment(dbg, &vaddr))
		return -ENOENT;
	*seg = vaddr & ~(page - 1);
	return 0;
}

/*
 * Separate debug info first (what GDB prefers: a binary may carry a little
 * DWARF of its own, e.g. from static libraries), then DWARF embedded in
 * the binary, then debuginfod: the network only for what is missing here.
 */
static void find_files(struct symbolizer *s, struct sym_object *o, struct elfobj *local)
{
	struct search_notes bin_notes = { 0 }, dbg_notes = { 0 };

	if (local) {
		o->bin = local;
		o->bin_borrowed = true;
	} else {
		o->bin = debuginfo__find_binary(s->di, o->build_id, o->path, &bin_notes);
	}
	o->dbg = debuginfo__find_debug(s->di, o->build_id, o->bin, o->path, &dbg_notes);
	use_dwarf(s, o, o->dbg);
	use_dwarf(s, o, o->bin);
	if (!o->dw && !o->dbg) {
		o->dbg = debuginfo__fetch(s->di, o->build_id, true, &dbg_notes);
		use_dwarf(s, o, o->dbg);
	}
	if (!o->bin && !o->dbg)
		o->bin = debuginfo__fetch(s->di, o->build_id, false, &bin_notes);
	/* a debug file keeps .symtab; a stripped binary only .dynsym */
	o->syms = o->dbg && elfobj__has_symtab(o->dbg) ? o->dbg : o->bin ? o->bin : o->dbg;
	if (!o->bin && o->dbg && elfobj__type(o->dbg) != ET_EXEC)
		o->dbg_seg_err = debug_exec_segment(o->dbg, &o->dbg_seg);

	if (o->dw) {
		o->level = SYM_LEVEL_DWARF;
		return;
	}
	if (!o->syms) {
		o->level = SYM_LEVEL_NONE;
		search_notes__add(&o->why, "no file with build ID %s", o->build_id);
		if (bin_notes.len)
			search_notes__add(&o->why, "%s", bin_notes.buf);
	} else {
		o->level = SYM_LEVEL_SYMBOLS;
		o->source = elfobj__path(o->syms);
		search_notes__add(&o->why, "no DWARF debug info");
	}
	if (dbg_notes.len)
		search_notes__add(&o->why, "%s", dbg_notes.buf);
	if (!debuginfo__urls_set())
		search_notes__add(&o->why, "DEBUGINFOD_URLS is not set");
}

static bool obj_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct symbolizer *)ctx)->objs[idx]->key, key);
}

struct sym_object *symbolizer__object(struct symbolizer *s, const char *build_id, const char *path,
				      struct elfobj *local)
{
	char key[4200];
	struct sym_object *o;
	uint32_t idx;
	uint64_t h;

	if (*build_id)
		snprintf(key, sizeof(key), "%s", build_id);
	else if (local)
		snprintf(key, sizeof(key), "local:%p", (void *)local);
	else
		snprintf(key, sizeof(key), "path:%s", path);
	h = hash_bytes(key, strlen(key), 0);
	if (hashtab__find(&s->obj_ht, h, key, obj_eq, s, &idx))
		return s->objs[idx];
	o = calloc(1, sizeof(*o));
	if (!o || vec_reserve(&s->objs, &s->cap_objs, s->n_objs + 1, sizeof(*s->objs)))
		goto err;
	o->key = strdup(key);
	o->build_id = strdup(build_id);
	o->path = strdup(path);
	if (!o->key || !o->build_id || !o->path ||
	    hashtab__insert(&s->obj_ht, h, (uint32_t)s->n_objs))
		goto err;
	s->objs[s->n_objs++] = o;
	o->owner = s;
	o->source = "";
	if (!*build_id && !local)
		search_notes__add(&o->why, "the profile has no build ID for it, and files are "
				  "matched by build ID only");
	else
		find_files(s, o, local);
	pr_debug("symbolize %s (%s): %s%s\n", path, *build_id ? build_id : "no build ID",
		 o->level == SYM_LEVEL_DWARF ? "DWARF from " :
		 o->level == SYM_LEVEL_SYMBOLS ? "symbols from " : "nothing",
		 o->source);
	return o;
err:
	if (o)
		object_free(o);
	errno = ENOMEM;
	return NULL;
}

enum sym_level sym_object__level(const struct sym_object *o)
{
	return o->level;
}

const char *sym_object__why(const struct sym_object *o)
{
	return o->why.buf;
}

const char *sym_object__source(const struct sym_object *o)
{
	return o->source;
}

/* --- addresses --------------------------------------------------------------------------- */

int sym_object__vaddr(const struct sym_object *o, uint64_t start, uint64_t offset, uint64_t addr,
		      uint64_t *vaddr)
{
	if (addr < start)
		return -ENOENT;
	if (o->bin)
		return elfobj__offset_to_vaddr(o->bin, addr - start + offset, vaddr);
	if (!o->dbg)
		return -ENOENT;
	if (elfobj__type(o->dbg) == ET_EXEC)
		*vaddr = addr;
	else if (!o->dbg_seg_err)
		*vaddr = addr - start + o->dbg_seg;
	return o->dbg_seg_err;
}

/* --- frames -------------------------------------------------------------------------------- */

static bool name_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct symbolizer *)ctx)->names[idx].raw, key);
}

static const char *display_name(struct symbolizer *s, const char *raw)
{
	uint64_t h = hash_bytes(raw, strlen(raw), 0);
	struct name_entry *e;
	uint32_t idx;

	if (hashtab__find(&s->name_ht, h, raw, name_eq, s, &idx))
		return s->names[idx].display ?: s->names[idx].raw;
	if (vec_reserve(&s->names, &s->cap_names, s->n_names + 1, sizeof(*s->names)) ||
	    hashtab__insert(&s->name_ht, h, (uint32_t)s->n_names))
		return raw;	/* ENOMEM: the raw name is still a name */
	e = &s->names[s->n_names++];
	e->raw = raw;
	e->display = demangle(raw, true);
	/* not mangled: the name is its own display name, kept once */
	if (e->display && !strcmp(e->display, raw)) {
		free(e->display);
		e->display = NULL;
	}
	return e->display ?: raw;
}

int sym_object__frames(struct sym_object *o, uint64_t vaddr, struct sym_frame *out, int max,
		       bool *dwarf)
{
	struct dwarf_frame df[SYM_MAX_FRAMES];
	const struct elf_symbol *sym = NULL;
	int n = 0, i;

	*dwarf = false;
	if (max > SYM_MAX_FRAMES)
		max = SYM_MAX_FRAMES;
	if (o->dw)
		n = dwarfsym__frames(o->dw, vaddr, df, max);
	/* the ELF symbol names what DWARF does not: no DWARF, or code without a function DIE */
	if ((!n || !df[0].name) && o->syms)
		sym = elfobj__sym_by_addr(o->syms, vaddr);
	if (!n) {
		if (!sym || max < 1)
			return 0;
		df[0] = (struct dwarf_frame){ .name = sym->name };
		n = 1;
	} else {
		*dwarf = true;
	}
	for (i = 0; i < n; i++) {
		const char *raw = df[i].linkage_name ?: df[i].name;

		if (!raw)
			raw = sym ? sym->name : "";
		out[i] = (struct sym_frame){
			.name = *raw ? display_name(o->owner, raw) : "",
			.system_name = raw,
			.file = df[i].file ?: "",
			.line = df[i].line,
			.column = df[i].column,
			.start_line = df[i].decl_line,
		};
	}
	return n;
}
