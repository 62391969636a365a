// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "agent.h"
#include "clock.h"
#include "duty.h"
#include "endpoints.h"
#include "kubeapi.h"
#include "log.h"
#include "memfmt.h"
#include "metrics.h"
#include "pictures.h"
#include "readfile.h"
#include "span_metrics.h"
#include "totals.h"

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(FILE *f, const char *name, const char *type, const char *help, double v)
{
	family(f, name, type, help);
	fprintf(f, "%s %.17g\n", name, v);
}

/* VmRSS of /proc/self/status, in bytes; 0 when it cannot be read */
static uint64_t own_rss(void)
{
	unsigned long long kb = 0;
	char *text, *p;

	if (read_file_at(AT_FDCWD, "/proc/self/status", &text, NULL))
		return 0;
	p = strstr(text, "\nVmRSS:");
	if (p)
		sscanf(p + 7, "%llu", &kb);
	free(text);
	return kb * 1024;
}

static void agent_process(FILE *f, struct endpoints *e)
{
	struct rusage ru;

	family(f, "culpert_agent_info", "gauge", "The agent's version; always 1.");
	fputs("culpert_agent_info{", f);
	memfmt_prom_label(f, "version", CULPERT_VERSION, false);
	fputs("} 1\n", f);
	one(f, "culpert_agent_profiling_available", "gauge",
	    "1 when the agent serves profiles (its collector is loaded).",
	    e->profile ? 1 : 0);
	one(f, "culpert_agent_start_time_seconds", "gauge", "When the agent started, Unix time.",
	    (double)e->start_unix_ns / 1e9);
	one(f, "culpert_agent_resident_memory_bytes", "gauge",
	    "The agent's resident memory (VmRSS).", (double)own_rss());
	getrusage(RUSAGE_SELF, &ru);
	family(f, "culpert_agent_cpu_seconds_total", "counter",
	       "CPU time the agent used, all its threads.");
	fprintf(f, "culpert_agent_cpu_seconds_total{mode=\"user\"} %ld.%06ld\n",
		(long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
	fprintf(f, "culpert_agent_cpu_seconds_total{mode=\"system\"} %ld.%06ld\n",
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
}

static void agent_targets(FILE *f, struct endpoints *e)
{
	struct targets_counters c;
	struct agent_stats st;

	targets__counters(e->targets, &c);
	family(f, "culpert_agent_targets", "gauge", "Targets now: live, and exited but kept.");
	fprintf(f, "culpert_agent_targets{state=\"live\"} %zu\n", c.live);
	fprintf(f, "culpert_agent_targets{state=\"exited\"} %zu\n", c.exited);
	one(f, "culpert_agent_max_targets", "gauge", "The --max-targets bound.",
	    (double)e->opts->max_targets);
	one(f, "culpert_agent_targets_picked_up_total", "counter", "Processes picked up.",
	    (double)c.picked_up);
	one(f, "culpert_agent_targets_dropped_total", "counter",
	    "Exited targets removed after --keep-exited, or to make room for a live one.",
	    (double)c.dropped);
	one(f, "culpert_agent_targets_refused_total", "counter",
	    "Matching processes not picked up because --max-targets live targets were there.",
	    (double)c.refused);
	pthread_mutex_lock(&e->stats.lock);
	st.discover = e->stats.discover;
	st.rescans = e->stats.rescans;
	pthread_mutex_unlock(&e->stats.lock);
	family(f, "culpert_agent_discovery_events_total", "counter",
	       "Kernel events read: every exec, and forks and exits of targets.");
	fprintf(f, "culpert_agent_discovery_events_total{kind=\"exec\"} %" PRIu64 "\n",
		st.discover.execs);
	fprintf(f, "culpert_agent_discovery_events_total{kind=\"fork\"} %" PRIu64 "\n",
		st.discover.forks);
	fprintf(f, "culpert_agent_discovery_events_total{kind=\"exit\"} %" PRIu64 "\n",
		st.discover.exits);
	one(f, "culpert_agent_discovery_lost_events_total", "counter",
	    "Kernel events dropped for a full ring buffer (the /proc rescan finds them).",
	    (double)st.discover.lost);
	one(f, "culpert_agent_rescans_total", "counter", "Walks of /proc.", (double)st.rescans);
}

static void agent_http(FILE *f, struct endpoints *e)
{
	struct http_counts c;
	char code[16];
	size_t r;
	int k;

	http__counts(e->http, &c);
	family(f, "culpert_agent_http_requests_total", "counter",
	       "HTTP requests answered, by route and status.");
	for (r = 0; r < 16; r++)
		for (k = 0; k < HTTP_STATUS_SLOTS; k++) {
			if (!c.requests[r][k])
				continue;
			if (http_status_of_slot(k))
				snprintf(code, sizeof(code), "%u", http_status_of_slot(k));
			else
				snprintf(code, sizeof(code), "other");
			fputs("culpert_agent_http_requests_total{", f);
			memfmt_prom_label(f, "path", agent_route_name(r), false);
			memfmt_prom_label(f, "code", code, true);
			fprintf(f, "} %" PRIu64 "\n", c.requests[r][k]);
		}
	one(f, "culpert_agent_auth_failures_total", "counter",
	    "Requests refused for a missing or wrong bearer token.", (double)c.auth_failures);
}

static void agent_kube(FILE *f, struct endpoints *e)
{
	struct kubeapi_counts k;

	if (!e->kube)
		return;
	kubeapi__counts(e->kube, &k);
	one(f, "culpert_agent_kube_api_requests_total", "counter",
	    "Pod lists asked of the Kubernetes API.", (double)k.requests);
	one(f, "culpert_agent_kube_api_failures_total", "counter",
	    "Pod lists that failed.", (double)k.failures);
	one(f, "culpert_agent_kube_api_pods", "gauge", "Pods of this node in the last list.",
	    (double)k.pods);
}

/* the labels every per-target series has, after pid and comm */
static void target_labels(FILE *f, const struct agent_target *t)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	memfmt_prom_label(f, "pid", pid, false);
	memfmt_prom_label(f, "comm", t->comm, true);
	memfmt_prom_label(f, "container_id", t->ci.id, true);
	memfmt_prom_label(f, "container", t->ci.container_name, true);
	memfmt_prom_label(f, "namespace", t->ci.pod_namespace, true);
	memfmt_prom_label(f, "pod", t->ci.pod_name, true);
	memfmt_prom_label(f, "state", t->exited_ns ? "exited" : "live", true);
}

static bool same_labels(const struct agent_target *a, const struct agent_target *b, bool info)
{
	const struct container_info *x = &a->ci, *y = &b->ci;

	if (!a->exited_ns != !b->exited_ns || strcmp(a->comm, b->comm) || strcmp(x->id, y->id) ||
	    strcmp(x->container_name, y->container_name) ||
	    strcmp(x->pod_namespace, y->pod_namespace) || strcmp(x->pod_name, y->pod_name))
		return false;
	return !info || (!strcmp(a->exe, b->exe) && !strcmp(x->runtime, y->runtime) &&
			 !strcmp(x->pod_uid, y->pod_uid) &&
			 !strcmp(x->service_name, y->service_name));
}

/*
 * A process that exec'd the same program twice leaves two exited targets
 * with one label set: only the newer one (later in v) is exported, a
 * series must not repeat.
 */
static bool shadowed(const struct agent_target *v, size_t n, size_t i, bool info)
{
	size_t j;

	for (j = i + 1; j < n && v[j].pid == v[i].pid; j++)
		if (same_labels(&v[i], &v[j], info))
			return true;
	return false;
}

static void target_info(FILE *f, const struct agent_target *v, size_t n)
{
	size_t i;

	family(f, "culpert_target_info", "gauge",
	       "One series per target, always 1: its program, container and pod.");
	for (i = 0; i < n; i++) {
		if (shadowed(v, n, i, true))
			continue;
		fputs("culpert_target_info{", f);
		target_labels(f, &v[i]);
		memfmt_prom_label(f, "exe", v[i].exe, true);
		memfmt_prom_label(f, "runtime", v[i].ci.runtime, true);
		memfmt_prom_label(f, "pod_uid", v[i].ci.pod_uid, true);
		memfmt_prom_label(f, "service_name", v[i].ci.service_name, true);
		fputs("} 1\n", f);
	}
	family(f, "culpert_target_picked_up_time_seconds", "gauge",
	       "When the agent picked the target up, Unix time.");
	for (i = 0; i < n; i++) {
		if (shadowed(v, n, i, false))
			continue;
		fputs("culpert_target_picked_up_time_seconds{", f);
		target_labels(f, &v[i]);
		fprintf(f, "} %.3f\n", (double)v[i].since_ns / 1e9);
	}
}

/* the budget's own figures: the calibration (once done) and the limit */
static void agent_budget(FILE *f, struct endpoints *e)
{
	struct budget_calibration cal;

	one(f, "culpert_agent_max_overhead_cpu_ratio", "gauge",
	    "--max-overhead: the budget of each target, a share of one CPU (0: no limit).",
	    e->opts->max_overhead_pct / 100);
	if (!e->duty || !duty__calibration(e->duty, &cal))
		return;
	/* seconds, not ns: promtool's lint refuses abbreviated units in a name */
	one(f, "culpert_agent_calibration_seconds_per_hit", "gauge",
	    "What one uprobe hit costs a process on this kernel, calibrated at start-up.",
	    cal.ns_per_hit / 1e9);
	one(f, "culpert_agent_calibration_seconds_per_stepped_hit", "gauge",
	    "What one hit costs on a probed instruction the kernel single-steps, calibrated.",
	    cal.step_ns / 1e9);
	one(f, "culpert_agent_calibration_seconds_per_return_hit", "gauge",
	    "What a return probe adds to an entry probe's hit, calibrated at start-up.",
	    cal.ret_ns / 1e9);
	if (cal.session_ns > 0)
		one(f, "culpert_agent_calibration_seconds_per_session_hit", "gauge",
		    "What a uprobe session's entry costs when it asks for no return, calibrated.",
		    cal.session_ns / 1e9);
	one(f, "culpert_agent_calibration_switch_cpu_seconds", "gauge",
	    "The CPU of one detach and re-attach of a uprobe, calibrated at start-up.",
	    cal.switch_ns / 1e9);
}

/* the live target of a duty view, or NULL (exited since, or shadowed) */
static const struct agent_target *target_of(const struct agent_target *v, size_t n,
					    const struct duty_view *d)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!v[i].exited_ns && v[i].pid == d->pid && v[i].start_ticks == d->start)
			return &v[i];
	return NULL;
}

