// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exe_kind.h"
#include "inject.h"
#include "injection.h"
#include "log.h"
#include "objcache.h"
#include "target.h"

#define STILL_WORKS	"; --sampler uprobes still works (docs/inject.md)"

const char *injection__library(void)
{
	static const char *const rel[] = { "libculpert-sampler.so", "../lib/libculpert-sampler.so" };
	static char path[PATH_MAX + 64];
	char self[PATH_MAX], *slash;
	const char *env = getenv("CULPERT_SAMPLER_LIB");
	ssize_t n;
	size_t i;

	/* another build of it, where an install keeps it elsewhere */
	if (env && *env)
		return access(env, R_OK) ? NULL : env;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", self, rel[i]);
		if (!access(path, R_OK))
			return path;
	}
	return NULL;
}

int injection__check(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		     char *why, size_t len)
{
	const struct procmap *exe = exe_kind__exe_mapping(t, maps);

	/* its runtime owns the threads and the signals: a thread borrowed there is not ours to stop */
	if (exe && exe_kind__is_go(objcache__get(objs, exe))) {
		snprintf(why, len, "pid %d is a Go program: its runtime does not expect a foreign "
			 "library and thread stops", (int)t->pid);
		return -ENOEXEC;
	}
	if (!inject__mapped(maps) && !injection__library()) {
		snprintf(why, len, "libculpert-sampler.so is neither beside culpert-bpf nor in "
			 "../lib (nor CULPERT_SAMPLER_LIB, if set): build it (make) or install it");
		return -ENOENT;
	}
	return inject__check(t, maps, objs, why, len);
}

/* what the borrowed thread's held time was made of (docs/inject.md, "Measured") */
static void print_steps(const struct inject_stats *st)
{
	const uint64_t *s = st->step_ns;

	pr_info("injection: thread %d held: safe point and frame %.2f ms, scratch %.2f ms, "
		"load %.2f ms, call %.2f ms, hand-back %.2f ms\n", (int)st->tid,
		(double)s[INJECT_STEP_ARM] / 1e6, (double)s[INJECT_STEP_SCRATCH] / 1e6,
		(double)s[INJECT_STEP_LOAD] / 1e6, (double)s[INJECT_STEP_CALL] / 1e6,
		(double)s[INJECT_STEP_FINISH] / 1e6);
}

int injection__start(const struct target *t, const struct procmaps *maps, struct objcache *objs,
		     uint64_t rate, char *err, size_t len)
{
	struct inject_stats st;
	char why[512];
	int ret = injection__check(t, maps, objs, why, sizeof(why));

	if (!ret)
		ret = inject__takeover(t, objs, injection__library(), rate, &st, why, sizeof(why));
	if (ret) {
		snprintf(err, len, "cannot inject libculpert-sampler.so into pid %d: %s" STILL_WORKS,
			 (int)t->pid, why);
		return ret;
	}
	pr_info("injection: %s libculpert-sampler.so in %.2f ms (after %.2f ms reading its "
		"objects), thread %d held %.2f ms (%u round trips), %u thread stops, the longest "
		"%.1f us\n", st.reused ? "reused" : "loaded", (double)st.total_ns / 1e6,
		(double)st.prep_ns / 1e6, (int)st.tid, (double)st.held_ns / 1e6, st.trips,
		st.stops, (double)st.max_stop_ns / 1e3);
	print_steps(&st);
	return 0;
}

int injection__stop(const struct target *t, struct objcache *objs, uint64_t deadline_ns)
{
	struct inject_stats st;
	char why[512];
	int ret = inject__release(t, objs, deadline_ns, &st, why, sizeof(why));

	if (ret) {
		/* not mapped any more: the process exec'd another program, which has no sampler */
		if (ret == -ENOENT)
			pr_info("pid %d: no sampler to release: %s\n", (int)t->pid, why);
		else if (target__alive(t))
			pr_warn("pid %d keeps libculpert-sampler.so sampling: releasing it failed: "
				"%s\n", (int)t->pid, why);
		return ret;
	}
	pr_info("injection: released in %.2f ms, thread %d held %.2f ms (%u round trips), the "
		"longest stop %.1f us\n", (double)st.total_ns / 1e6, (int)st.tid,
		(double)st.held_ns / 1e6, st.trips, (double)st.max_stop_ns / 1e3);
	print_steps(&st);
	return 0;
}
