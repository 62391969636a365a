/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --select: which processes the agent profiles.  Selectors are OR'ed; a
 * process matches when any one does:
 *   comm=REGEX           POSIX extended regex, anchored: the whole comm (15 bytes) must match
 *   exe=GLOB             fnmatch(3) on /proc/PID/exe as the kernel reports it; '*' crosses '/'
 *   cgroup=PREFIX        a cgroup path (v2 or any v1 hierarchy) equal to PREFIX or under it
 *   container=ID         a prefix of the container id found in the cgroup path
 *   pid=N                that process
 *   usdt                 a mapped object carries culpert span probes or otel_memory probes
 *   pod=NS/NAME          the process's pod, namespace=NS its namespace,
 *   container-name=NAME  its container's name (container.h says where names come from)
 */
#ifndef CULPERT_SELECT_H
#define CULPERT_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "container.h"

struct select_input {
	pid_t pid;
	const char *comm;
	const char *exe;
	const char *cgroup_text;		/* /proc/PID/cgroup */
	const struct container_info *ci;
};

struct selectors;

/*
 * parse the selectors option OPT (--select, --inject) gave; the opt_error()
 * line naming OPT and -EINVAL on a bad one, -ENOMEM
 */
int selectors__parse(const char *opt, char *const *specs, size_t n, struct selectors **out);
void selectors__free(struct selectors *s);
/* the first selector that matches in (its text in *which), or NULL */
const char *selectors__match(struct selectors *s, const struct select_input *in);

/*
 * cb(ctx, name) for each program name a selector names outright: a comm=
 * regex of plain names ("redis-server", "a|b"), an exe= glob whose last
 * component has no wildcard.  What the kernel stops at exec (discover.h);
 * the others are picked up as they are seen.  Returns the first non-zero cb.
 */
int selectors__names(const struct selectors *s, int (*cb)(void *ctx, const char *name),
		     void *ctx);

/* does the process map an object with culpert or otel_memory USDT probes?  Objects cached */
bool select_has_usdt(struct selectors *s, pid_t pid);

#endif /* CULPERT_SELECT_H */
