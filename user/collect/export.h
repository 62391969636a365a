/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Writing the aggregate of one capture as a pprof profile (docs/profile-format.md). */
#ifndef CULPERT_EXPORT_H
#define CULPERT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "culpert.h"

struct aggregate;
struct live;
struct maphist;
struct objcache;
struct procmaps;
struct spans;
struct symbolizer;
struct target;

/* an entry's cumulative allocation values at an earlier moment: the base of a delta profile */
struct export_base {
	double alloc_objects;
	double alloc_space;
};

/* frames written per sample; the BPF side never delivers more */
#define CULPERT_EXPORT_MAX_FRAMES CULPERT_MAX_FRAMES

struct export_opts {
	const struct target *t;
	const struct procmaps *maps;	/* the target's mappings (last snapshot) */
	const struct maphist *hist;	/* the mappings frames were in when seen; NULL: maps decides */
	struct objcache *objs;
	uint64_t rate;
	int64_t time_nanos;		/* start, Unix ns */
	int64_t duration_nanos;
	const struct spans *spans;	/* span chains and names of the aggregate's keys */
	const struct live *live;	/* --inuse: blocks still live at the end, or NULL */
	uint64_t end_mono_ns;		/* CLOCK_MONOTONIC at the end, for blocks' ages */
	bool symbolize;
	struct symbolizer *sym;		/* kept by the caller; NULL: one for this export */
	const char *unwind;		/* "fp", "dwarf" */
	const char *kernel;		/* uname -r */
	uint64_t lost;			/* samples lost in the kernel */
	const char *const *extra;	/* more "key=value" comments */
	size_t n_extra;
	const char *default_sample_type;	/* NULL: alloc_space */
	bool span_labels_only;		/* span_name and span_path; no thread_id, span_id, ... */
	/* a delta: alloc values less base[i] for entry i < n_base (entries without change left out) */
	const struct export_base *base;
	size_t n_base;
};

/*
 * What an export of a (with live, symbolized or not) will take at its
 * peak, bytes: an estimate from the sizes it measured (docs/agent.md,
 * "Memory"), for admission before it starts.
 */
size_t export_profile_need(const struct aggregate *a, const struct live *live, bool symbolize);
/* 0 or -errno */
int export_profile(struct aggregate *a, const struct export_opts *o, const char *path);
/* the same into a malloc'd buffer (gzip'd) */
int export_profile_buf(struct aggregate *a, const struct export_opts *o, void **buf,
		       size_t *len);

#endif /* CULPERT_EXPORT_H */
