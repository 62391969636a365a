/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The collection options that attach, capture, probes and the agent
 * share: one table (name, argument, range, help) and one parser, filling
 * the session's options (session.h).
 */
#ifndef CULPERT_COLLECT_OPTS_H
#define CULPERT_COLLECT_OPTS_H

#include "opt.h"

struct session_opts;

/* the keys of the shared options; a command's own start at 256, below these */
enum collect_opt_key {
	COLLECT_OPT_RATE = 512,
	COLLECT_OPT_DEPTH,
	COLLECT_OPT_INUSE,
	COLLECT_OPT_MAX_LIVE,
	COLLECT_OPT_UNWIND,
	COLLECT_OPT_STACK_SIZE,
	COLLECT_OPT_ALLOCATOR,
	COLLECT_OPT_SPAN_FN,
	COLLECT_OPT_MAX_SPAN_FNS,
	COLLECT_OPT_SYMBOLIZE,
	COLLECT_OPT_NO_SYMBOLIZE,
	COLLECT_OPT_RINGBUF,
	COLLECT_OPT_SAMPLER,
	COLLECT_OPT_NO_MULTI,
	COLLECT_OPT_NO_SESSION,
};

#define COLLECT_DEFAULT_DEPTH		64
#define COLLECT_DEFAULT_MAX_STACKS	65536
#define COLLECT_DEFAULT_MAX_LIVE	(1 << 20)
#define COLLECT_DEFAULT_MAX_SPAN_FNS	64

/* attach's collection options, in the order of its --help */
extern const struct opt_spec collect_opt_specs[];

/* the defaults of attach (no pid) */
void collect_opts__defaults(struct session_opts *o);
/*
 * One option of collect_opt_specs into o: 0, -EINVAL after the error line,
 * -ENOMEM, or 1 when key is not one of them.  --span-fn patterns are in
 * o->span_fns, which the caller frees.
 */
int collect_opts__parse(int key, const char *arg, struct session_opts *o);

#endif /* CULPERT_COLLECT_OPTS_H */
