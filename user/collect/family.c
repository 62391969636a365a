// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpfobj.h"
#include "clock.h"
#include "discover.h"
#include "family.h"
#include "log.h"
#include "otel.h"
#include "pprof.h"
#include "session.h"
#include "vec.h"

/* a stack copy per sample unless told fp: whichever way each process's unwinding goes */
#define FAMILY_RINGBUF_FP	(2 << 20)
#define FAMILY_RINGBUF_DWARF	(8 << 20)
/* the /proc walk that finds what the fork events missed (a full ring), in ms */
#define RESCAN_MS		1000
/*
 * Children gone whose profiles wait for a quiet moment: writing one
 * (symbolizing it) takes ~100 ms, in which a fork would wait for its
 * probes.  Past this many, one is written anyway.
 */
#define MAX_PENDING		16

struct member {
	struct session *s;	/* NULL once its profile is in buf */
	pid_t pid;
	char comm[32];
	void *buf;		/* its profile, gzip'd, once written */
	size_t len;
	uint64_t samples, lost;
	bool ended;		/* exited or exec'd: its profile is written when the loop is idle */
};

struct family {
	struct session_opts o;
	struct bpfobj *obj;
	struct discover *disc;
	struct member *v;	/* v[0] is the --pid given */
	size_t n, cap;
	int epfd;
	bool root_execed;
	char root_exe[PATH_MAX];	/* what the first process runs: its forks run it too */
	uint64_t root_mnt_ns;		/* and where: the files its objects came from */
	uint64_t missed;	/* children gone before their probes were in */
	uint64_t failed;	/* children whose probes could not go in */
	uint64_t full;		/* children past the processes one object serves */
	char failure[512];	/* the first failure's reason */
	uint64_t lag_max_ns, lag_sum_ns, lag_n;	/* fork to probes in, for children seen forking */
	uint64_t events;	/* fork, exec and exit events handled: the loop is not idle */
	struct culpert_calls_seen seen;
	bool have_seen;
};

/* /proc/PID/exe, "" when it cannot be read */
static void exe_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

/* the inode of /proc/PID/ns/mnt, 0 when it cannot be read */
static uint64_t mnt_ns(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

static bool same_program(const struct family *f, pid_t pid)
{
	char exe[PATH_MAX];
	uint64_t ns = mnt_ns(pid);

	exe_of(pid, exe, sizeof(exe));
	return exe[0] && !strcmp(exe, f->root_exe) && ns && ns == f->root_mnt_ns;
}

static struct member *find_live(const struct family *f, pid_t pid)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->v[i].s && f->v[i].pid == pid)
			return &f->v[i];
	return NULL;
}

static size_t n_live(const struct family *f)
{
	size_t i, n = 0;

	for (i = 0; i < f->n; i++)
		n += f->v[i].s != NULL;
	return n;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct member *m = find_live(ctx, (pid_t)bpfobj_record_tgid(data, size));
	int ret = m ? session__on_event(m->s, data, size) : 0;

	/* out of memory in one process's aggregate is that process's: the others go on */
	return ret == -ENOMEM ? 0 : ret;
}

static void finish_member(struct family *f, struct member *m);

/*
 * A child: its own session over the shared object.  fork_ns (CLOCK_BOOTTIME)
 * is when it was forked when a fork event said so, for the lag until its
 * probes were in; 0 for one found in /proc.  0 or -errno (attach's own
 * failure for the first process).
 */
