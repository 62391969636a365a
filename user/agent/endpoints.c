// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "clock.h"
#include "endpoints.h"
#include "json.h"
#include "metrics.h"

#define MAX_SECONDS 86400

void format_rfc3339(char *buf, size_t len, int64_t unix_ns)
{
	time_t secs = (time_t)(unix_ns / 1000000000LL);
	char day[32];
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", day, (int)(unix_ns / 1000000 % 1000));
}

static void str_or_null(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	if (s && s[0])
		json_str(j, s);
	else
		json_null(j);
}

static void candidate(struct json *j, const struct agent_target *t)
{
	char pod[POD_NS_LEN + POD_NAME_LEN + 1] = "";

	if (t->ci.pod_name[0])
		snprintf(pod, sizeof(pod), "%s/%s", t->ci.pod_namespace, t->ci.pod_name);
	json_begin(j, '{');
	str_or_null(j, "comm", t->comm);
	str_or_null(j, "container_id", t->ci.id);
	json_key(j, "exited");
	json_bool(j, t->exited_ns != 0);
	json_key(j, "pid");
	json_int(j, t->pid);
	str_or_null(j, "pod", pod);
	json_end(j, '}');
}

/* { "candidates": [...], "error": msg }: what the client can name instead */
static unsigned int candidates_error(struct http_reply *out, unsigned int status, const char *msg,
				     const struct agent_target *v, const size_t *idx, size_t n)
{
	struct json j;
	size_t i;
	FILE *f = open_memstream(&out->body, &out->len);

	out->status = status;
	out->content_type = "application/json";
	if (!f)
		return status;
	json_init(&j, f);
	json_begin(&j, '{');
	json_key(&j, "candidates");
	json_begin(&j, '[');
	for (i = 0; i < n; i++)
		candidate(&j, &v[idx ? idx[i] : i]);
	json_end(&j, ']');
	json_key(&j, "error");
	json_str(&j, msg);
	json_end(&j, '}');
	fclose(f);
	return status;
}

static bool matches(const struct agent_target *t, pid_t pid, const char *container,
		    const char *comm)
{
	return (!pid || t->pid == pid) &&
	       (!container || (t->ci.id[0] && !strncmp(t->ci.id, container, strlen(container)))) &&
	       (!comm || !strcmp(t->comm, comm));
}

/* the indexes of the targets that match, live ones only if any is live */
static size_t find_matches(const struct agent_target *v, size_t n, pid_t pid,
			   const char *container, const char *comm, size_t *idx)
{
	size_t i, k = 0, live = 0;

	for (i = 0; i < n; i++)
		if (matches(&v[i], pid, container, comm)) {
			idx[k++] = i;
			live += !v[i].exited_ns;
		}
	if (!live || live == k)
		return k;
	for (i = 0, live = 0; i < k; i++)
		if (!v[idx[i]].exited_ns)
			idx[live++] = idx[i];
	return live;
}

static void describe(char *buf, size_t len, const char *pid, const char *container,
		     const char *comm)
{
	snprintf(buf, len, "%s%s%s%s%s%s%s%s", pid ? "pid=" : "", pid ?: "",
		 pid && (container || comm) ? " " : "", container ? "container=" : "",
		 container ?: "", container && comm ? " " : "", comm ? "comm=" : "", comm ?: "");
}

unsigned int resolve_target(const struct agent_target *v, size_t n, const char *pid_s,
			    const char *container, const char *comm, size_t *which,
			    struct http_reply *out)
{
	char what[512], msg[640];
	size_t *idx, k;
	pid_t pid = 0;
	char *end;
	long p;

