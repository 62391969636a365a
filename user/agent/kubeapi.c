// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include <json-c/json.h>

#include "clock.h"
#include "hashtab.h"
#include "kubeapi.h"
#include "log.h"
#include "readfile.h"
#include "vec.h"

/* a node runs at most a few hundred pods: an answer past this is not a PodList to keep */
#define MAX_ANSWER_BYTES (64u << 20)
#define MIN_EARLY_NS 2000000000LL

struct kube_container {
	char id[CONTAINER_ID_LEN];
	char name[CONTAINER_NAME_LEN];
	char runtime[16];
};

struct kube_pod {
	char uid[POD_UID_LEN];
	char ns[POD_NS_LEN];
	char name[POD_NAME_LEN];
	char service[SERVICE_NAME_LEN];		/* the annotation, "" */
	struct kube_container *c;
	size_t n_c;
};

struct pod_list {
	struct kube_pod *v;
	size_t n, cap;
};

/* pods asked about that the last list did not have: each asks for an early list once */
#define MAX_ASKED 64

struct kubeapi {
	struct kubeapi_opts o;
	char url[1024];
	char sa_token[4096], sa_ca[4096];
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop, want;
	struct pod_list pods;			/* under lock */
	uint64_t pods_hash;			/* of what the agent uses of them */
	struct kubeapi_counts counts;		/* under lock */
	char asked[MAX_ASKED][POD_UID_LEN];
	size_t n_asked;
	long last_status;
};

static void pods_free(struct pod_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].c);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static const char *str_at(struct json_object *o, const char *const *path, size_t n)
{
	struct json_object *v = o;
	size_t i;

	for (i = 0; i < n; i++)
		if (!json_object_object_get_ex(v, path[i], &v))
			return NULL;
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* "containerd://ID", "cri-o://ID", "docker://ID" */
static void add_container(struct kube_pod *p, struct json_object *st)
{
	static const char *const name_k[] = { "name" }, *const id_k[] = { "containerID" };
	const char *name = str_at(st, name_k, 1), *id = str_at(st, id_k, 1), *sep;
	struct kube_container *c, *nv;

	if (!name || !id || !(sep = strstr(id, "://")))
		return;
	nv = realloc(p->c, (p->n_c + 1) * sizeof(*p->c));
	if (!nv)
		return;
	p->c = nv;
	c = &p->c[p->n_c++];
	/* zeroed: the pod list's hash covers the whole struct */
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->id, sizeof(c->id), "%s", sep + 3);
	snprintf(c->runtime, sizeof(c->runtime), "%.*s", (int)(sep - id), id);
}

static void add_statuses(struct kube_pod *p, struct json_object *pod)
{
	static const char *const lists[] = { "containerStatuses", "initContainerStatuses",
					     "ephemeralContainerStatuses" };
	struct json_object *status, *arr;
	size_t i, k;

	if (!json_object_object_get_ex(pod, "status", &status))
		return;
	for (i = 0; i < 3; i++) {
		if (!json_object_object_get_ex(status, lists[i], &arr) ||
		    !json_object_is_type(arr, json_type_array))
			continue;
		for (k = 0; k < json_object_array_length(arr); k++)
			add_container(p, json_object_array_get_idx(arr, k));
	}
}

static int add_pod(struct pod_list *l, struct json_object *pod)
{
	static const char *const uid_k[] = { "metadata", "uid" }, *const ns_k[] = { "metadata",
		"namespace" }, *const name_k[] = { "metadata", "name" }, *const svc_k[] = {
		"metadata", "annotations", "pyroscope.io/service_name" };
	const char *uid = str_at(pod, uid_k, 2), *ns = str_at(pod, ns_k, 2),
		   *name = str_at(pod, name_k, 2), *svc = str_at(pod, svc_k, 3);
	struct kube_pod *p;

	if (!uid || !ns || !name)
		return 0;
	if (vec_reserve(&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
		return -ENOMEM;
	p = &l->v[l->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->uid, sizeof(p->uid), "%s", uid);
	snprintf(p->ns, sizeof(p->ns), "%s", ns);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->service, sizeof(p->service), "%s", svc ? svc : "");
	add_statuses(p, pod);
	return 0;
}

/* what the agent uses of the list: a list that is the same again changes nothing */
static uint64_t pods_hash(const struct pod_list *l)
{
	uint64_t h = l->n;
	size_t i;

	for (i = 0; i < l->n; i++) {
		const struct kube_pod *p = &l->v[i];

		h = hash_bytes(p->uid, sizeof(p->uid) + sizeof(p->ns) + sizeof(p->name) +
			       sizeof(p->service), h);
		h = hash_bytes(p->c, p->n_c * sizeof(*p->c), h);
	}
	return h;
}

int kubeapi__parse(struct kubeapi *k, const char *json, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = NULL, *items;
	struct pod_list l = { 0 };
	int ret = -EINVAL;
	size_t i;

	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, json, (int)len);
	if (root && json_object_object_get_ex(root, "items", &items) &&
	    json_object_is_type(items, json_type_array)) {
		ret = 0;
		for (i = 0; !ret && i < json_object_array_length(items); i++)
			ret = add_pod(&l, json_object_array_get_idx(items, i));
	}
	json_object_put(root);
	json_tokener_free(tok);
	if (ret) {
		pods_free(&l);
		return ret;
	}
	pthread_mutex_lock(&k->lock);
	pods_free(&k->pods);
	k->pods = l;
	k->counts.pods = l.n;
	/* the generation tells the profiling thread to look again: only for news */
	if (pods_hash(&l) != k->pods_hash || !k->counts.generation) {
		k->pods_hash = pods_hash(&l);
		k->counts.generation++;
		k->n_asked = 0;
	}
	pthread_mutex_unlock(&k->lock);
	return 0;
}

