// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a session writes: the run's comments, the samples past the
 * stack rate, the exact span totals, the profile, the loss warnings.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "clock.h"
#include "demangle.h"
#include "elfobj.h"
#include "export.h"
#include "kfeatures.h"
#include "log.h"
#include "mapview.h"
#include "objcache.h"
#include "procmaps.h"
#include "session_internal.h"
#include "span_totals.h"
#include "spans.h"
#include "symbolize.h"
#include "totals.h"
#include "vec.h"

int session__add_comment(struct session *s, const char *comment)
{
	char *c = strdup(comment);

	if (!c || vec_reserve(&s->comments, &s->cap_comments, s->n_comments + 1, sizeof(char *))) {
		free(c);
		return -ENOMEM;
	}
	s->comments[s->n_comments++] = c;
	return 0;
}

int session__add_comment_cb(void *session, const char *comment)
{
	return session__add_comment(session, comment);
}

struct census_entry {
	uint32_t path;
	uint64_t size;
	uint64_t count;
};

static int add_throttled_path(void *ctx, uint64_t size, uint32_t keep,
			      const struct culpert_throttle_path *path, uint64_t count)
{
	struct culpert_span_frame frames[CULPERT_MAX_SPAN_DEPTH] = { 0 };
	static const uint64_t stack[] = { CULPERT_FRAME_THROTTLED };
	struct session *s = ctx;
	/* picked to keep their stacks with probability keep: each stands for 1 / keep */
	struct agg_sample a = { .frames = stack, .n_frames = 1, .chain = UINT32_MAX,
				.size = size, .count = count, .weighted = true,
				.objects = sample_weight(size, s->o.rate) * keep_scale(keep) };

	a.thin_var = thin_var(keep, a.objects * (double)size);
	uint32_t i, depth = path ? path->depth : 0;

	if (depth > CULPERT_MAX_SPAN_DEPTH)
		depth = CULPERT_MAX_SPAN_DEPTH;
	for (i = 0; i < depth; i++)
		frames[i].name_id = path->name_ids[i];
	a.path = spans__chain(s->spans, frames, depth, false);
	if (!keep) {
		if (vec_reserve(&s->census, &s->cap_census, s->n_census + 1, sizeof(*s->census)))
			return -ENOMEM;
		s->census[s->n_census++] = (struct census_entry){ .path = a.path, .size = size,
								  .count = count };
		return 0;
	}
	a.thinned = keep < CULPERT_KEEP_ONE;
	s->throttled += count;
	return aggregate__add_sample(s->agg, &a, s->o.rate) < 0 ? -ENOMEM : 0;
}

static int census_cmp(const void *a, const void *b)
{
	const struct census_entry *x = a, *y = b;

	return x->path < y->path ? -1 : x->path > y->path;
}

/*
 * Past the stack rate, the kept samples' weights (1 / p each) make an
 * unbiased estimate of every function's bytes, but of the total too, with
 * the variance of the coin tosses.  The census counted every sample past
 * the rate by size: scaled to it, per span path, the kept ones sum to the
 * same estimate as if every one had been kept (a ratio estimator: the
 * totals as tight as without thinning, each function's share as the kept
 * samples say).  A path none of whose samples was kept cannot be
 * attributed: its census goes under [throttled].  An incomplete census
 * (its table full) scales nothing.
 */