	if (!pid_s && !container && !comm)
		return candidates_error(out, 400, "name the target with pid=N, container=ID or "
					"comm=NAME (GET /targets lists them)", v, NULL, n);
	if (pid_s) {
		errno = 0;
		p = strtol(pid_s, &end, 10);
		if (errno || end == pid_s || *end || p <= 0 || p > INT32_MAX)
			return candidates_error(out, 400, "invalid pid=: give the numeric id of a "
						"target (GET /targets lists them)", v, NULL, n);
		pid = (pid_t)p;
	}
	if ((container && !container[0]) || (comm && !comm[0]))
		return candidates_error(out, 400, "container= and comm= need a value", v, NULL, n);
	idx = calloc(n ? n : 1, sizeof(*idx));
	if (!idx) {
		http_json_error(out, 500, strerror(ENOMEM));
		return 500;
	}
	k = find_matches(v, n, pid, container, comm, idx);
	describe(what, sizeof(what), pid_s, container, comm);
	if (k == 1) {
		*which = idx[0];
		free(idx);
		return 200;
	}
	if (!k) {
		snprintf(msg, sizeof(msg), "no target matches %s; the candidates are every target",
			 what);
		free(idx);
		return candidates_error(out, 404, msg, v, NULL, n);
	}
	snprintf(msg, sizeof(msg), "%zu targets match %s: name one with pid=", k, what);
	candidates_error(out, 409, msg, v, idx, k);
	free(idx);
	return 409;
}

/* ?seconds=S: 0 when absent; -1 when invalid */
static long parse_seconds(const char *s)
{
	char *end;
	long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > MAX_SECONDS)
		return -1;
	return v;
}

static void profile_route(struct endpoints *e, const struct http_request *r,
			  struct http_reply *out, enum agent_profile kind)
{
	long seconds = parse_seconds(http_query(r, "seconds"));
	struct agent_target *v, t;
	char err[512];
	size_t n, which;
	void *buf;
	size_t len;
	int ret;

	if (seconds < 0) {
		http_json_error(out, 400, "invalid seconds=: give a whole number of seconds from 1 "
				"to 86400");
		return;
	}
	if (targets__copy(e->targets, &v, &n)) {
		http_json_error(out, 500, strerror(ENOMEM));
		return;
	}
	ret = (int)resolve_target(v, n, http_query(r, "pid"), http_query(r, "container"),
				  http_query(r, "comm"), &which, out);
	if (ret == 200)
		t = v[which];
	free(v);
	if (ret != 200)
		return;
	if (!e->profile) {
		snprintf(err, sizeof(err), "profiling is not available: this version of the agent "
			 "finds, attributes and reports targets (pid %d, %s) but does not collect "
			 "profiles yet (docs/agent.md)", (int)t.pid, t.comm);
		http_json_error(out, 503, err);
		return;
	}
	ret = e->profile(e->profile_ctx, &t, kind, (uint64_t)seconds, &buf, &len, err,
			 sizeof(err));
	if (ret) {
		http_json_error(out, ret == -ESRCH ? 404 : ret == -EAGAIN ? 503 : 500, err);
		return;
	}
	out->status = 200;
	out->content_type = "application/octet-stream";
	out->body = buf;
	out->len = len;
}

static void allocs_route(void *ctx, const struct http_request *r, struct http_reply *out)
{
	profile_route(ctx, r, out, AGENT_PROFILE_ALLOCS);
}

static void heap_route(void *ctx, const struct http_request *r, struct http_reply *out)
{
	profile_route(ctx, r, out, AGENT_PROFILE_HEAP);
}