static void fill(const struct kube_pod *p, struct container_info *ci)
{
	size_t i;

	snprintf(ci->pod_namespace, sizeof(ci->pod_namespace), "%s", p->ns);
	snprintf(ci->pod_name, sizeof(ci->pod_name), "%s", p->name);
	for (i = 0; i < p->n_c; i++) {
		if (strcmp(p->c[i].id, ci->id))
			continue;
		snprintf(ci->container_name, sizeof(ci->container_name), "%s", p->c[i].name);
		/* the cgroup path cannot tell containerd from docker under cgroupfs; the API can */
		snprintf(ci->runtime, sizeof(ci->runtime), "%s", p->c[i].runtime);
	}
	container_service_name(ci, p->service);
}

/* remember uid (under k->lock); true if it was asked about since the last new list */
static bool asked_before(struct kubeapi *k, const char *uid)
{
	size_t i;

	for (i = 0; i < k->n_asked; i++)
		if (!strcmp(k->asked[i], uid))
			return true;
	if (k->n_asked == MAX_ASKED)
		return true;
	snprintf(k->asked[k->n_asked++], POD_UID_LEN, "%s", uid);
	return false;
}

bool kubeapi__lookup(struct kubeapi *k, struct container_info *ci)
{
	bool found = false;
	size_t i;

	if (!ci->pod_uid[0])
		return false;
	pthread_mutex_lock(&k->lock);
	for (i = 0; i < k->pods.n && !found; i++)
		if (!strcmp(k->pods.v[i].uid, ci->pod_uid)) {
			fill(&k->pods.v[i], ci);
			found = true;
		}
	if (!found && !asked_before(k, ci->pod_uid)) {
		k->want = true;
		pthread_cond_signal(&k->wake);
	}
	pthread_mutex_unlock(&k->lock);
	return found;
}

void kubeapi__counts(struct kubeapi *k, struct kubeapi_counts *out)
{
	pthread_mutex_lock(&k->lock);
	*out = k->counts;
	pthread_mutex_unlock(&k->lock);
}

struct answer {
	char *buf;
	size_t len, cap;
	bool too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	size_t add = size * n;

	if (a->len + add + 1 > MAX_ANSWER_BYTES) {
		a->too_big = true;
		return 0;
	}
	if (vec_reserve(&a->buf, &a->cap, a->len + add + 1, 1))
		return 0;
	memcpy(a->buf + a->len, p, add);
	a->len += add;
	a->buf[a->len] = 0;
	return add;
}

/* curl's progress callback: a non-zero return aborts the transfer, so stopping is prompt */
static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct kubeapi *k = ctx;

	return __atomic_load_n(&k->stop, __ATOMIC_RELAXED);
}

/* the token without its trailing newline, re-read each time */
static int read_token(const struct kubeapi *k, char *hdr, size_t len)
{
	char *tok;
	size_t n;
	int ret = read_file_at(AT_FDCWD, k->sa_token, &tok, &n);

	if (ret)
		return ret;
	while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
		tok[--n] = 0;
	snprintf(hdr, len, "Authorization: Bearer %s", tok);
	free(tok);
	return n ? 0 : -EINVAL;
}

static void report(struct kubeapi *k, long status, const char *what)
{
	/* once per change of state, not at every refresh */
	if (status == k->last_status)
		return;
	k->last_status = status;
	if (status == 200)
		pr_info("Kubernetes API: listing the pods of node %s works again\n", k->o.node);
	else
		pr_warn("Kubernetes API: cannot list the pods of node %s at %s: %s; pod names come "
			"from the kubelet's log directories meanwhile\n", k->o.node, k->url, what);
}

