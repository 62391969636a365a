/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The symbolizer shared by capture-time symbolization (culpert-bpf) and
 * `culpert symbolize`: objects found by build ID (debuginfo.h), function
 * names from the ELF symbol tables, file:line and inline frames from DWARF
 * (dwarfsym.h), display names demangled (demangle.h).  Each object is
 * looked up and opened once per symbolizer.
 */
#ifndef CULPERT_SYMBOLIZE_H
#define CULPERT_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfobj;
struct symbolizer;
struct sym_object;

/* frames kept per address, innermost first; deeper inline chains lose their innermost part */
#define SYM_MAX_FRAMES 64

struct sym_frame {
	const char *name;		/* display name: demangled, no Rust hash */
	const char *system_name;	/* as in the symbol table (mangled) */
	const char *file;		/* "" when unknown */
	int64_t line;			/* 0 when unknown */
	int64_t column;
	int64_t start_line;		/* the function's declaration line, 0 when unknown */
};

struct symbolizer_opts {
	size_t sz;
	const char *const *debug_dirs;	/* searched before /usr/lib/debug */
	size_t n_debug_dirs;
	const char *const *binary_dirs;
	size_t n_binary_dirs;
	bool no_debuginfod;		/* ignore DEBUGINFOD_URLS */
};

/* what an object can give */
enum sym_level {
	SYM_LEVEL_NONE,			/* nothing: no file found */
	SYM_LEVEL_SYMBOLS,		/* function names from ELF symbols only */
	SYM_LEVEL_DWARF,		/* DWARF: file:line and inline frames too */
};

/* NULL and errno set on failure */
struct symbolizer *symbolizer__new(const struct symbolizer_opts *o);
void symbolizer__free(struct symbolizer *s);

/*
 * The object with lower-case hex build ID `build_id` ("" when it has none)
 * that the profile says was mapped from `path`.  `local` is that very file
 * already open (capture time: the target's own object; borrowed, it must
 * outlive the symbolizer), or NULL to search by build ID.  Without a build
 * ID and without `local` nothing is searched: a path alone never matches.
 * NULL only on ENOMEM.
 */
struct sym_object *symbolizer__object(struct symbolizer *s, const char *build_id, const char *path,
				      struct elfobj *local);

enum sym_level sym_object__level(const struct sym_object *o);
/* why the level is not SYM_LEVEL_DWARF, and what was searched; "" when it is */
const char *sym_object__why(const struct sym_object *o);
/* the file DWARF or symbols come from, "" when none */
const char *sym_object__source(const struct sym_object *o);

/*
 * The link-time (ELF virtual) address of runtime address addr inside a
 * mapping that starts at `start` with file offset `offset`; 0 or -ENOENT.
 */
int sym_object__vaddr(const struct sym_object *o, uint64_t start, uint64_t offset, uint64_t addr,
		      uint64_t *vaddr);
/*
 * Frames of link-time address vaddr, innermost first: how many (at most
 * max), 0 when nothing is known.  *dwarf tells whether DWARF covered the
 * address (file:line and inline frames are then complete).  Strings stay
 * valid until the symbolizer is freed.
 */
int sym_object__frames(struct sym_object *o, uint64_t vaddr, struct sym_frame *out, int max,
		       bool *dwarf);

#endif /* CULPERT_SYMBOLIZE_H */
