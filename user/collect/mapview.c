// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>

#include "clock.h"
#include "culpert.h"
#include "log.h"
#include "maphist.h"
#include "mapview.h"
#include "mmapwatch.h"
#include "objcache.h"
#include "procmaps.h"
#include "target.h"

/* re-read /proc/PID/maps at most this often when samples point outside the snapshot */
#define MAPS_REFRESH_NS 100000000ULL
/* unmapped libraries kept for their samples (each holds its object open) */
#define MAX_GONE_MAPPINGS 4096

struct mapview {
	const struct target *t;
	struct objcache *objs;
	struct procmaps maps;		/* the last snapshot, newer mappings, unmapped ones */
	uint64_t read_ns;		/* of the last snapshot */
	uint64_t dropped;		/* unmapped ones past MAX_GONE_MAPPINGS, forgotten */
	struct maphist *hist;
	struct mmapwatch *watch;	/* mappings as they are made; NULL: re-reads only */
	uint64_t gen;			/* bumped by every change of the executable mappings */
};

/*
 * Open every mapped object now: once the target exits, /proc/PID/root and
 * map_files are gone, and build IDs and symbols with them.
 */
static void open_objects(struct mapview *v)
{
	size_t i;

	/* objcache__get() turns away mappings without a file */
	for (i = 0; i < v->maps.n; i++)
		if (v->maps.v[i].executable && !v->maps.v[i].gone)
			objcache__get(v->objs, &v->maps.v[i]);
}

/* the executable file mappings first seen at ts_ns into the history */
static void record_new(struct mapview *v, uint64_t ts_ns)
{
	size_t i;

	for (i = 0; i < v->maps.n; i++)
		if (v->maps.v[i].seen_ns == ts_ns && !v->maps.v[i].gone)
			maphist__seen(v->hist, &v->maps.v[i], ts_ns);
}

int mapview__new(const struct target *t, struct objcache *objs, struct mmapwatch *shared,
		 struct mapview **out, char *err, size_t errlen)
{
	struct mapview *v = calloc(1, sizeof(*v));
	int ret;

	if (!v || !(v->hist = maphist__new(MAX_GONE_MAPPINGS))) {
		snprintf(err, errlen, "out of memory");
		mapview__free(v);
		return -ENOMEM;
	}
	v->t = t;
	v->objs = objs;
	/* optional, and before the first read: what is mapped later is all reported */
	v->watch = shared ? mmapwatch__join(shared, t->pid) : mmapwatch__new(t->pid);
	if (!v->watch)
		pr_info("cannot follow new mappings as they are made (%s): libraries unloaded "
			"between two reads of /proc/%d/maps stay unknown\n", strerror(errno),
			(int)t->pid);
	ret = procmaps__read(t->pid, &v->maps);
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", (int)t->pid, strerror(-ret));
		mapview__free(v);
		return ret;
	}
	v->read_ns = clock_ns(CLOCK_MONOTONIC);
	record_new(v, 0);
	open_objects(v);
	*out = v;
	return 0;
}

void mapview__free(struct mapview *v)
{
	if (!v)
		return;
	maphist__free(v->hist);
	mmapwatch__free(v->watch);
	procmaps__free(&v->maps);
	free(v);
}

const struct procmaps *mapview__maps(const struct mapview *v)
{
	return &v->maps;
}

const struct maphist *mapview__hist(const struct mapview *v)
{
	return v->hist;
}

void mapview__refresh(struct mapview *v)
{
	struct procmaps fresh;

	v->read_ns = clock_ns(CLOCK_MONOTONIC);
	/*
	 * A process that exited keeps its last snapshot: that is all we can
	 * know.  One that exec'd keeps it too: the samples so far are of the
	 * old program, and the capture is about to end.
	 */
	if (target__execed(v->t) || procmaps__read(v->t->pid, &fresh))
		return;
	if (maphist__refresh(v->hist, &v->maps, &fresh) ||
	    procmaps__carry(&fresh, &v->maps, v->read_ns, MAX_GONE_MAPPINGS, &v->dropped)) {
		procmaps__free(&fresh);
		return;
	}
	procmaps__free(&v->maps);
	v->maps = fresh;
	v->gen++;
	record_new(v, v->read_ns);
	open_objects(v);
	pr_debug("re-read the mappings of pid %d: %zu entries\n", (int)v->t->pid, v->maps.n);
}

/*
 * A mapping the kernel reported as it was made: into the view, its object
 * opened while it is there to open.  What it covers changes meaning.
 */
static int on_mmap(void *ctx, const struct procmap *m, uint64_t ts_ns)
{
	struct mapview *v = ctx;
	struct procmap c = *m;
	const struct procmap *in;

	/* another program's mappings now: the capture ends before it (stat()ed per record only) */
	if (target__execed(v->t))
		return 1;
	c.seen_ns = ts_ns;
	if (procmaps__overlapped(&v->maps, &c) && maphist__changing(v->hist, &v->maps))
		return 0;
	/* records of several CPUs come in any order: the view keeps the newest mapping */
	if (maphist__seen(v->hist, &c, ts_ns) || procmaps__newer(&v->maps, &c) ||
	    procmaps__insert(&v->maps, &c))
		return 0;
	in = procmaps__find(&v->maps, c.start);
	if (in)
		objcache__get(v->objs, in);
	v->gen += c.executable;
	return 0;
}

uint64_t mapview__generation(const struct mapview *v)
{
	return v->gen;
}

void mapview__update(struct mapview *v)
{
	if (v->watch)
		mmapwatch__read(v->watch, on_mmap, v);
}

/*
 * A return address outside the view means a mapping came after it was
 * read, one in a mapping since gone may be in a library loaded again.
 */
static void check_mapped(struct mapview *v, const uint64_t *frames, size_t n)
{
	const struct procmap *m;
	size_t i;

	for (i = 0; i < n; i++) {
		m = procmaps__find(&v->maps, frames[i] - 1);
		if (m && !m->gone)
			continue;
		if (clock_ns(CLOCK_MONOTONIC) - v->read_ns > MAPS_REFRESH_NS)
			mapview__refresh(v);
		return;
	}
}

void mapview__frames(struct mapview *v, uint64_t *frames, size_t n, uint64_t ts_ns, bool check)
{
	size_t i;

	if (check)
		check_mapped(v, frames, n);
	/* while libraries only come, an address means one thing: nothing to keep */
	if (!maphist__tracking(v->hist))
		return;
	for (i = 0; i < n; i++)
		if (frames[i] != CULPERT_FRAME_TRUNCATED)
			frames[i] = maphist__frame(v->hist, procmaps__find(&v->maps, frames[i] - 1),
						   frames[i], ts_ns);
}

int mapview__comments(const struct mapview *v, int (*cb)(void *ctx, const char *comment),
		      void *ctx)
{
	char buf[96];
	int err;

	snprintf(buf, sizeof(buf), "mappings_followed=%s", v->watch ? "perf_mmap" : "maps_reread");
	err = cb(ctx, buf);
	snprintf(buf, sizeof(buf), "mappings_forgotten=%llu",
		 (unsigned long long)(v->dropped + maphist__dropped(v->hist)));
	if (!err)
		err = cb(ctx, buf);
	if (!err && v->watch) {
		snprintf(buf, sizeof(buf), "mappings_lost_records=%llu",
			 (unsigned long long)mmapwatch__lost(v->watch));
		err = cb(ctx, buf);
	}
	return err;
}
