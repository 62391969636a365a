// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "elfobj.h"
#include "exits.h"
#include "objcache.h"
#include "procmaps.h"
#include "spanfn.h"
#include "target.h"
#include "vec.h"

struct builder {
	struct span_fn_plan *p;
	size_t cap_objects, cap_display, cap_fns, cap_names;
	bool *pattern_hit;
	char unsupported[320];		/* arm64: what has ends only the stack would show */
};

/*
 * Ends no return instruction shows (an exception unwinding through, a tail
 * call into another object) are noticed from the stack on x86-64, where
 * the return address sits in a slot at the entry's stack pointer until a
 * later call reuses it (bpf/spans.bpf.h).  On arm64 it is in lr, saved
 * wherever the callee chooses: no slot to watch, so such functions are
 * refused there rather than left with spans that may never close.
 */
static bool is_arm64(struct elfobj *obj)
{
	return elfobj__machine(obj) == EM_AARCH64;
}

/* code with C++ or Rust landing pads, or their runtimes: exceptions may end its calls */
static bool unwinds_exceptions(struct elfobj *obj)
{
	static const char *const markers[] = {
		"_Unwind_Resume", "__gxx_personality_v0", "rust_eh_personality",
		"_Unwind_RaiseException",
	};

	return elfobj__mentions_any(obj, markers, sizeof(markers) / sizeof(markers[0]));
}

static int add_object(struct builder *b, const struct target *t, const struct procmap *m,
		      struct elfobj *obj, size_t *idx)
{
	struct span_fn_plan *p = b->p;
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < p->n_objects; i++) {
		if (!strcmp(p->display[i], m->path)) {
			*idx = i;
			return 0;
		}
	}
	if (target__object_path(t, m, path, sizeof(path)))
		return -ENAMETOOLONG;
	if (vec_reserve(&p->objects, &b->cap_objects, p->n_objects + 1, sizeof(char *)) ||
	    vec_reserve(&p->display, &b->cap_display, p->n_objects + 1, sizeof(char *)))
		return -ENOMEM;
	if (is_arm64(obj) && unwinds_exceptions(obj)) {
		snprintf(b->unsupported, sizeof(b->unsupported), "functions of %s, C++ or Rust code "
			 "whose calls an exception can end where no probe sees it", m->path);
		return -EOPNOTSUPP;
	}
	p->objects[p->n_objects] = strdup(path);
	p->display[p->n_objects] = strdup(m->path);
	if (!p->objects[p->n_objects] || !p->display[p->n_objects])
		return -ENOMEM;
	*idx = p->n_objects++;
	return 0;
}

static uint32_t name_id(struct builder *b, const char *name)
{
	struct span_fn_plan *p = b->p;
	size_t i;

	for (i = 0; i < p->n_names; i++)
		if (!strcmp(p->names[i], name))
			return (uint32_t)i + 1;
	if (vec_reserve(&p->names, &b->cap_names, p->n_names + 1, sizeof(char *)) ||
	    !(p->names[p->n_names] = strdup(name)))
		return 0;
	return (uint32_t)++p->n_names;
}

static bool matches(struct builder *b, char *const *patterns, size_t n, const char *name,
		    const char *symbol)
{
	bool hit = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!fnmatch(patterns[i], name, 0) || !fnmatch(patterns[i], symbol, 0)) {
			b->pattern_hit[i] = true;
			hit = true;
		}
	}
	return hit;
}