static int add_member(struct family *f, pid_t pid, uint64_t fork_ns, char *err, size_t errlen)
{
	struct session_opts o = f->o;
	struct member *m;
	char why[512], exe[PATH_MAX];
	struct session *s;
	int ret;

	m = find_live(f, pid);
	/* the pid again, a new process: the old one's profile first */
	if (m && m->ended)
		finish_member(f, m);
	else if (m)
		return 0;
	if (f->n && n_live(f) >= CULPERT_MAX_PROCS) {
		f->full++;
		return 0;
	}
	if (vec_reserve(&f->v, &f->cap, f->n + 1, sizeof(*f->v)))
		return -ENOMEM;
	/* before its probes: a fork of it is then reported, however soon it comes */
	if (discover__track(f->disc, pid))
		pr_debug("cannot watch pid %d for forks: its children are found by the /proc walk\n",
			 (int)pid);
	o.pid = pid;
	/*
	 * A fork runs its parent's code from the same files: the first
	 * process's unwinding choice holds for it, and its objects are parsed
	 * already.  Judging again (every object's frame pointers) and parsing
	 * again would take a short-lived child's whole life; another program,
	 * or one in another mount namespace, has its own.
	 */
	if (f->n && same_program(f, pid)) {
		o.unwind = session__unwind(f->v[0].s);
		o.objs = session__objs(f->v[0].s);
	}
	ret = session__open_shared(&o, f->obj, &s, f->n ? why : err, f->n ? sizeof(why) : errlen);
	if (ret && !f->n)
		return ret;
	if (ret) {
		uint64_t start;

		discover__untrack(f->disc, pid);
		/*
		 * Gone by now, whatever the step that met it, or on its way out
		 * (its exe link goes with its memory): it exited, not failed
		 */
		exe_of(pid, exe, sizeof(exe));
		if (ret == -ESRCH || proc_start_ticks(pid, true, &start) || !exe[0]) {
			f->missed++;
			pr_info("child pid %d exited before its probes were in\n", (int)pid);
		} else if (!f->failed++) {
			snprintf(f->failure, sizeof(f->failure), "%s", why);
		}
		return 0;
	}
	f->v[f->n] = (struct member){ .s = s, .pid = session__pid(s) };
	snprintf(f->v[f->n].comm, sizeof(f->v[f->n].comm), "%s", session__comm(s));
	if (fork_ns) {
		uint64_t lag = clock_ns(CLOCK_BOOTTIME) - fork_ns;

		f->lag_sum_ns += lag;
		f->lag_n++;
		if (lag > f->lag_max_ns)
			f->lag_max_ns = lag;
	}
	if (f->n)
		pr_info("following child pid %d (%s): %zu probe sites\n", (int)pid, session__comm(s),
			session__n_sites(s));
	f->n++;
	return 0;
}

/* a child gone (or another program now): its profile, its kernel state freed */
static void finish_member(struct family *f, struct member *m)
{
	int ret = session__write_buf(m->s, &m->buf, &m->len);

	if (ret)
		pr_warn("the profile of child pid %d (%s) is lost: %s\n", (int)m->pid, m->comm,
			strerror(-ret));
	m->samples = session__samples(m->s);
	m->lost = session__lost(m->s);
	discover__untrack(f->disc, m->pid);
	session__close(m->s);
	m->s = NULL;
}

/* opened without holding: held is never set */
static void on_discover(void *ctx, enum discover_what what, pid_t pid, uint64_t start_ticks,
			uint64_t time_ns, bool held)
{
	struct family *f = ctx;
	struct member *m;
	char err[8];

	f->events++;
	if (what == DISCOVERED_FORK) {
		if (add_member(f, pid, time_ns, err, sizeof(err)) == -ENOMEM)
			pr_warn("out of memory: child pid %d is not followed\n", (int)pid);
		return;
	}
	/* every exec on the machine comes here: only ours matter */
	m = find_live(f, pid);
	if (!m)
		return;
	if (m == &f->v[0]) {
		f->root_execed = what == DISCOVERED_EXEC;
		return;
	}
	m->ended = true;
}

struct scan_ctx {
	struct family *f;
	pid_t *found;
	size_t n, cap;
};

static void add_found(void *ctx, pid_t pid)
{
	struct scan_ctx *c = ctx;
	uint64_t start;
	size_t i;

	/* a zombie waiting for its parent is not a process to attach to */
	if (proc_start_ticks(pid, true, &start))
		return;
	for (i = 0; i < c->n; i++)
		if (c->found[i] == pid)
			return;
	if (!vec_reserve(&c->found, &c->cap, c->n + 1, sizeof(*c->found)))
		c->found[c->n++] = pid;
}

/* every descendant of the live members, children first; the ones not followed yet added */
static void rescan(struct family *f)
{
	struct scan_ctx c = { .f = f };
	size_t i;
	char err[8];

	for (i = 0; i < f->n; i++)
		if (f->v[i].s)
			add_found(&c, f->v[i].pid);
	/* found grows as the walk goes: grandchildren are walked too */
	for (i = 0; i < c.n; i++)
		proc_children(c.found[i], add_found, &c);
	for (i = 0; i < c.n; i++)
		if (add_member(f, c.found[i], 0, err, sizeof(err)) == -ENOMEM)
			break;
	free(c.found);
}

pid_t *family_descendants(pid_t pid, size_t *n)
{
	struct scan_ctx c = { 0 };
	size_t i;

	proc_children(pid, add_found, &c);
	for (i = 0; i < c.n; i++)
		proc_children(c.found[i], add_found, &c);
	*n = c.n;
	return c.found;
}

