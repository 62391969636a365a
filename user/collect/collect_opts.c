// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <linux/types.h>

#include "collect_opts.h"
#include "culpert.h"
#include "otel.h"
#include "session.h"

const struct opt_spec collect_opt_specs[] = {
	OPT_NUM("rate", COLLECT_OPT_RATE, "BYTES", 1, 1ULL << 40,
		 "mean bytes between samples (default 512KiB; 1 = every allocation)"),
	OPT_NUM("max-depth", COLLECT_OPT_DEPTH, "N", 1, CULPERT_MAX_FRAMES - 1,
		 "stack frames kept per sample, 1..127 (default 64)"),
	OPT_FLAG("inuse", COLLECT_OPT_INUSE,
		 "also track frees: live heap (inuse_*) and ages of live blocks"),
	OPT_NUM("max-live", COLLECT_OPT_MAX_LIVE, "N", 1, 1 << 26,
		 "live sampled blocks tracked with --inuse (default 1048576)"),
	OPT_ARG("unwind", COLLECT_OPT_UNWIND, "MODE",
		 "fp (frame pointers), dwarf (copy the stack, unwind with CFI),\n"
		 "auto (default: fp where the code that allocates keeps frame\n"
		 "pointers, dwarf otherwise)"),
	OPT_NUM("stack-size", COLLECT_OPT_STACK_SIZE, "BYTES", 1024, CULPERT_MAX_STACK_COPY,
		 "stack copied per sample with dwarf (default 16KiB, max 32KiB)"),
	OPT_ARG("allocator", COLLECT_OPT_ALLOCATOR, "NAME",
		 "auto, glibc, musl, jemalloc, mimalloc, tcmalloc, or a symbol prefix"),
	OPT_ARG("span-fn", COLLECT_OPT_SPAN_FN, "PATTERN",
		 "each call of a function matching PATTERN is a span (repeatable;\n"
		 "globs over demangled names, e.g. 'app::handler::*')"),
	OPT_NUM("max-span-fns", COLLECT_OPT_MAX_SPAN_FNS, "N", 1, 100000,
		 "refuse patterns matching more functions (default 64)"),
	OPT_FLAG("symbolize", COLLECT_OPT_SYMBOLIZE,
		 "resolve function names at capture (default)"),
	OPT_FLAG("no-symbolize", COLLECT_OPT_NO_SYMBOLIZE,
		 "keep raw addresses; 'culpert symbolize' can resolve them later"),
	OPT_NUM("ringbuf-size", COLLECT_OPT_RINGBUF, "BYTES", 4096, 1ULL << 30,
		 "kernel-to-user buffer (default 2MiB, 8MiB unless --unwind fp)"),
	OPT_ARG("sampler", COLLECT_OPT_SAMPLER, "MODE",
		 "how allocations are seen: auto (default: the otel_memory probes\n"
		 "of an in-process sampler such as libculpert-sampler.so when a\n"
		 "mapped object has them, else uprobes), usdt, uprobes, inject\n"
		 "(load libculpert-sampler.so into the running process with ptrace\n"
		 "and attach to its probes; undone at the end: docs/inject.md)"),
	OPT_FLAG("no-multi", COLLECT_OPT_NO_MULTI,
		 "one perf-event uprobe per site instead of uprobe_multi links"),
	OPT_FLAG("no-session", COLLECT_OPT_NO_SESSION,
		 "entry + return probes even where uprobe sessions exist"),
	OPT_END,
};

void collect_opts__defaults(struct session_opts *o)
{
	o->rate = SESSION_DEFAULT_RATE;
	o->max_depth = COLLECT_DEFAULT_DEPTH;
	o->allocator = "auto";
	o->symbolize = true;
	o->max_entries = COLLECT_DEFAULT_MAX_STACKS;
	o->max_span_fns = COLLECT_DEFAULT_MAX_SPAN_FNS;
	o->max_live = COLLECT_DEFAULT_MAX_LIVE;
	o->unwind = SESSION_UNWIND_AUTO;
	o->sampler = OTEL_MODE_AUTO;
}

static int parse_unwind(const char *arg, enum session_unwind *out)
{
	static const char *const modes[] = { "fp", "dwarf", "auto", NULL };
	static const enum session_unwind values[] = {
		SESSION_UNWIND_FP, SESSION_UNWIND_DWARF, SESSION_UNWIND_AUTO,
	};
	int i = opt_choice("--unwind", arg, modes);

	if (i < 0)
		return i;
	*out = values[i];
	return 0;
}

int collect_opts__parse(int key, const char *arg, struct session_opts *o)
{
	const struct opt_spec *const tables[] = { collect_opt_specs, NULL };
	const struct opt_spec *s = opt_spec_find(tables, key);
	uint64_t v;
	int i;

	if (!s)
		return 1;
	switch (key) {
	case COLLECT_OPT_RATE:
		if (opt_spec_size(s, arg, &o->rate))
			return -EINVAL;
		o->rate_set = true;
		return 0;
	case COLLECT_OPT_DEPTH:
		if (opt_spec_count(s, arg, &v))
			return -EINVAL;
		o->max_depth = (unsigned int)v;
		return 0;
	case COLLECT_OPT_INUSE:
		o->inuse = true;
		return 0;
	case COLLECT_OPT_MAX_LIVE:
		if (opt_spec_count(s, arg, &v))
			return -EINVAL;
		o->max_live = (size_t)v;
		return 0;
	case COLLECT_OPT_UNWIND:
		return parse_unwind(arg, &o->unwind);
	case COLLECT_OPT_STACK_SIZE:
		if (opt_spec_size(s, arg, &v))
			return -EINVAL;
		o->stack_size = (unsigned int)v;
		return 0;
	case COLLECT_OPT_ALLOCATOR:
		o->allocator = arg;
		return 0;
	case COLLECT_OPT_SPAN_FN:
		return opt_append(&o->span_fns, &o->n_span_fns, arg);
	case COLLECT_OPT_MAX_SPAN_FNS:
		if (opt_spec_count(s, arg, &v))
			return -EINVAL;
		o->max_span_fns = (size_t)v;
		return 0;
	case COLLECT_OPT_SYMBOLIZE:
	case COLLECT_OPT_NO_SYMBOLIZE:
		o->symbolize = key == COLLECT_OPT_SYMBOLIZE;
		return 0;
	case COLLECT_OPT_RINGBUF:
		if (opt_spec_size(s, arg, &v))
			return -EINVAL;
		o->ringbuf_bytes = (size_t)v;
		return 0;
	case COLLECT_OPT_SAMPLER:
		i = opt_choice("--sampler", arg, otel_mode_names);
		if (i < 0)
			return i;
		o->sampler = i;
		return 0;
	case COLLECT_OPT_NO_MULTI:
		o->no_multi = true;
		return 0;
	case COLLECT_OPT_NO_SESSION:
		o->no_session = true;
		return 0;
	}
	return 1;
}