static const struct duty_series {
	const char *name, *type, *help;
} duty_series[] = {
	{ "culpert_target_duty_ratio", "gauge",
	  "The duty chosen for the current period: share of it the allocation probes are on." },
	{ "culpert_target_estimated_overhead_cpu_ratio", "gauge",
	  "Estimated CPU the probes cost the target, a share of one CPU." },
	{ "culpert_target_probe_hits_per_second", "gauge",
	  "Probe hits per second while the probes were on, as last measured." },
	{ "culpert_target_alloc_probes_on", "gauge", "1 while the allocation probes are on." },
	{ "culpert_target_inuse_tracking", "gauge",
	  "1 while frees are followed (in-use); 0 once dropped for the budget." },
	{ "culpert_target_free_probes_on", "gauge",
	  "1 while the free probes are on; the budget switches them only when they alone "
	  "exceed it." },
	{ "culpert_target_seconds_per_hit", "gauge",
	  "What a probe hit costs the target, by the classes of the sites it hit, as last "
	  "measured." },
};

static void duty_line(FILE *f, size_t k, const struct agent_target *t, const char *probe,
		      double v)
{
	fprintf(f, "%s{", duty_series[k].name);
	target_labels(f, t);
	if (probe)
		memfmt_prom_label(f, "probe", probe, true);
	fprintf(f, "} %.17g\n", v);
}