/* one GET of the pod list into a; the HTTP status, or 0 and why in what */
static long request(struct kubeapi *k, const char *auth, struct answer *a, char *what,
		    size_t len)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers = NULL;
	long status = 0;
	CURLcode rc;
	CURL *c = curl_easy_init();

	if (!c) {
		snprintf(what, len, "cannot start libcurl");
		return 0;
	}
	headers = curl_slist_append(headers, auth);
	headers = curl_slist_append(headers, "Accept: application/json");
	curl_easy_setopt(c, CURLOPT_URL, k->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_CAINFO, k->sa_ca);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 3L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 15L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, k);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(headers);
	if (rc == CURLE_OK)
		return status;
	snprintf(what, len, "%s", a->too_big ? "the answer is too big" :
		 errbuf[0] ? errbuf : curl_easy_strerror(rc));
	return 0;
}

static void fetch(struct kubeapi *k)
{
	char auth[4200], what[4352] = "";
	struct answer a = { 0 };
	long status = -1;

	if (read_token(k, auth, sizeof(auth)))
		snprintf(what, sizeof(what), "cannot read the service account token %s",
			 k->sa_token);
	else
		status = request(k, auth, &a, what, sizeof(what));
	if (status > 0 && status != 200)
		snprintf(what, sizeof(what), "it answered HTTP %ld", status);
	else if (status == 200 && kubeapi__parse(k, a.buf ? a.buf : "", a.len))
		snprintf(what, sizeof(what), "its answer is not a PodList");
	free(a.buf);
	if (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED))
		report(k, !what[0] ? 200 : status > 0 && status != 200 ? status : -1, what);
	pthread_mutex_lock(&k->lock);
	k->counts.requests++;
	k->counts.failures += what[0] != 0;
	pthread_mutex_unlock(&k->lock);
}

/* until stopped: list, then sleep until the refresh is due or an unknown pod asks */
static void *kube_thread(void *arg)
{
	struct kubeapi *k = arg;
	int64_t last = 0, t;
	struct timespec ts;

	for (;;) {
		fetch(k);
		last = (int64_t)clock_ns(CLOCK_MONOTONIC);
		pthread_mutex_lock(&k->lock);
		k->want = false;
		while (!k->stop) {
			t = (int64_t)clock_ns(CLOCK_MONOTONIC);
			if (t - last >= (int64_t)k->o.refresh_ns ||
			    (k->want && t - last >= MIN_EARLY_NS))
				break;
			ts = clock_deadline(CLOCK_REALTIME, 200000000);
			pthread_cond_timedwait(&k->wake, &k->lock, &ts);
		}
		if (k->stop) {
			pthread_mutex_unlock(&k->lock);
			return NULL;
		}
		pthread_mutex_unlock(&k->lock);
	}
}

struct kubeapi *kubeapi__new_offline(void)
{
	struct kubeapi *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->wake, NULL);
	return k;
}

struct kubeapi *kubeapi__start(const struct kubeapi_opts *o, char *err, size_t errlen)
{
	struct kubeapi *k = kubeapi__new_offline();
	FILE *f;

	if (!k) {
		snprintf(err, errlen, "--kube-api: %s", strerror(ENOMEM));
		return NULL;
	}
	k->o = *o;
	k->last_status = 200;
	snprintf(k->url, sizeof(k->url), "%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
		 o->url, o->node);
	snprintf(k->sa_token, sizeof(k->sa_token), "%s/token", o->sa_dir);
	snprintf(k->sa_ca, sizeof(k->sa_ca), "%s/ca.crt", o->sa_dir);
	/* fail now on what cannot get better: the service account is mounted or not */
	f = fopen(k->sa_token, "r");
	if (f)
		fclose(f);
	if (!f || access(k->sa_ca, R_OK)) {
		snprintf(err, errlen, "--kube-api: cannot read %s: %s; mount the pod's service "
			 "account (automountServiceAccountToken) or give --kube-sa-dir",
			 f ? k->sa_ca : k->sa_token, strerror(errno));
		kubeapi__stop(k);
		return NULL;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (pthread_create(&k->thread, NULL, kube_thread, k)) {
		snprintf(err, errlen, "--kube-api: cannot start its thread: %s", strerror(errno));
		kubeapi__stop(k);
		return NULL;
	}
	k->running = true;
	return k;
}

void kubeapi__stop(struct kubeapi *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	__atomic_store_n(&k->stop, true, __ATOMIC_RELAXED);
	pthread_cond_signal(&k->wake);
	pthread_mutex_unlock(&k->lock);
	if (k->running)
		pthread_join(k->thread, NULL);
	pods_free(&k->pods);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	free(k);
}