size_t family_describe(pid_t pid, char *buf, size_t len)
{
	size_t n, i, at = 0;
	pid_t *v = family_descendants(pid, &n);
	char path[64], comm[32];
	FILE *fp;

	buf[0] = '\0';
	for (i = 0; i < n && at < len; i++) {
		if (i == FAMILY_DESCRIBE_MAX) {
			snprintf(buf + at, len - at, " and %zu more", n - i);
			break;
		}
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)v[i]);
		comm[0] = '\0';
		fp = fopen(path, "re");
		if (fp) {
			if (!fgets(comm, sizeof(comm), fp))
				comm[0] = '\0';
			fclose(fp);
		}
		comm[strcspn(comm, "\n")] = '\0';
		at += (size_t)snprintf(buf + at, len - at, "%s%d (%s)", i ? ", " : "", (int)v[i],
				       comm[0] ? comm : "?");
	}
	free(v);
	return n;
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int family__open(const struct session_opts *o, struct family **out, char *err, size_t errlen)
{
	struct bpfobj_opts so = { 0 };
	struct family *f = calloc(1, sizeof(*f));
	int ret;

	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->o = *o;
	f->epfd = -1;
	so.rate = o->rate;
	so.max_depth = o->max_depth;
	so.ringbuf_bytes = o->ringbuf_bytes ?: o->unwind == SESSION_UNWIND_FP ? FAMILY_RINGBUF_FP :
									 FAMILY_RINGBUF_DWARF;
	so.no_multi = o->no_multi;
	so.no_session = o->no_session;
	so.no_exact = o->no_exact;
	so.track_inuse = o->inuse;
	so.unwind_dwarf = o->unwind != SESSION_UNWIND_FP;
	so.stack_copy_bytes = o->stack_size;
	so.max_live = o->max_live;
	so.stack_rate = o->stack_rate;
	so.max_procs = CULPERT_MAX_PROCS;
	so.otel_progs = o->sampler != OTEL_MODE_UPROBES;
	so.on_event = on_record;
	so.ctx = f;
	ret = bpfobj__open(&so, &f->obj, err, errlen);
	if (!ret && !(f->disc = discover__open(CULPERT_MAX_PROCS, false, on_discover, f, err, errlen)))
		ret = -EINVAL;
	if (!ret) {
		f->epfd = epoll_create1(EPOLL_CLOEXEC);
		ret = f->epfd < 0 ? -errno : epoll_add(f->epfd, bpfobj__fd(f->obj));
		ret = ret ?: epoll_add(f->epfd, discover__fd(f->disc));
		if (ret)
			snprintf(err, errlen, "cannot wait for records: %s", strerror(-ret));
	}
	ret = ret ?: add_member(f, o->pid, 0, err, errlen);
	if (!ret) {
		exe_of(f->v[0].pid, f->root_exe, sizeof(f->root_exe));
		f->root_mnt_ns = mnt_ns(f->v[0].pid);
	}
	if (ret) {
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		family__close(f);
		return ret;
	}
	/* the fork events of the first process are on before this walk: no child falls between */
	rescan(f);
	pr_info("following pid %d (%s) and %zu descendants\n", (int)f->v[0].pid, f->v[0].comm,
		f->n - 1);
	*out = f;
	return 0;
}

int family__run(struct family *f, uint64_t duration_ns, volatile sig_atomic_t *stop,
		enum session_end *why)
{
	uint64_t start = clock_ns(CLOCK_MONOTONIC), last_scan = start, now;
	struct epoll_event ev[2];
	size_t i;
	int n;

