/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a profile says it could not see, read from culpert-bpf's comments,
 * and said in one wording by every command that draws conclusions from it
 * (report, diff, --leaks): samples lost in the kernel make every total low,
 * untracked blocks make the live heap low, and frees the profiler may have
 * missed make live blocks doubtful as leaks; calls that failed are in no
 * total (docs/profile-format.md, alloc_failed).  A profile without these
 * comments (another tool's) states no loss.
 */
#ifndef CULPERT_LOSSES_H
#define CULPERT_LOSSES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct json;
struct pprof_profile;

struct losses {
	uint64_t samples;		/* sampled allocations received */
	uint64_t lost_samples;		/* sampled in the kernel, lost before userspace */
	uint64_t probe_misses;		/* probe hits the kernel skipped */
	uint64_t untracked;		/* --inuse: sampled blocks the live table could not hold */
	uint64_t frees_missed;		/* --inuse: frees the probes may not have seen */
	uint64_t folded;		/* samples whose stack was cut (--max-stacks) */
	uint64_t failed;		/* allocator calls that could not succeed: in no total */
	bool inuse;			/* the profile followed frees */
};

/*
 * What a profile lost, as report and diff state it: "Lost:    ..." lines
 * (or "> **Lost** ..." in markdown; `who` names the profile), or "losses":
 * {...} as the next key of an object, when there is anything to state
 */
void losses__print_of(FILE *f, const struct pprof_profile *p, const char *who, bool markdown);
void losses__json_of(struct json *j, const struct pprof_profile *p);
/*
 * --leaks on a profile whose frees may have been missed: a block still
 * live may have been freed, so none is called leaked.  Prints the error
 * and returns true then.
 */
bool losses__refuse_leaks(const struct pprof_profile *p, const char *file);

#endif /* CULPERT_LOSSES_H */