static int apply_census(struct session *s)
{
	static const uint64_t stack[] = { CULPERT_FRAME_THROTTLED };
	size_t i, j;

	if (s->counters[CULPERT_CNT_CENSUS_FULL] || !s->n_census)
		return 0;
	qsort(s->census, s->n_census, sizeof(*s->census), census_cmp);
	for (i = 0; i < s->n_census; i = j) {
		double bytes = 0, kept;

		for (j = i; j < s->n_census && s->census[j].path == s->census[i].path; j++)
			bytes += sample_weight(s->census[j].size, s->o.rate) *
				 (double)s->census[j].count * (double)s->census[j].size;
		kept = aggregate__rescale(s->agg, s->census[i].path, 1);
		if (kept > 0) {
			aggregate__rescale(s->agg, s->census[i].path, bytes / kept);
			continue;
		}
		for (; i < j; i++) {
			struct agg_sample a = { .frames = stack, .n_frames = 1, .chain = UINT32_MAX,
						.path = s->census[i].path, .size = s->census[i].size,
						.count = s->census[i].count };

			s->throttled += s->census[i].count;
			if (aggregate__add_sample(s->agg, &a, s->o.rate) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Samples past the stack rate, counted in the kernel by exact size and
 * span path: unbiased here like any sample, under a [throttled] frame.
 * Those the kernel's table had no room for are known by number and bytes
 * only: they are unbiased at their mean size, outside any span.
 */
static int add_throttled(struct session *s)
{
	static const uint64_t stack[] = { CULPERT_FRAME_THROTTLED };
	uint64_t over = 0, over_bytes = 0;
	int err;

	err = bpfobj_proc__throttled(s->proc, add_throttled_path, s, &over, &over_bytes);
	if (!err)
		err = apply_census(s);
	if (err || !over)
		return err;
	s->throttled += over;
	s->throttled_over = over;
	return aggregate__add_sample(s->agg, &(struct agg_sample){ .frames = stack, .n_frames = 1,
					.chain = UINT32_MAX, .size = over_bytes / over,
					.count = over }, s->o.rate) < 0 ? -ENOMEM : 0;
}

static int add_commentf(struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int add_commentf(struct session *s, const char *fmt, ...)
{
	char buf[PATH_MAX + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return session__add_comment(s, buf);
}

/* "family:path"; comma-joined when a prefixed allocator is probed too: ",jemalloc(je_):path" */
static int add_allocator_comment(struct session *s)
{
	const struct alloc_plan *p = &s->plan;
	char buf[1024];
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < p->n_objects && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s%s%s%s:%s", i ? "," : "",
					p->objects[i].family, *p->objects[i].prefix ? "(" : "",
					p->objects[i].prefix, *p->objects[i].prefix ? ")" : "",
					p->objects[i].path);
	return add_commentf(s, "allocator=%s", buf);
}

/*
 * sampler=otel_memory (the period is then the in-process sampler's rate)
 * or sampler=uprobes, and with the former the objects whose probes fired
 */
static int add_sampler_comments(struct session *s)
{
	char buf[2048];
	size_t i, len = 0;
	int err;

	err = add_commentf(s, "sampler=%s", session__sampler(s));
	if (!s->otel.use)
		return err;
	buf[0] = '\0';
	for (i = 0; i < s->otel.n && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "",
					s->otel.objects[i].path);
	err |= add_commentf(s, "sampler.objects=%s", buf);
	err |= add_commentf(s, "sampler.rate_from=%s", s->rate_from);
	return err;
}

/* what this run did and what it could not see, for `culpert info` */
static int add_run_comments(struct session *s)
{
	const uint64_t *c = s->counters;
	int err = 0;

	err |= add_allocator_comment(s);
	err |= add_sampler_comments(s);
	err |= add_commentf(s, "probe_sites=%zu", s->n_sites);
	/* sampled allocations, where the file's samples are aggregated records */
	err |= add_commentf(s, "samples=%llu", (unsigned long long)s->samples);
	err |= add_commentf(s, "max_stacks=%zu", s->o.max_entries);
	err |= add_commentf(s, "aggregate_coarsened=%llu",
			    (unsigned long long)aggregate__coarsened(s->agg));
	err |= add_commentf(s, "aggregate_folded=%llu",
			    (unsigned long long)aggregate__folded(s->agg));
	err |= add_commentf(s, "nested_calls=%llu", (unsigned long long)c[CULPERT_CNT_NESTED]);
	err |= add_commentf(s, "probe_misses=%llu", (unsigned long long)s->misses);
	err |= add_commentf(s, "stack_rate=%llu", (unsigned long long)s->o.stack_rate);
	err |= add_commentf(s, "throttled_samples=%llu", (unsigned long long)s->throttled);
	err |= add_commentf(s, "throttled_overflow=%llu", (unsigned long long)s->throttled_over);
	err |= add_commentf(s, "thinned_samples=%llu", (unsigned long long)c[CULPERT_CNT_THINNED]);
	err |= add_commentf(s, "kept_weighted_samples=%llu", (unsigned long long)s->kept_scaled);
	err |= add_commentf(s, "census_overflow=%llu", (unsigned long long)c[CULPERT_CNT_CENSUS_FULL]);
	err |= add_commentf(s, "stack_errors=%llu", (unsigned long long)c[CULPERT_CNT_STACK_ERR]);
	err |= add_commentf(s, "span_overflow=%llu",
			    (unsigned long long)c[CULPERT_CNT_SPAN_OVERFLOW]);
	err |= add_commentf(s, "span_unmatched_exits=%llu",
			    (unsigned long long)c[CULPERT_CNT_SPAN_UNMATCHED]);
	/* names the kernel could not read (pages the program had not touched), read here */
	err |= add_commentf(s, "span_names_late=%llu", (unsigned long long)s->names_late);
	err |= add_commentf(s, "span_names_unresolved=%llu",
			    (unsigned long long)s->names_unresolved);
	if (s->fpchain)
		err |= add_commentf(s, "fp_broken_stacks=%llu", (unsigned long long)s->fp_broken);
	err |= mapview__comments(s->view, session__add_comment_cb, s);
	/* what an empty profile is explained with (proto/empty.h) */
	if (s->have_seen) {
		err |= add_commentf(s, "alloc_calls=%llu", (unsigned long long)s->seen.calls);
		err |= add_commentf(s, "alloc_bytes=%llu", (unsigned long long)s->seen.bytes);
		err |= add_commentf(s, "alloc_failed=%llu", (unsigned long long)s->seen.failed);
	}
	/* the live heap is of blocks seen allocated: what the process held before is not in it */
	if (s->o.inuse)
		err |= add_commentf(s, "inuse_covers=blocks allocated before attach are not included");
	if (s->go)
		err |= add_commentf(s, "target.runtime=go");
	if (s->pymalloc)
		err |= add_commentf(s, "target.pymalloc=objects of 512 bytes or less are not seen");
	if (s->unwinder) {
		err |= add_commentf(s, "unwind_errors=%llu",
				    (unsigned long long)s->unwind_stops[UNWIND_STOP_ERROR]);
		err |= add_commentf(s, "unwind_truncated=%llu",
				    (unsigned long long)s->unwind_stops[UNWIND_STOP_TRUNCATED]);
		err |= add_commentf(s, "stack_size=%u", s->o.stack_size ?: CULPERT_DEFAULT_STACK_COPY);
		err |= add_commentf(s, "stack_copied_bytes=%llu", (unsigned long long)s->stack_copied);
	}
	if (!s->live)
		return err ? -ENOMEM : 0;
	err |= add_commentf(s, "inuse=%s", bpfobj_inuse__name(bpfobj_proc__inuse(s->proc)));
	/* live blocks are what the kernel's table held at the end: lost free records cost nothing */
	err |= add_commentf(s, "inuse_live=kernel_table");
	err |= add_commentf(s, "inuse_untracked=%llu", (unsigned long long)session__untracked(s));
	err |= add_commentf(s, "inuse_returns_unseen=%llu",
			    (unsigned long long)c[CULPERT_CNT_RET_UNSEEN]);
	err |= add_commentf(s, "inuse_frees_missed=%llu", (unsigned long long)s->free_misses);
	/* records of frees and returns lost in the ring buffer: harmless since inuse_live=kernel_table */
	err |= add_commentf(s, "inuse_lost_frees=%llu", (unsigned long long)c[CULPERT_CNT_LOST_FREE]);
	err |= add_commentf(s, "inuse_lost_returns=%llu",
			    (unsigned long long)c[CULPERT_CNT_LOST_RET]);
	return err ? -ENOMEM : 0;
}

/*
 * The exact span totals (proto/totals.h), once detached; the names are
 * those read so far (session__write() reads them all first).  -ENODATA
 * when the calls seen could not be read; 0 or -errno.
 */
static int session__span_totals(struct session *s, struct span_totals *out)
{
	session__detach(s);
	if (!s->have_seen || s->o.no_exact)
		return -ENODATA;
	return span_totals_collect(s->proc, s->spans, &s->seen, out);
}

int session__span_totals_now(struct session *s, struct span_totals *out)
{
	/*
	 * The calls seen are read at detach, and over a shared object they are
	 * every process's: outside any span is not known here.
	 */
	static const struct culpert_calls_seen unknown;

	if (s->o.no_exact || s->otel.use)
		return -ENODATA;
	bpfobj__span_names(s->sampler, session_store_name, s);
	return span_totals_collect(s->proc, s->spans, &unknown, out);
}

/* the exact span totals as the profile carries them (proto/totals.h) */
static int add_totals_comments(struct session *s)
{
	struct span_totals t;
	int err = session__span_totals(s, &t);

	if (err == -ENODATA)
		return 0;
	if (err)
		return err;
	err = span_totals__comments(&t, session__add_comment_cb, s);
	span_totals__free(&t);
	return err;
}

/* what every profile of the session is written with */
static struct export_opts export_opts_of(const struct session *s)
{
	return (struct export_opts){
		.t = &s->t,
		.maps = mapview__maps(s->view),
		.hist = mapview__hist(s->view),
		.objs = s->objs,
		.rate = s->o.rate,
		.time_nanos = s->start_wall_ns,
		.symbolize = s->o.symbolize,
		.unwind = s->unwind == SESSION_UNWIND_DWARF ? "dwarf" : "fp",
		.kernel = features__get()->release,
		.spans = s->spans,
		.live = s->live,
	};
}

/* to path, or with path NULL into *buf */
static int session_write(struct session *s, const char *path, void **buf, size_t *len)
{
	struct export_opts eo = export_opts_of(s);
	int ret;

	session__detach(s);
	if (!s->run_comments)
		bpfobj__span_names(s->sampler, session_store_name, s);
	if (s->live)
		session_settle_live(s);
	eo.duration_nanos = (int64_t)(s->end_ns - s->start_ns);
	eo.end_mono_ns = s->end_ns;
	eo.lost = s->counters[CULPERT_CNT_LOST_RINGBUF];
	/* written once: a second write of the same session has them already */
	if (!s->run_comments) {
		ret = add_throttled(s);
		if (ret)
			return ret;
		ret = add_run_comments(s);
		if (!ret)
			ret = add_totals_comments(s);
		if (ret)
			return ret;
		s->run_comments = true;
	}
	eo.extra = (const char *const *)s->comments;
	eo.n_extra = s->n_comments;
	return path ? export_profile(s->agg, &eo, path) : export_profile_buf(s->agg, &eo, buf, len);
}

int session__write(struct session *s, const char *path)
{
	return session_write(s, path, NULL, NULL);
}

int session__write_buf(struct session *s, void **buf, size_t *len)
{
	return session_write(s, NULL, buf, len);
}

/*
 * While the capture goes on (the agent): the profile so far into *buf,
 * the probes left in.  Live blocks are this side's (records of frees
 * lost are counted: inuse_lost_frees); run comments are this profile's
 * only.
 */
size_t session__profile_need(const struct session *s)
{
	return export_profile_need(s->agg, s->live, s->o.symbolize);
}

void session__drop_symbolizer(struct session *s)
{
	symbolizer__free(s->sym);
	s->sym = NULL;
}

/*
 * The symbolizer of the profiles while the capture goes on: an object's
 * DWARF is read at the first profile that needs it, not at every one.  A
 * new executable mapping makes a new one, so that what a library brings
 * (or a lookup that failed, debuginfod) is looked for again.  NULL on
 * ENOMEM, or when not kept: the export makes its own.
 */
static struct symbolizer *session_symbolizer(struct session *s, bool keep)
{
	struct symbolizer_opts so = { .sz = sizeof(so) };
	uint64_t gen = mapview__generation(s->view);

	if (!keep || !s->o.symbolize)
		session__drop_symbolizer(s);
	if (!keep || !s->o.symbolize || (s->sym && s->sym_gen == gen))
		return s->sym;
	symbolizer__free(s->sym);
	s->sym = symbolizer__new(&so);
	s->sym_gen = gen;
	return s->sym;
}

int session__profile(struct session *s, const struct session_profile_opts *po, void **buf,
		     size_t *len)
{
	struct export_opts eo = export_opts_of(s);
	size_t keep = s->n_comments, i;
	int ret = 0;

	if (po->time_nanos)
		eo.time_nanos = po->time_nanos;
	eo.duration_nanos = po->duration_nanos;
	eo.end_mono_ns = clock_ns(CLOCK_MONOTONIC);
	eo.default_sample_type = po->default_sample_type;
	eo.span_labels_only = po->span_labels_only;
	eo.base = po->base;
	eo.n_base = po->n_base;
	eo.sym = session_symbolizer(s, po->keep_symbolizer);

	if (!s->detached)
		bpfobj_proc__counters(s->proc, s->counters);
	else
		eo.end_mono_ns = s->end_ns;
	bpfobj__span_names(s->sampler, session_store_name, s);
	eo.lost = s->counters[CULPERT_CNT_LOST_RINGBUF];
	for (i = 0; i < po->n_extra && !ret; i++)
		ret = session__add_comment(s, po->extra[i]);
	if (!ret)
		ret = add_run_comments(s);
	eo.extra = (const char *const *)s->comments;
	eo.n_extra = s->n_comments;
	if (!ret)
		ret = export_profile_buf(s->agg, &eo, buf, len);
	while (s->n_comments > keep)
		free(s->comments[--s->n_comments]);
	return ret;
}

int session__alloc_base(const struct session *s, struct export_base **out, size_t *n)
{
	const struct agg_entry *e = aggregate__entries(s->agg, n);
	struct export_base *b = malloc((*n ?: 1) * sizeof(*b));
	size_t i;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < *n; i++)
		b[i] = (struct export_base){ e[i].alloc_objects, e[i].alloc_space };
	*out = b;
	return 0;
}

static void warn_fp_broken(const struct session *s)
{
	const struct procmap *m = procmaps__find(mapview__maps(s->view), s->fp_broken_at - 1);
	struct elfobj *obj = m ? objcache__get(s->objs, m) : NULL;
	const struct elf_symbol *sym = NULL;
	char *name = NULL;
	uint64_t vaddr;

	if (obj && !elfobj__offset_to_vaddr(obj, s->fp_broken_at - 1 - m->start + m->offset, &vaddr))
		sym = elfobj__sym_by_addr(obj, vaddr);
	if (sym)
		name = demangle(sym->name, false);
	pr_warn("%llu of %llu frame-pointer stacks (%.1f%%) go through code without frame pointers "
		"(first: %s in %s): their frames above it are wrong or missing; --unwind dwarf "
		"follows the CFI instead\n", (unsigned long long)s->fp_broken,
		(unsigned long long)s->samples, s->samples ? 100.0 * (double)s->fp_broken / (double)s->samples : 0,
		name ? name : "?", m ? m->path : "?");
	free(name);
}

void session__warn_losses(const struct session *s)
{
	const uint64_t *c = s->counters;

	if (s->misses)
		pr_warn("the kernel skipped %llu probe hits (another BPF program was running on the CPU)%s\n",
			(unsigned long long)s->misses,
			s->free_misses ? ", frees among them: blocks still live in the profile may have been "
					 "freed" : "");
	if (s->live && c[CULPERT_CNT_RET_UNSEEN])
		pr_info("%llu sampled calls threw or returned where no probe saw it: their blocks are "
			"not in the live heap\n", (unsigned long long)c[CULPERT_CNT_RET_UNSEEN]);
	if (s->live_syncs)
		pr_info("the live table was reconciled with the kernel's %llu times (records of frees "
			"were lost)\n", (unsigned long long)s->live_syncs);
	if (session__untracked(s))
		pr_warn("%llu sampled blocks were not tracked for --inuse because the live table was full: "
			"raise --max-live\n", (unsigned long long)session__untracked(s));
	if (session__lost(s))
		pr_warn("%llu samples were lost because the ring buffer was full: "
			"raise --ringbuf-size or --rate\n", (unsigned long long)session__lost(s));
	if (aggregate__coarsened(s->agg))
		pr_warn("%llu samples lost their thread_id and span_id labels (kept: stack, span path, "
			"bytes): more (stack, thread, span) keys than --max-stacks %zu\n",
			(unsigned long long)aggregate__coarsened(s->agg), s->o.max_entries);
	if (aggregate__folded(s->agg))
		pr_warn("%llu samples kept only their leaf under [folded] (or [unknown stack]): more "
			"distinct stacks than --max-stacks %zu; raise it\n",
			(unsigned long long)aggregate__folded(s->agg), s->o.max_entries);
	if (s->fp_broken)
		warn_fp_broken(s);
	if (c[CULPERT_CNT_THINNED] || s->kept_scaled)
		pr_warn("%llu samples came past the stack rate of %llu/s: a random %llu of them kept "
			"their stacks and weigh for the rest (--max-stack-rate; each function's bytes "
			"stay unbiased, with more variance: docs/profile-format.md, \"Throttling\")\n",
			(unsigned long long)(c[CULPERT_CNT_THINNED] + s->kept_scaled + s->throttled),
			(unsigned long long)s->o.stack_rate, (unsigned long long)s->kept_scaled);
	if (s->throttled)
		pr_warn("%llu samples came past the stack rate of %llu/s: their bytes are counted under "
			"[throttled], without their stacks (--max-stack-rate)%s\n",
			(unsigned long long)s->throttled, (unsigned long long)s->o.stack_rate,
			s->live ? "; they are not in the live heap" : "");
	if (s->names_unresolved)
		pr_warn("%llu span names could not be read (not in the process's memory nor in a file): "
			"their spans are '(unnamed span)'\n", (unsigned long long)s->names_unresolved);
	if (c[CULPERT_CNT_SPAN_NAMES_FULL])
		pr_warn("%llu spans were entered once the table of %d span names was full: their spans "
			"are '(unnamed span)'\n", (unsigned long long)c[CULPERT_CNT_SPAN_NAMES_FULL],
			CULPERT_MAX_SPAN_NAMES);
	if (c[CULPERT_CNT_SPAN_OVERFLOW])
		pr_warn("%llu spans were entered deeper than %d open spans on their thread: their "
			"allocations went to the %dth, the span tree below it is incomplete (span_overflow)\n",
			(unsigned long long)c[CULPERT_CNT_SPAN_OVERFLOW], CULPERT_MAX_SPAN_DEPTH,
			CULPERT_MAX_SPAN_DEPTH);
}