static void target_json(struct json *j, const struct agent_target *t, const struct endpoints *e)
{
	char since[40], exited[40], picked[40], heap_since[40];
	const struct container_info *ci = &t->ci;
	struct collector_state st;
	bool have = e->state && !e->state(e->profile_ctx, t, &st);
	bool live = have && st.live_unix_ns;

	format_rfc3339(since, sizeof(since), t->since_ns);
	if (t->exited_ns)
		format_rfc3339(exited, sizeof(exited), t->exited_ns);
	if (live)
		format_rfc3339(picked, sizeof(picked), st.live_unix_ns);
	/* keys in sorted order (json.h); allocator, duty, probes, sampler are the collector's: null */
	json_begin(j, '{');
	str_or_null(j, "allocator", have ? st.allocator : NULL);
	str_or_null(j, "cgroup", ci->cgroup);
	str_or_null(j, "comm", t->comm);
	str_or_null(j, "container_id", ci->id);
	str_or_null(j, "container_name", ci->container_name);
	json_key(j, "duty");
	if (have)
		json_num(j, st.duty, 3);
	else
		json_null(j);
	str_or_null(j, "exe", t->exe);
	str_or_null(j, "exit_reason", t->exited_ns ? t->exit_reason : NULL);
	str_or_null(j, "exited", t->exited_ns ? exited : NULL);
	/* what its heap covers: from when the probes went live, beside what it held then */
	str_or_null(j, "heap_covers", live ? COLLECTOR_COVERAGE : NULL);
	str_or_null(j, "picked_up", live ? picked : NULL);
	json_key(j, "picked_up_anon_rss");
	if (live)
		json_int(j, (int64_t)st.anon_rss_at);
	else
		json_null(j);
	/* the budget switched its free probes off: its heap holds the blocks allocated since */
	if (have && st.heap_since_unix_ns)
		format_rfc3339(heap_since, sizeof(heap_since), (uint64_t)st.heap_since_unix_ns);
	str_or_null(j, "heap_since", have && st.heap_since_unix_ns ? heap_since : NULL);
	json_key(j, "pid");
	json_int(j, t->pid);
	str_or_null(j, "pod_name", ci->pod_name);
	str_or_null(j, "pod_namespace", ci->pod_namespace);
	str_or_null(j, "pod_uid", ci->pod_uid);
	str_or_null(j, "probes", have ? st.probes : NULL);
	str_or_null(j, "probes_error", have ? st.error : NULL);
	str_or_null(j, "runtime", ci->runtime);
	str_or_null(j, "sampler", have && st.sampler[0] ? st.sampler : NULL);
	/* why that sampler: the choice, or why --inject was refused */
	str_or_null(j, "sampler_why", have && st.sampler[0] ? st.sampler_why : NULL);
	str_or_null(j, "service_name", ci->service_name);
	str_or_null(j, "since", since);
	str_or_null(j, "state", t->exited_ns ? "exited" : "live");
	json_end(j, '}');
}

static void targets_route(void *ctx, const struct http_request *r, struct http_reply *out)
{
	struct endpoints *e = ctx;
	struct agent_target *v;
	struct json j;
	size_t n, i;
	FILE *f;

	if (targets__copy(e->targets, &v, &n)) {
		http_json_error(out, 500, strerror(ENOMEM));
		return;
	}
	f = open_memstream(&out->body, &out->len);
	if (f) {
		json_init(&j, f);
		json_begin(&j, '{');
		json_key(&j, "schema_version");
		json_int(&j, 1);
		json_key(&j, "targets");
		json_begin(&j, '[');
		for (i = 0; i < n; i++)
			target_json(&j, &v[i], e);
		json_end(&j, ']');
		json_end(&j, '}');
		fclose(f);
	}
	free(v);
	out->status = 200;
	out->content_type = "application/json";
}

/* healthy while the profiling thread turns: it owns the BPF side and every target */
static void healthz_route(void *ctx, const struct http_request *r, struct http_reply *out)
{
	struct endpoints *e = ctx;
	int64_t last;

	pthread_mutex_lock(&e->stats.lock);
	last = e->stats.loop_mono_ns;
	pthread_mutex_unlock(&e->stats.lock);
	if ((int64_t)clock_ns(CLOCK_MONOTONIC) - last > AGENT_HEALTHY_NS) {
		http_json_error(out, 503, "the profiling thread has not run for 5 s");
		return;
	}
	out->status = 200;
	out->body = strdup("ok\n");
	out->len = out->body ? 3 : 0;
}

const struct http_route agent_routes[] = {
	{ "/debug/pprof/allocs", allocs_route, false },
	{ "/debug/pprof/heap", heap_route, false },
	{ "/metrics", metrics_route, false },
	{ "/targets", targets_route, false },
	{ "/healthz", healthz_route, true },
	{ NULL, NULL, false },
};

const char *agent_route_name(size_t i)
{
	return i < sizeof(agent_routes) / sizeof(agent_routes[0]) - 1 ? agent_routes[i].path :
									  "other";
}
