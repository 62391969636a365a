/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One capture of one process: the target, its mappings and objects, the
 * probe plan, the attached sampler and the aggregate the records go to.
 * `attach` and `capture` are thin commands over this.
 */
#ifndef CULPERT_SESSION_H
#define CULPERT_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct session;
struct span_totals;

enum session_unwind {
	SESSION_UNWIND_AUTO,		/* fp where the executable keeps frame pointers, else dwarf */
	SESSION_UNWIND_FP,
	SESSION_UNWIND_DWARF,
};

/*
 * The unwinding auto chooses for a process, with the evidence in a
 * sentence for `probes` and -v.  0 or -errno.
 */
struct target;
struct procmaps;
struct objcache;
int session_unwind__choose(const struct target *t, const struct procmaps *maps,
			   struct objcache *objs, enum session_unwind want, enum session_unwind *out,
			   char *why, size_t len);

struct session_opts {
	pid_t pid;
	uint64_t rate;
	unsigned int max_depth;
	const char *allocator;		/* "auto", a family, or a symbol prefix */
	bool symbolize;
	bool no_multi;			/* force perf-event uprobes */
	bool no_session;		/* entry + return probes even where sessions exist */
	bool no_exact;			/* --no-exact: no exact span totals */
	char *const *span_fns;		/* --span-fn patterns */
	size_t n_span_fns;
	size_t max_span_fns;
	size_t ringbuf_bytes;		/* 0: by unwinding, see session.c */
	size_t max_entries;		/* aggregate keys */
	bool inuse;			/* --inuse: live heap and ages */
	enum session_unwind unwind;	/* --unwind */
	unsigned int stack_size;	/* --stack-size: bytes copied per sample for DWARF */
	size_t max_live;		/* --max-live */
	uint64_t stack_rate;		/* --max-stack-rate: stack captures per second (0: no limit) */
};

enum session_end {
	SESSION_END_DURATION,
	SESSION_END_SIGNAL,
	SESSION_END_TARGET_EXIT,
	SESSION_END_TARGET_EXEC,	/* another program now: the capture ends before it */
};

/* attach; 0 or -errno with the user-facing reason in err */
int session__open(const struct session_opts *o, struct session **out, char *err, size_t errlen);
/* sample until duration_ns (0 = no limit) passes, *stop is set, or the target exits */
int session__run(struct session *s, uint64_t duration_ns, volatile sig_atomic_t *stop,
		 enum session_end *why);
/* detach and drain what is queued; idempotent */
void session__detach(struct session *s);
/* one more "key=value" comment for the profile (copied); 0 or -errno */
int session__add_comment(struct session *s, const char *comment);
/* the same, for callbacks of type int (*)(void *ctx, const char *comment) */
int session__add_comment_cb(void *session, const char *comment);
/* write the profile; 0 or -errno */
int session__write(struct session *s, const char *path);
uint64_t session__samples(const struct session *s);
/* once detached: the allocator calls the probes saw and their bytes; false if unknown */
bool session__calls_seen(const struct session *s, uint64_t *calls, uint64_t *bytes);
/*
 * The exact span totals (proto/totals.h), once detached; the names are
 * those read so far (session__write() reads them all first).  -ENODATA
 * when the calls seen could not be read; 0 or -errno.
 */
int session__span_totals(struct session *s, struct span_totals *out);
/* the target runs a Go program (exe_kind.h) */
bool session__is_go(const struct session *s);
/* from attach to detach */
uint64_t session__duration_ns(const struct session *s);
uint64_t session__lost(const struct session *s);
/*
 * --inuse: the estimated live heap and its standard error.  The variance
 * of the unbiased estimate is sum size^2 w (w - 1) over the live samples
 * (w = 1 / P(sampled)).  Detaches first.  -ENODATA without --inuse.
 */
int session__live_heap(struct session *s, double *bytes, double *stderr_bytes);
/*
 * --inuse: fn(ctx, size, weight) for each sampled block of that estimate
 * (requested size, w = 1 / P(sampled)), for sums the allocator's rounding
 * needs (decompose.h).  Detaches first.  -ENODATA without --inuse.
 */
int session__live_each(struct session *s, void (*fn)(void *ctx, uint64_t size, double weight),
		       void *ctx);
/* one warning line on stderr for each way the capture is incomplete, with what to do */
void session__warn_losses(const struct session *s);
/* --inuse: sampled blocks not tracked (live table full) */
uint64_t session__untracked(const struct session *s);
size_t session__n_sites(const struct session *s);
/* culpert:span_* USDT sites found (and attached) */
size_t session__n_span_sites(const struct session *s);
/* functions matched by --span-fn */
size_t session__n_span_fns(const struct session *s);
const char *session__comm(const struct session *s);
pid_t session__pid(const struct session *s);
void session__close(struct session *s);

#endif /* CULPERT_SESSION_H */
