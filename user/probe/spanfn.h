/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --span-fn: functions of the executable and its libraries whose demangled
 * names match glob patterns; each call of one is a span named after it.
 */
#ifndef CULPERT_SPANFN_H
#define CULPERT_SPANFN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfobj;
struct objcache;
struct procmaps;
struct target;

struct span_fn {
	size_t object;		/* index into span_fn_plan.objects */
	char *symbol;		/* as in the symbol table */
	char *name;		/* demangled, no parameters: the span's name */
	uint64_t offset;	/* file offset of the function's entry */
	uint32_t name_id;	/* id of `name` in the BPF span_names map */
	uint64_t *exits;	/* file offsets of its return instructions (exits.h) */
	size_t n_exits;
	char exits_missed[192];	/* "" when exits[] is every way out, else why not */
};

struct span_fn_plan {
	char **objects;		/* paths we attach through (/proc/PID/root/...) */
	char **display;		/* the same objects as the target names them */
	size_t n_objects;
	struct span_fn *fns;
	size_t n_fns;
	char **names;		/* distinct span names; names[i] has name_id i + 1 */
	size_t n_names;
};

/*
 * Each function gets an entry probe and plain uprobes on its return
 * instructions, never a return probe: a return probe swaps the return
 * address for a trampoline without unwind information, and a C++
 * exception or Rust panic unwinding through the frame (a C function
 * calling back into C++, as qsort does) would then terminate the program.
 * Ends the return instructions do not show (a longjmp, an exception, a
 * tail call into another object) are noticed from the stack.  How, in
 * a phrase for `probes` and -v: "entry + 2 return instructions".
 */
const char *span_fn__how(const struct span_fn *f, char *buf, size_t len);

/*
 * Match `patterns` (fnmatch globs over demangled names, e.g. 'app::handler::*')
 * against every function of every mapped object.  More than max_fns matches,
 * or a pattern matching nothing, is refused: -E2BIG / -ENOENT with a
 * user-facing reason (listing the matches) in err.
 */
int span_fn__plan(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		  char *const *patterns, size_t n_patterns, size_t max_fns,
		  struct span_fn_plan *plan, char *err, size_t errlen);
void span_fn_plan__free(struct span_fn_plan *plan);

#endif /* CULPERT_SPANFN_H */