static void duty_value(FILE *f, size_t k, const struct agent_target *t,
		       const struct duty_view *d)
{
	const double v[] = { d->duty, d->est_pct / 100, d->alloc_per_s, d->on, d->inuse,
			     d->inuse && d->free_on };

	if (k == 6) {
		duty_line(f, k, t, "alloc", d->alloc_ns / 1e9);
		if (d->inuse)
			duty_line(f, k, t, "free", d->free_ns / 1e9);
		return;
	}
	if (k != 2) {
		duty_line(f, k, t, NULL, v[k]);
		return;
	}
	duty_line(f, k, t, "alloc", d->alloc_per_s);
	if (d->inuse)
		duty_line(f, k, t, "free", d->free_per_s);
}

/* each live target's duty cycle; the rates and the estimate once measured */
static int target_budget(FILE *f, struct endpoints *e, const struct agent_target *v, size_t n)
{
	const struct agent_target *t;
	struct duty_view *d;
	size_t k, i, nd;

	if (!e->duty)
		return 0;
	if (duty__views(e->duty, &d, &nd))
		return -ENOMEM;
	for (k = 0; k < sizeof(duty_series) / sizeof(duty_series[0]); k++) {
		family(f, duty_series[k].name, duty_series[k].type, duty_series[k].help);
		for (i = 0; i < nd; i++) {
			t = target_of(v, n, &d[i]);
			if (t && (d[i].decided || (k >= 3 && k != 6)))
				duty_value(f, k, t, &d[i]);
		}
	}
	free(d);
	return 0;
}

/* one family of the collector's per-target values; get returns false for none */
static void collector_family(FILE *f, const struct agent_target *v,
			     const struct collector_state *st, const bool *have, size_t n,
			     const char *name, const char *type, const char *help,
			     double (*get)(const struct collector_state *s))
{
	size_t i;

	family(f, name, type, help);
	for (i = 0; i < n; i++) {
		if (!have[i] || shadowed(v, n, i, false))
			continue;
		fprintf(f, "%s{", name);
		target_labels(f, &v[i]);
		fprintf(f, "} %.17g\n", get(&st[i]));
	}
}

