/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the agent's HTTP routes answer: /targets, /healthz, and
 * /debug/pprof/allocs and /heap (which target a request names, and its
 * profile from the collector); /metrics is metrics.c.  Everything here runs
 * on HTTP threads and sees the profiling thread's state only through
 * copies (targets.h) and the published counters below.
 */
#ifndef CULPERT_ENDPOINTS_H
#define CULPERT_ENDPOINTS_H

#include <pthread.h>
#include <stdint.h>

#include "collector.h"
#include "discover.h"
#include "http.h"
#include "targets.h"

struct agent_opts;
struct duty;
struct kubeapi;
struct pictures;

/* what the profiling thread publishes for /metrics and /healthz */
struct agent_stats {
	pthread_mutex_t lock;
	struct discover_counts discover;
	uint64_t rescans;
	int64_t loop_mono_ns;	/* the loop's last turn, CLOCK_MONOTONIC */
};

struct endpoints {
	struct targets *targets;
	const struct agent_opts *opts;
	struct http_server *http;	/* set once serving, for its counters */
	struct kubeapi *kube;		/* NULL without --kube-api */
	struct duty *duty;		/* the overhead budget: calibration, duty cycles */
	agent_profile_fn profile;	/* NULL: no collector, profiles answer 503 */
	void *profile_ctx;
	agent_state_fn state;		/* NULL: no collector; ctx profile_ctx */
	struct pictures *pictures;	/* the targets' memory pictures for /metrics */
	agent_span_totals_fn span_totals;	/* NULL: no collector, no span metrics */
	void *span_totals_ctx;
	struct agent_stats stats;
	int64_t start_unix_ns;
};

/* the routes; their order is the order of http_counts.requests */
extern const struct http_route agent_routes[];

/* the route names for /metrics, indexed as agent_routes; [n] is "other" */
const char *agent_route_name(size_t i);

/* the profiling thread is alive if its loop turned within this */
#define AGENT_HEALTHY_NS (5 * 1000000000LL)

/*
 * Which target a profile request names: pid=, container= (an id prefix)
 * and comm= together (all given must hold), live targets before exited
 * ones.  The HTTP status: 200 with *which set, 400, 404 or 409 with a JSON
 * error in out naming the candidates.
 */
unsigned int resolve_target(const struct agent_target *v, size_t n, const char *pid,
			    const char *container, const char *comm, size_t *which,
			    struct http_reply *out);

/* "2024-01-31T23:59:59.123Z" */
void format_rfc3339(char *buf, size_t len, int64_t unix_ns);

#endif /* CULPERT_ENDPOINTS_H */