	for (;;) {
		uint64_t events = f->events;
		size_t pending = 0, oldest = 0;

		for (i = f->n; i-- > 1;)
			if (f->v[i].s && f->v[i].ended) {
				pending++;
				oldest = i;
			}
		epoll_wait(f->epfd, ev, 2, pending ? 10 : 100);
		/* forks first: a child's probes go in before the records of the others are read */
		discover__consume(f->disc);
		n = bpfobj__poll(f->obj, 0);
		if (n < 0) {
			pr_warn("stopped consuming samples: %s\n", strerror(-n));
			*why = SESSION_END_SIGNAL;
			break;
		}
		/* quiet (no fork, exit or exec came), or too many waiting: one profile written */
		if (pending && (f->events == events || pending > MAX_PENDING) && f->v[oldest].s)
			finish_member(f, &f->v[oldest]);
		for (i = 1; i < f->n; i++) {
			if (!f->v[i].s || f->v[i].ended)
				continue;
			session__sync_maps(f->v[i].s);
			if (!f->v[i].ended && session__ended(f->v[i].s, why))
				f->v[i].ended = true;
		}
		session__sync_maps(f->v[0].s);
		if (f->root_execed) {
			*why = SESSION_END_TARGET_EXEC;
			break;
		}
		if (session__ended(f->v[0].s, why))
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (*stop) {
			*why = SESSION_END_SIGNAL;
			break;
		}
		if (duration_ns && now - start >= duration_ns) {
			*why = SESSION_END_DURATION;
			break;
		}
		if (now - last_scan >= RESCAN_MS * 1000000ULL) {
			rescan(f);
			last_scan = now;
		}
	}
	for (i = 0; i < f->n; i++)
		if (f->v[i].s)
			session__detach(f->v[i].s);
	return 0;
}

struct session *family__root(const struct family *f)
{
	return f->v[0].s;
}

/* --- the merged profile ------------------------------------------------------------ */

/* counters each process's profile has of its own: summed; the rest are the first process's */
static const char *const summed_keys[] = {
	"samples", "lost_samples", "aggregate_coarsened", "aggregate_folded", "nested_calls",
	"throttled_samples", "throttled_overflow", "thinned_samples", "kept_weighted_samples",
	"census_overflow", "stack_errors", "span_overflow",
	"span_unmatched_exits", "span_names_late", "span_names_unresolved", "fp_broken_stacks",
	"unwind_errors", "unwind_truncated", "stack_copied_bytes", "inuse_untracked",
	"inuse_returns_unseen", "inuse_lost_frees", "inuse_lost_returns", "mappings_forgotten",
	"mappings_lost_records", "probe_sites",
};

struct merger {
	struct pprof_writer *w;
	uint64_t *loc_ids;	/* the input's location index -> the output's id (0: not yet) */
	const struct pprof_profile *p;
	int64_t pid_key, comm_key, comm;
	int64_t pid;
};

static int64_t out_str(struct merger *x, int64_t i)
{
	return i ? pprof_writer__str(x->w, pprof_profile__str(x->p, i)) : 0;
}

static uint64_t out_location(struct merger *x, uint64_t id)
{
	const struct pprof_profile *p = x->p;
	const struct pprof_location *l = pprof_profile__location(p, id);
	const struct pprof_mapping *m;
	struct pprof_line lines[64];
	uint64_t map_id = 0;
	size_t i, k, n;

	if (!l)
		return 0;
	k = (size_t)(l - p->locations);
	if (x->loc_ids[k])
		return x->loc_ids[k];
	m = pprof_profile__mapping(p, l->mapping_id);
	if (m) {
		struct pprof_mapping_desc d = {
			.memory_start = m->memory_start, .memory_limit = m->memory_limit,
			.file_offset = m->file_offset,
			.filename = pprof_profile__str(p, m->filename),
			.build_id = pprof_profile__str(p, m->build_id),
			.has_functions = m->has_functions, .has_filenames = m->has_filenames,
			.has_line_numbers = m->has_line_numbers,
			.has_inline_frames = m->has_inline_frames,
		};

		map_id = pprof_writer__add_mapping(x->w, &d);
		if (!map_id)
			return 0;
	}
	n = l->n_lines < 64 ? l->n_lines : 64;
	for (i = 0; i < n; i++) {
		const struct pprof_line *in = &p->lines[l->line_off + i];
		const struct pprof_function *fn = pprof_profile__function(p, in->function_id);

		lines[i] = *in;
		lines[i].function_id = fn ? pprof_writer__add_function(x->w,
					   pprof_profile__str(p, fn->name),
					   pprof_profile__str(p, fn->system_name),
					   pprof_profile__str(p, fn->filename), fn->start_line) : 0;
		if (fn && !lines[i].function_id)
			return 0;
	}
	x->loc_ids[k] = pprof_writer__add_location(x->w, map_id, l->address, lines, n);
	return x->loc_ids[k];
}

