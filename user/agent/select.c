// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "hashtab.h"
#include "opt.h"
#include "procmaps.h"
#include "select.h"
#include "target.h"
#include "usdt.h"
#include "vec.h"

enum sel_kind { SEL_COMM, SEL_EXE, SEL_CGROUP, SEL_CONTAINER, SEL_PID, SEL_USDT, SEL_POD,
		SEL_NAMESPACE, SEL_CONTAINER_NAME };

struct selector {
	enum sel_kind kind;
	const char *spec;	/* as given, for the logs */
	const char *arg;	/* after '=' */
	regex_t re;		/* SEL_COMM */
	pid_t pid;		/* SEL_PID */
	size_t ns_len;		/* SEL_POD: the '/' */
};

/* has this object (by device and inode) culpert or otel_memory probes? */
struct usdt_obj {
	uint64_t dev, ino;
	bool probes;
};

/* objects remembered across rescans; past this many the cache starts over */
#define USDT_CACHE_MAX 8192

struct selectors {
	struct selector *v;
	size_t n;
	struct usdt_obj *objs;
	size_t n_objs, cap_objs;
	struct hashtab index;
};

static const struct {
	const char *key;
	enum sel_kind kind;
} keys[] = {
	{ "comm", SEL_COMM }, { "exe", SEL_EXE }, { "cgroup", SEL_CGROUP },
	{ "container", SEL_CONTAINER }, { "pid", SEL_PID }, { "pod", SEL_POD },
	{ "namespace", SEL_NAMESPACE }, { "container-name", SEL_CONTAINER_NAME },
};

/* OPT: the option the selector came with (--select, --inject) */
static int bad(const char *opt, const char *spec, const char *why)
{
	return opt_error("invalid %s '%s': %s", opt, spec, why);
}

static int parse_arg(const char *opt, struct selector *s)
{
	char re[1024], msg[128], what[32];
	const char *slash;
	int err;

	if (!s->arg[0])
		return bad(opt, s->spec, "the value after '=' is empty");
	switch (s->kind) {
	case SEL_COMM:
		/* anchored, as Prometheus' relabel regexes: comm=nginx is not nginx-exporter */
		if (snprintf(re, sizeof(re), "^(%s)$", s->arg) >= (int)sizeof(re))
			return bad(opt, s->spec, "the regex is too long");
		err = regcomp(&s->re, re, REG_EXTENDED | REG_NOSUB);
		if (err) {
			regerror(err, &s->re, msg, sizeof(msg));
			return bad(opt, s->spec, msg);
		}
		return 0;
	case SEL_PID:
		snprintf(what, sizeof(what), "%s pid", opt);
		if (opt_pid(what, s->arg, &s->pid))
			return -EINVAL;
		return 0;
	case SEL_POD:
		slash = strchr(s->arg, '/');
		if (!slash || slash == s->arg || !slash[1] || strchr(slash + 1, '/'))
			return bad(opt, s->spec, "use pod=NAMESPACE/NAME");
		s->ns_len = (size_t)(slash - s->arg);
		return 0;
	case SEL_CGROUP:
		if (s->arg[0] != '/')
			return bad(opt, s->spec, "a cgroup path starts with '/', as /proc/PID/cgroup "
				   "shows it");
		return 0;
	default:
		return 0;
	}
}

static int parse_one(const char *opt, const char *spec, struct selector *s)
{
	const char *eq = strchr(spec, '=');
	size_t i, kl = eq ? (size_t)(eq - spec) : strlen(spec);

	memset(s, 0, sizeof(*s));
	s->spec = spec;
	if (!strcmp(spec, "usdt")) {
		s->kind = SEL_USDT;
		return 0;
	}
	for (i = 0; eq && i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strlen(keys[i].key) != kl || strncmp(spec, keys[i].key, kl))
			continue;
		s->kind = keys[i].kind;
		s->arg = eq + 1;
		return parse_arg(opt, s);
	}
	return bad(opt, spec, "use comm=REGEX, exe=GLOB, cgroup=PREFIX, container=ID, pid=N, usdt, "
		   "pod=NAMESPACE/NAME, namespace=NS or container-name=NAME");
}