static double st_samples(const struct collector_state *s)
{
	return (double)s->samples;
}

static double st_lost(const struct collector_state *s)
{
	return (double)s->lost;
}

static double st_calls_alloc(const struct collector_state *s)
{
	return (double)s->calls_alloc;
}

static double st_calls_free(const struct collector_state *s)
{
	return (double)s->calls_free;
}

static double st_duty(const struct collector_state *s)
{
	return s->duty;
}

static double st_observed(const struct collector_state *s)
{
	return (double)s->observed_ns / 1e9;
}


/* what the collector knows of each target: samples, losses, probe hits, duty */
static int target_collector(FILE *f, const struct endpoints *e, const struct agent_target *v,
			    size_t n)
{
	struct collector_state *st = calloc(n ?: 1, sizeof(*st));
	bool *have = calloc(n ?: 1, sizeof(*have));
	size_t i;

	if (!st || !have) {
		free(st);
		free(have);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		have[i] = e->state && !e->state(e->profile_ctx, &v[i], &st[i]);
	collector_family(f, v, st, have, n, "culpert_target_samples_total", "counter",
			 "Sampled allocations of the target since pick-up.", st_samples);
	collector_family(f, v, st, have, n, "culpert_target_lost_samples_total", "counter",
			 "Samples lost because the shared ring buffer was full.", st_lost);
	collector_family(f, v, st, have, n, "culpert_target_alloc_probe_hits_total", "counter",
			 "Allocator calls the target's probes saw (nested ones included).",
			 st_calls_alloc);
	collector_family(f, v, st, have, n, "culpert_target_free_probe_hits_total", "counter",
			 "Deallocator calls the target's probes saw.", st_calls_free);
	collector_family(f, v, st, have, n, "culpert_target_duty", "gauge",
			 "Share of the time since pick-up the allocation probes were on.", st_duty);
	collector_family(f, v, st, have, n, "culpert_target_observed_seconds_total", "counter",
			 "Time the allocation probes were on since pick-up.", st_observed);
	free(st);
	free(have);
	return 0;
}

static void labels_of(FILE *f, const void *t)
{
	target_labels(f, t);
}

/* per span of each target, what the collector counted exactly (span_metrics.h) */
static int target_spans(FILE *f, struct endpoints *e, const struct agent_target *v, size_t n)
{
	struct span_metrics_target *m;
	struct span_totals *t;
	size_t i, k = 0;
	int ret = -ENOMEM;

	if (!e->span_totals)
		return 0;
	m = calloc(n ? n : 1, sizeof(*m));
	t = calloc(n ? n : 1, sizeof(*t));
	if (m && t) {
		for (i = 0; i < n; i++) {
			if (shadowed(v, n, i, false) || e->span_totals(e->span_totals_ctx, &v[i], &t[k]))
				continue;
			m[k] = (struct span_metrics_target){ &t[k], labels_of, &v[i] };
			k++;
		}
		ret = span_metrics_write(f, m, k);
	}
	for (i = 0; t && i < k; i++)
		span_totals__free(&t[i]);
	free(m);
	free(t);
	return ret;
}

int metrics_write(FILE *f, struct endpoints *e)
{
	struct agent_target *v;
	size_t n;
	int ret;

	agent_process(f, e);
	agent_targets(f, e);
	agent_http(f, e);
	agent_kube(f, e);
	agent_budget(f, e);
	if (targets__copy(e->targets, &v, &n))
		return -ENOMEM;
	target_info(f, v, n);
	ret = target_collector(f, e, v, n) ?: target_budget(f, e, v, n) ?: target_spans(f, e, v, n) ?:
	      pictures__write(e->pictures, f, v, n);
	free(v);
	return ret ?: ferror(f) ? -EIO : 0;
}

void metrics_route(void *ctx, const struct http_request *r, struct http_reply *out)
{
	FILE *f = open_memstream(&out->body, &out->len);
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int ret;

	if (!f) {
		out->status = 500;
		return;
	}
	ret = metrics_write(f, ctx);
	fclose(f);
	/* the bench reads it: the scrape's own CPU, whatever else the machine runs */
	pr_debug("/metrics: %zu bytes in %.1f ms (%.1f ms of CPU)\n", ret ? 0 : out->len,
		 (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6,
		 (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / 1e6);
	if (ret) {
		free(out->body);
		out->body = NULL;
		http_json_error(out, 500, strerror(-ret));
		return;
	}
	out->status = 200;
	out->content_type = "text/plain; version=0.0.4; charset=utf-8";
}