/* one process's samples into the output, each with its pid and comm */
static int merge_samples(struct merger *x)
{
	const struct pprof_profile *p = x->p;
	uint64_t *ids = NULL;
	struct pprof_label *labels = NULL;
	size_t i, j, cap_ids = 0, cap_labels = 0;
	int err = 0;

	for (i = 0; i < p->n_samples && !err; i++) {
		const struct pprof_sample *s = &p->samples[i];

		if (vec_reserve(&ids, &cap_ids, s->n_locs + 1, sizeof(*ids)) ||
		    vec_reserve(&labels, &cap_labels, s->n_labels + 2, sizeof(*labels))) {
			err = -ENOMEM;
			break;
		}
		for (j = 0; j < s->n_locs && !err; j++)
			if (!(ids[j] = out_location(x, p->loc_ids[s->loc_off + j])))
				err = -ENOMEM;
		for (j = 0; j < s->n_labels; j++) {
			const struct pprof_label *l = &p->labels[s->label_off + j];

			labels[j] = (struct pprof_label){ .key = out_str(x, l->key),
							  .str = out_str(x, l->str), .num = l->num,
							  .num_unit = out_str(x, l->num_unit) };
		}
		labels[j] = (struct pprof_label){ .key = x->pid_key, .num = x->pid };
		labels[j + 1] = (struct pprof_label){ .key = x->comm_key, .str = x->comm };
		if (!err)
			err = pprof_writer__add_sample(x->w, ids, s->n_locs,
						       &p->values[i * p->n_sample_types], labels,
						       s->n_labels + 2);
	}
	free(ids);
	free(labels);
	return err;
}

static bool is_summed(const char *comment, size_t *which)
{
	size_t i, n;

	for (i = 0; i < sizeof(summed_keys) / sizeof(summed_keys[0]); i++) {
		n = strlen(summed_keys[i]);
		if (!strncmp(comment, summed_keys[i], n) && comment[n] == '=') {
			*which = i;
			return true;
		}
	}
	return false;
}

/* the first process's comments, its counters summed over every process, then the family's */
static int merge_comments(struct pprof_writer *w, struct pprof_profile **in, size_t n,
			  const struct family *f)
{
	uint64_t sums[sizeof(summed_keys) / sizeof(summed_keys[0])] = { 0 };
	bool have[sizeof(summed_keys) / sizeof(summed_keys[0])] = { 0 };
	char buf[256];
	size_t i, j, k;
	int err = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < in[i]->n_comments; j++) {
			const char *c = pprof_profile__str(in[i], in[i]->comments[j]);

			if (is_summed(c, &k)) {
				sums[k] += strtoull(strchr(c, '=') + 1, NULL, 10);
				have[k] = true;
			} else if (!i && !err) {
				err = pprof_writer__add_comment(w, c);
			}
		}
	for (k = 0; k < sizeof(summed_keys) / sizeof(summed_keys[0]) && !err; k++) {
		if (!have[k])
			continue;
		snprintf(buf, sizeof(buf), "%s=%llu", summed_keys[k], (unsigned long long)sums[k]);
		err = pprof_writer__add_comment(w, buf);
	}
#define COMMENT(...)								\
	do {									\
		snprintf(buf, sizeof(buf), __VA_ARGS__);			\
		err = err ?: pprof_writer__add_comment(w, buf);			\
	} while (0)
	COMMENT("children=followed");
	COMMENT("processes=%zu", n);
	COMMENT("children_missed=%llu", (unsigned long long)f->missed);
	COMMENT("children_failed=%llu", (unsigned long long)(f->failed + f->full));
	if (f->lag_n)
		COMMENT("children_attach_lag_max_us=%llu", (unsigned long long)(f->lag_max_ns / 1000));
	/* over every process: the hot states are the object's, shared by all of them */
	if (f->have_seen) {
		COMMENT("alloc_calls=%llu", (unsigned long long)f->seen.calls);
		COMMENT("alloc_bytes=%llu", (unsigned long long)f->seen.bytes);
	}
#undef COMMENT
	return err;
}

static struct pprof_writer *writer_like(const struct pprof_profile *p)
{
	const char *names[8], *units[8];
	struct pprof_writer_opts wo = {
		.sz = sizeof(wo),
		.n_sample_types = p->n_sample_types < 8 ? p->n_sample_types : 8,
		.sample_type_names = names,
		.sample_type_units = units,
		.period_type = pprof_profile__str(p, p->period_type.type),
		.period_unit = pprof_profile__str(p, p->period_type.unit),
		.period = p->period,
		.time_nanos = p->time_nanos,
		.duration_nanos = p->duration_nanos,
	};
	size_t i;

	for (i = 0; i < wo.n_sample_types; i++) {
		names[i] = pprof_profile__str(p, p->sample_types[i].type);
		units[i] = pprof_profile__str(p, p->sample_types[i].unit);
	}
	if (p->default_sample_type)
		wo.default_sample_type = pprof_profile__str(p, p->default_sample_type);
	return pprof_writer__new(&wo);
}