int selectors__parse(const char *opt, char *const *specs, size_t n, struct selectors **out)
{
	struct selectors *s = calloc(1, sizeof(*s));
	int ret = 0;
	size_t i;

	if (!s || !(s->v = calloc(n ? n : 1, sizeof(*s->v)))) {
		free(s);
		return -ENOMEM;
	}
	for (i = 0; i < n && !ret; i++) {
		ret = parse_one(opt, specs[i], &s->v[i]);
		if (!ret)
			s->n++;
	}
	if (ret) {
		selectors__free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void selectors__free(struct selectors *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		if (s->v[i].kind == SEL_COMM)
			regfree(&s->v[i].re);
	free(s->v);
	free(s->objs);
	hashtab__free(&s->index);
	free(s);
}

static bool match_one(struct selectors *all, const struct selector *s,
		      const struct select_input *in)
{
	const struct container_info *ci = in->ci;

	switch (s->kind) {
	case SEL_COMM:
		return !regexec(&s->re, in->comm, 0, NULL, 0);
	case SEL_EXE:
		return in->exe[0] && !fnmatch(s->arg, in->exe, 0);
	case SEL_CGROUP:
		return container_cgroup_has_prefix(in->cgroup_text, s->arg);
	case SEL_CONTAINER:
		return ci->id[0] && !strncmp(ci->id, s->arg, strlen(s->arg));
	case SEL_PID:
		return in->pid == s->pid;
	case SEL_USDT:
		return select_has_usdt(all, in->pid);
	case SEL_POD:
		return strlen(ci->pod_namespace) == s->ns_len &&
		       !strncmp(ci->pod_namespace, s->arg, s->ns_len) &&
		       !strcmp(ci->pod_name, s->arg + s->ns_len + 1);
	case SEL_NAMESPACE:
		return !strcmp(ci->pod_namespace, s->arg);
	case SEL_CONTAINER_NAME:
		return !strcmp(ci->container_name, s->arg);
	}
	return false;
}

const char *selectors__match(struct selectors *s, const struct select_input *in)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (match_one(s, &s->v[i], in))
			return s->v[i].spec;
	return NULL;
}

/* the names of "a|b-c|d.e" into cb: only plain characters, or none at all */
static int plain_names(const char *re, int (*cb)(void *ctx, const char *name), void *ctx)
{
	char name[256];
	const char *p;
	size_t len;
	int ret;

	for (p = re; *p; p++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.|",
			    *p))
			return 0;
	for (p = re;; p += len + 1) {
		len = strcspn(p, "|");
		if (len && len < sizeof(name)) {
			memcpy(name, p, len);
			name[len] = 0;
			ret = cb(ctx, name);
			if (ret)
				return ret;
		}
		if (!p[len])
			return 0;
	}
}

int selectors__names(const struct selectors *s, int (*cb)(void *ctx, const char *name),
		     void *ctx)
{
	const char *base;
	size_t i;
	int ret = 0;

	for (i = 0; i < s->n && !ret; i++) {
		if (s->v[i].kind == SEL_COMM) {
			ret = plain_names(s->v[i].arg, cb, ctx);
		} else if (s->v[i].kind == SEL_EXE) {
			/* the comm of an exec is the file name it was run by */
			base = strrchr(s->v[i].arg, '/');
			base = base ? base + 1 : s->v[i].arg;
			if (*base && !strpbrk(base, "*?[\\"))
				ret = cb(ctx, base);
		}
	}
	return ret;
}

static bool obj_eq(uint32_t idx, const void *key, void *ctx)
{
	const struct usdt_obj *o = &((struct selectors *)ctx)->objs[idx], *k = key;

	return o->dev == k->dev && o->ino == k->ino;
}

static bool object_has_probes(pid_t pid, const struct procmap *m)
{
	static const char *const providers[] = { "culpert", "otel_memory" };
	struct target t = { .pid = pid };
	char path[PATH_MAX + 64];
	struct usdt_site *sites;
	struct elfobj *obj;
	bool found = false;
	size_t i;
	int n;

	if (target__object_path(&t, m, path, sizeof(path)) || !(obj = elfobj__open(path)))
		return false;
	for (i = 0; i < 2 && !found; i++) {
		n = usdt_sites(obj, providers[i], &sites);
		if (n > 0)
			free(sites);
		found = n > 0;
	}
	elfobj__free(obj);
	return found;
}

/* the cached answer for mapping m's object, reading the object on a miss */
static bool cached_probes(struct selectors *s, pid_t pid, const struct procmap *m)
{
	struct usdt_obj key = { .dev = (uint64_t)m->dev_major << 32 | m->dev_minor,
				.ino = m->inode };
	uint64_t h = hash_u64(key.ino, key.dev);
	uint32_t idx;

	if (hashtab__find(&s->index, h, &key, obj_eq, s, &idx))
		return s->objs[idx].probes;
	key.probes = object_has_probes(pid, m);
	if (s->n_objs == USDT_CACHE_MAX) {
		hashtab__free(&s->index);
		memset(&s->index, 0, sizeof(s->index));
		s->n_objs = 0;
	}
	if (!vec_reserve(&s->objs, &s->cap_objs, s->n_objs + 1, sizeof(*s->objs)) &&
	    !hashtab__insert(&s->index, h, (uint32_t)s->n_objs))
		s->objs[s->n_objs++] = key;
	return key.probes;
}

bool select_has_usdt(struct selectors *s, pid_t pid)
{
	struct procmaps maps;
	bool found = false;
	size_t i;

	if (procmaps__read(pid, &maps))
		return false;
	for (i = 0; i < maps.n && !found; i++)
		if (maps.v[i].executable && procmap__is_file(&maps.v[i]))
			found = cached_probes(s, pid, &maps.v[i]);
	procmaps__free(&maps);
	return found;
}