/* the function's return instructions; a set that misses some leaves those calls to the stack */
static int find_exits(struct builder *b, struct span_fn *f, struct elfobj *obj,
		      const struct elf_symbol *sym)
{
	struct exits e;
	int err = exits__find(obj, sym->value, sym->size, false, &e);

	if (err)
		return err;
	f->n_exits = e.n;
	f->exits = malloc((e.n ?: 1) * sizeof(*f->exits));
	if (!f->exits)
		return -ENOMEM;
	memcpy(f->exits, e.offsets, e.n * sizeof(*f->exits));
	if (!e.complete)
		snprintf(f->exits_missed, sizeof(f->exits_missed), "%s", e.reason);
	else if (e.n_tails)
		snprintf(f->exits_missed, sizeof(f->exits_missed), "tail call to %s in another object",
			 e.tails[0]);
	if (f->exits_missed[0] && is_arm64(obj)) {
		snprintf(b->unsupported, sizeof(b->unsupported), "%s in %s, whose calls may end "
			 "where no probe sees it (%s)", f->name, b->p->display[f->object],
			 f->exits_missed);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int add_match(struct builder *b, size_t object, struct elfobj *obj,
		     const struct elf_symbol *sym, char *name, uint64_t off)
{
	struct span_fn_plan *p = b->p;
	struct span_fn *f;
	size_t i;

	/* aliases share an entry point: one probe, or every call would open two spans */
	for (i = 0; i < p->n_fns; i++) {
		if (p->fns[i].object == object && p->fns[i].offset == off) {
			free(name);
			return 0;
		}
	}
	if (vec_reserve(&p->fns, &b->cap_fns, p->n_fns + 1, sizeof(*f))) {
		free(name);
		return -ENOMEM;
	}
	f = &p->fns[p->n_fns];
	memset(f, 0, sizeof(*f));
	f->object = object;
	f->symbol = strdup(sym->name);
	f->name = name;
	f->offset = off;
	f->name_id = name_id(b, name);
	p->n_fns++;
	if (!f->symbol || !f->name_id)
		return -ENOMEM;
	return find_exits(b, f, obj, sym);
}

static int scan_object(struct builder *b, const struct target *t, const struct procmap *m,
		       struct elfobj *obj, char *const *patterns, size_t n_patterns)
{
	const struct elf_symbol *syms;
	size_t n, i, object;
	uint64_t off;
	int err;

	syms = elfobj__symbols(obj, &n);
	for (i = 0; i < n; i++) {
		char *name;

		if (!syms[i].size || syms[i].type != STT_FUNC)
			continue;
		name = demangle(syms[i].name, false);
		if (!name)
			return -ENOMEM;
		if (!matches(b, patterns, n_patterns, name, syms[i].name) ||
		    elfobj__vaddr_to_offset(obj, syms[i].value, &off)) {
			free(name);
			continue;
		}
		err = add_object(b, t, m, obj, &object);
		if (!err)
			err = add_match(b, object, obj, &syms[i], name, off);
		else
			free(name);
		if (err)
			return err;
	}
	return 0;
}

static void list_matches(const struct span_fn_plan *p, size_t max, char *err, size_t errlen)
{
	size_t i, len;

	len = (size_t)snprintf(err, errlen,
			       "--span-fn matches %zu functions, more than --max-span-fns %zu "
			       "(narrow the pattern or raise the limit):", p->n_fns, max);
	for (i = 0; i < p->n_fns && len < errlen; i++)
		len += (size_t)snprintf(err + len, errlen - len, "%s %s", i ? "," : "",
					p->fns[i].name);
}

int span_fn__plan(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		  char *const *patterns, size_t n_patterns, size_t max_fns,
		  struct span_fn_plan *plan, char *err, size_t errlen)
{
	struct builder b = { .p = plan };
	size_t i;
	int ret = 0;

	memset(plan, 0, sizeof(*plan));
	if (!n_patterns)
		return 0;
	b.pattern_hit = calloc(n_patterns, sizeof(bool));
	if (!b.pattern_hit)
		return -ENOMEM;
	for (i = 0; i < maps->n && !ret; i++) {
		const struct procmap *m = &maps->v[i];
		struct elfobj *obj;
		size_t j;
		bool seen = false;

		if (!m->executable || !procmap__is_file(m))
			continue;
		for (j = 0; j < i; j++)
			seen |= maps->v[j].executable && !strcmp(maps->v[j].path, m->path);
		obj = seen ? NULL : objcache__get(objs, m);
		if (obj)
			ret = scan_object(&b, t, m, obj, patterns, n_patterns);
	}
	for (i = 0; i < n_patterns && !ret; i++) {
		if (!b.pattern_hit[i]) {
			snprintf(err, errlen, "--span-fn '%s' matches no function of pid %d or its libraries "
				 "(globs apply to demangled names without parameters, e.g. 'ns::Class::*')",
				 patterns[i], (int)t->pid);
			ret = -ENOENT;
		}
	}
	if (!ret && plan->n_fns > max_fns) {
		list_matches(plan, max_fns, err, errlen);
		ret = -E2BIG;
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory matching --span-fn patterns");
	if (ret == -EOPNOTSUPP)
		snprintf(err, errlen, "--span-fn matches %s: ends culpert-bpf cannot see on arm64 yet; "
			 "mark its spans with include/culpert/span.h instead", b.unsupported);
	free(b.pattern_hit);
	if (ret)
		span_fn_plan__free(plan);
	return ret;
}

void span_fn_plan__free(struct span_fn_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->n_objects; i++) {
		free(plan->objects[i]);
		free(plan->display[i]);
	}
	for (i = 0; i < plan->n_fns; i++) {
		free(plan->fns[i].symbol);
		free(plan->fns[i].name);
		free(plan->fns[i].exits);
	}
	for (i = 0; i < plan->n_names; i++)
		free(plan->names[i]);
	free(plan->objects);
	free(plan->display);
	free(plan->fns);
	free(plan->names);
	memset(plan, 0, sizeof(*plan));
}

const char *span_fn__how(const struct span_fn *f, char *buf, size_t len)
{
	if (!f->exits_missed[0])
		snprintf(buf, len, "entry + %zu return instructions", f->n_exits);
	else
		snprintf(buf, len, "entry + %zu return instructions, other ends seen from the stack (%s)",
			 f->n_exits, f->exits_missed);
	return buf;
}