static int merge_one(struct pprof_writer *w, const struct pprof_profile *p, const struct member *m)
{
	struct merger x = { .w = w, .p = p, .pid = m->pid };
	int err;

	x.loc_ids = calloc(p->n_locations ?: 1, sizeof(*x.loc_ids));
	x.pid_key = pprof_writer__str(w, "pid");
	x.comm_key = pprof_writer__str(w, "comm");
	x.comm = pprof_writer__str(w, m->comm);
	err = x.loc_ids && x.pid_key > 0 && x.comm_key > 0 && x.comm >= 0 ? 0 : -ENOMEM;
	/* sample types are the same in every profile of the capture (one set of options) */
	if (!err && p->n_sample_types != pprof_writer__profile(w)->n_sample_types)
		err = -EINVAL;
	err = err ?: merge_samples(&x);
	free(x.loc_ids);
	return err;
}

int family__write(struct family *f, const char *path)
{
	struct pprof_profile **in = calloc(f->n ?: 1, sizeof(*in));
	struct pprof_writer *w = NULL;
	char why[256];
	size_t i, n = 0;
	int err = in ? 0 : -ENOMEM;

	for (i = 1; i < f->n && !err; i++)
		if (f->v[i].s)
			finish_member(f, &f->v[i]);
	/* the first process stays open: its picture, its pid and comm are the command's */
	if (!err && !f->v[0].buf) {
		err = session__write_buf(f->v[0].s, &f->v[0].buf, &f->v[0].len);
		f->v[0].samples = session__samples(f->v[0].s);
		f->v[0].lost = session__lost(f->v[0].s);
	}
	f->have_seen = !err && !bpfobj__calls_seen(f->obj, &f->seen);
	for (i = 0; i < f->n && !err; i++) {
		if (!f->v[i].buf)
			continue;
		in[n] = pprof_decode_gzip(f->v[i].buf, f->v[i].len, why, sizeof(why));
		if (!in[n]) {
			pr_warn("the profile of pid %d cannot be merged: %s\n", (int)f->v[i].pid, why);
			continue;
		}
		if (!w && !(w = writer_like(in[n])))
			err = -ENOMEM;
		err = err ?: merge_one(w, in[n], &f->v[i]);
		n++;
	}
	err = err ?: merge_comments(w, in, n, f);
	err = err ?: pprof_writer__write(w, path);
	for (i = 0; i < n; i++)
		pprof_profile__free(in[i]);
	free(in);
	pprof_writer__free(w);
	return err;
}

uint64_t family__samples(const struct family *f)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < f->n; i++)
		n += f->v[i].samples;
	return n;
}

uint64_t family__lost(const struct family *f)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < f->n; i++)
		n += f->v[i].lost;
	return n;
}

bool family__calls_seen(const struct family *f, uint64_t *calls, uint64_t *bytes)
{
	*calls = f->seen.calls;
	*bytes = f->seen.bytes;
	return f->have_seen;
}

size_t family__processes(const struct family *f)
{
	return f->n;
}

void family__warn_losses(const struct family *f)
{
	session__warn_losses(f->v[0].s);
	if (f->missed)
		pr_warn("%llu child processes exited before their probes were in: they are not in "
			"the profile\n", (unsigned long long)f->missed);
	if (f->failed)
		pr_warn("%llu child processes could not be profiled (the first: %s)\n",
			(unsigned long long)f->failed, f->failure);
	if (f->full)
		pr_warn("%llu child processes were not followed: %d processes at once is the most "
			"one capture serves\n", (unsigned long long)f->full, CULPERT_MAX_PROCS);
	/* not a loss of the capture's, but the profile's limit: said every time */
	if (f->lag_n)
		fprintf(stderr, "culpert-bpf: %llu children forked while profiled had their probes "
			"in %.1f ms after the fork on average (at most %.1f ms): what they allocated "
			"before is not in the profile\n", (unsigned long long)f->lag_n,
			(double)f->lag_sum_ns / (double)f->lag_n / 1e6, (double)f->lag_max_ns / 1e6);
}

void family__close(struct family *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->n; i++) {
		session__close(f->v[i].s);
		free(f->v[i].buf);
	}
	free(f->v);
	discover__free(f->disc);
	if (f->epfd >= 0)
		close(f->epfd);
	bpfobj__free(f->obj);
	free(f);
}
