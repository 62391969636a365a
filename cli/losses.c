// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "losses.h"
#include "pprof.h"

static uint64_t comment_u64(const struct pprof_profile *p, const char *key)
{
	const char *v = pprof_profile__comment(p, key);

	return v ? strtoull(v, NULL, 10) : 0;
}

static void losses__read(const struct pprof_profile *p, struct losses *l)
{
	const char *live = pprof_profile__comment(p, "inuse_live");

	memset(l, 0, sizeof(*l));
	l->samples = comment_u64(p, "samples");
	l->lost_samples = comment_u64(p, "lost_samples");
	l->probe_misses = comment_u64(p, "probe_misses");
	l->untracked = comment_u64(p, "inuse_untracked");
	l->folded = comment_u64(p, "aggregate_folded");
	l->failed = comment_u64(p, "alloc_failed");
	l->inuse = pprof_profile__comment(p, "inuse") != NULL;
	l->frees_missed = comment_u64(p, "inuse_frees_missed");
	/*
	 * Before the live heap was read from the kernel's table (no
	 * inuse_live comment), a free record lost in the ring buffer left its
	 * block looking live.
	 */
	if (l->inuse && !live)
		l->frees_missed += comment_u64(p, "inuse_lost_frees");
}

/* anything to state at all */
static bool losses__any(const struct losses *l)
{
	return l->lost_samples || l->probe_misses || l->untracked || l->frees_missed || l->folded ||
	       l->failed;
}

/* live blocks may have been freed: a leak cannot be told from a missed free */
static bool losses__frees_doubtful(const struct losses *l)
{
	return l->inuse && l->frees_missed;
}

/* lost_samples as a share of all sampled allocations, in % */
static double losses__lost_pct(const struct losses *l)
{
	uint64_t all = l->samples + l->lost_samples;

	return all ? 100.0 * (double)l->lost_samples / (double)all : 0;
}

/* one statement: "Lost:    " and the line, or a markdown quote naming the profile */
static void say(FILE *f, bool md, const char *who, const char *what)
{
	if (md)
		fprintf(f, "> **Incomplete data%s%s:** %s\n>\n", who ? " in " : "", who ? who : "", what);
	else
		fprintf(f, "Lost:    %s%s%s\n", who ? who : "", who ? ": " : "", what);
}

/* "Lost:    ..." lines for text output, or "> **Lost** ..." for markdown; `who` names the profile */
static void losses__print(FILE *f, const struct losses *l, const char *who, bool markdown)
{
	char buf[512];

	if (l->lost_samples) {
		snprintf(buf, sizeof(buf), "%llu of %llu sampled allocations (%.2f%%) were lost in the "
			 "kernel (ring buffer full): every total is low by about that much",
			 (unsigned long long)l->lost_samples,
			 (unsigned long long)(l->samples + l->lost_samples), losses__lost_pct(l));
		say(f, markdown, who, buf);
	}
	if (l->probe_misses) {
		snprintf(buf, sizeof(buf), "the kernel skipped %llu probe hits (a BPF program was already "
			 "running on the CPU)", (unsigned long long)l->probe_misses);
		say(f, markdown, who, buf);
	}
	if (l->untracked) {
		snprintf(buf, sizeof(buf), "%llu sampled blocks were not tracked (live table full): the "
			 "live heap is low", (unsigned long long)l->untracked);
		say(f, markdown, who, buf);
	}
	if (losses__frees_doubtful(l)) {
		snprintf(buf, sizeof(buf), "%llu frees may have been missed: a block shown as live may "
			 "have been freed", (unsigned long long)l->frees_missed);
		say(f, markdown, who, buf);
	}
	if (l->folded) {
		snprintf(buf, sizeof(buf), "%llu samples kept only their leaf frame (more distinct stacks "
			 "than --max-stacks)", (unsigned long long)l->folded);
		say(f, markdown, who, buf);
	}
	if (l->failed) {
		snprintf(buf, sizeof(buf), "%llu allocator calls asked for more than can ever be "
			 "allocated and failed (NULL or bad_alloc): counted apart, in no total",
			 (unsigned long long)l->failed);
		if (markdown)
			fprintf(f, "> **Failed calls%s%s:** %s\n>\n", who ? " in " : "",
				who ? who : "", buf);
		else
			fprintf(f, "Failed:  %s%s%s\n", who ? who : "", who ? ": " : "", buf);
	}
	if (losses__any(l) && markdown)
		fprintf(f, "\n");
}

/* "losses": {...} as the next key of an object, when there is anything to state */
static void losses__json(struct json *j, const struct losses *l)
{
	if (!losses__any(l))
		return;
	json_key(j, "losses");
	json_begin(j, '{');
	json_kv_int(j, "failed_calls", (int64_t)l->failed);
	json_kv_int(j, "folded_samples", (int64_t)l->folded);
	json_key(j, "frees_doubtful");
	json_bool(j, losses__frees_doubtful(l));
	json_kv_int(j, "frees_missed", (int64_t)l->frees_missed);
	json_key(j, "lost_pct");
	json_num(j, losses__lost_pct(l), 2);
	json_kv_int(j, "lost_samples", (int64_t)l->lost_samples);
	json_kv_int(j, "probe_misses", (int64_t)l->probe_misses);
	json_kv_int(j, "untracked_blocks", (int64_t)l->untracked);
	json_end(j, '}');
}

void losses__print_of(FILE *f, const struct pprof_profile *p, const char *who, bool markdown)
{
	struct losses l;

	losses__read(p, &l);
	losses__print(f, &l, who, markdown);
}

void losses__json_of(struct json *j, const struct pprof_profile *p)
{
	struct losses l;

	losses__read(p, &l);
	losses__json(j, &l);
}

bool losses__refuse_leaks(const struct pprof_profile *p, const char *file)
{
	struct losses l;

	losses__read(p, &l);
	if (!losses__frees_doubtful(&l))
		return false;
	pr_error("%s: %llu frees may have been missed while it was captured, so a block still live "
		 "in it may have been freed: no block is called leaked; 'culpert report --inuse' shows "
		 "the live heap, capture again with a larger --ringbuf-size to list leaks\n", file,
		 (unsigned long long)l.frees_missed);
	return true;
}
