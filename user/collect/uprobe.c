// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bpf_compat.h"
#include "log.h"
#include "uprobe.h"
#include "vec.h"

struct uprobe_set {
	struct bpf_link **links;	/* perf mode */
	size_t n_links, cap_links;
	int *fds;			/* multi and session links */
	size_t n_fds, cap_fds;
	size_t n_sites;
};

unsigned int uprobe_mode__attach_type(enum uprobe_mode mode)
{
	switch (mode) {
	case UPROBE_MODE_MULTI:
		return CULPERT_BPF_TRACE_UPROBE_MULTI;
	case UPROBE_MODE_SESSION:
		return CULPERT_BPF_TRACE_UPROBE_SESSION;
	default:
		return 0;
	}
}

const char *uprobe_mode__name(enum uprobe_mode mode)
{
	switch (mode) {
	case UPROBE_MODE_MULTI:
		return "uprobe_multi";
	case UPROBE_MODE_SESSION:
		return "uprobe_session";
	default:
		return "perf_uprobe";
	}
}

struct uprobe_set *uprobe_set__new(void)
{
	return calloc(1, sizeof(struct uprobe_set));
}

static int attach_link(struct uprobe_set *s, enum uprobe_mode mode, const struct bpf_program *prog,
		       const char *path, const uint64_t *offsets, const uint64_t *ref_ctrs,
		       const uint64_t *cookies, size_t n, pid_t pid, int retprobe)
{
	struct culpert_uprobe_multi_attr attr;
	unsigned long *offs, *refs = NULL;
	size_t i;
	int fd;

	/* the kernel takes offsets as unsigned long */
	offs = calloc(n, sizeof(*offs));
	if (ref_ctrs)
		refs = calloc(n, sizeof(*refs));
	if (!offs || (ref_ctrs && !refs)) {
		free(offs);
		free(refs);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		offs[i] = (unsigned long)offsets[i];
		if (refs)
			refs[i] = (unsigned long)ref_ctrs[i];
	}
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)bpf_program__fd(prog);
	attr.attach_type = uprobe_mode__attach_type(mode);
	attr.path = (__u64)(unsigned long)path;
	attr.offsets = (__u64)(unsigned long)offs;
	attr.ref_ctr_offsets = (__u64)(unsigned long)refs;
	attr.cookies = (__u64)(unsigned long)cookies;
	attr.cnt = (__u32)n;
	attr.multi_flags = retprobe ? CULPERT_BPF_F_UPROBE_MULTI_RETURN : 0;
	attr.pid = (__u32)pid;
	fd = (int)syscall(__NR_bpf, CULPERT_BPF_LINK_CREATE, &attr, sizeof(attr));
	fd = fd < 0 ? -errno : fd;
	free(offs);
	free(refs);
	if (fd < 0)
		return fd;
	if (vec_reserve(&s->fds, &s->cap_fds, s->n_fds + 1, sizeof(int))) {
		close(fd);
		return -ENOMEM;
	}
	s->fds[s->n_fds++] = fd;
	s->n_sites += n;
	return 0;
}

static int attach_perf(struct uprobe_set *s, const struct bpf_program *prog, const char *path,
		       const uint64_t *offsets, const uint64_t *cookies, size_t n, pid_t pid,
		       int retprobe)
{
	size_t i, first = s->n_links;
	int err = 0;

	for (i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe != 0,
			    .bpf_cookie = cookies ? cookies[i] : 0);
		struct bpf_link *l;

		if (vec_reserve(&s->links, &s->cap_links, s->n_links + 1, sizeof(*s->links))) {
			err = -ENOMEM;
			break;
		}
		l = bpf_program__attach_uprobe_opts(prog, pid, path, offsets[i], &opts);
		if (!l) {
			err = -errno;
			break;
		}
		s->links[s->n_links++] = l;
	}
	if (!err) {
		s->n_sites += n;
		return 0;
	}
	while (s->n_links > first)
		bpf_link__destroy(s->links[--s->n_links]);
	return err;
}

int uprobe_set__attach(struct uprobe_set *s, enum uprobe_mode mode, const struct bpf_program *prog,
		       const char *path, const uint64_t *offsets, const uint64_t *cookies,
		       size_t n, pid_t pid, int retprobe)
{
	if (!n)
		return 0;
	if (mode == UPROBE_MODE_PERF)
		return attach_perf(s, prog, path, offsets, cookies, n, pid, retprobe);
	return attach_link(s, mode, prog, path, offsets, NULL, cookies, n, pid, retprobe);
}

int uprobe_set__attach_refctr(struct uprobe_set *s, const struct bpf_program *prog,
			      const char *path, const uint64_t *offsets, const uint64_t *ref_ctrs,
			      const uint64_t *cookies, size_t n, pid_t pid)
{
	if (!n)
		return 0;
	return attach_link(s, UPROBE_MODE_MULTI, prog, path, offsets, ref_ctrs, cookies, n, pid, 0);
}

size_t uprobe_set__count(const struct uprobe_set *s)
{
	return s ? s->n_sites : 0;
}

/* one link to let go of: a libbpf link (perf mode) or a link fd */
struct release {
	struct bpf_link *link;
	int fd;
};

struct releaser {
	struct release *r;
	size_t n, first, stride;
	pthread_t thread;
	bool threaded;
};

static void release_one(struct release *r)
{
	if (r->link)
		bpf_link__destroy(r->link);
	else
		close(r->fd);
}

static void *release_share(void *arg)
{
	struct releaser *t = arg;
	size_t i;

	for (i = t->first; i < t->n; i += t->stride)
		release_one(&t->r[i]);
	return NULL;
}

/*
 * Releasing a uprobe link waits for the kernel's uprobe grace periods before
 * the close returns: 40-130 ms each here, so a dozen links let go of one after
 * another hold the exit for a second.  Waits that overlap share their grace
 * periods: a thread per link (up to RELEASE_THREADS, each then taking every
 * RELEASE_THREADS-th link) overlaps them; a share whose thread cannot be
 * started is let go of here.
 */
#define RELEASE_THREADS 64

static void release_all(struct release *r, size_t n)
{
	struct releaser t[RELEASE_THREADS];
	size_t i, k = n < RELEASE_THREADS ? n : RELEASE_THREADS;

	for (i = 0; i < k; i++) {
		t[i] = (struct releaser){ .r = r, .n = n, .first = i, .stride = k };
		/* the last share on this thread: one thread fewer */
		t[i].threaded = i + 1 < k &&
				!pthread_create(&t[i].thread, NULL, release_share, &t[i]);
		if (!t[i].threaded)
			release_share(&t[i]);
	}
	for (i = 0; i < k; i++)
		if (t[i].threaded)
			pthread_join(t[i].thread, NULL);
}

void uprobe_sets__free(struct uprobe_set **sets, size_t n_sets, struct bpf_link **links,
		       size_t n_links)
{
	struct release *r;
	size_t i, j, n = n_links;

	for (i = 0; i < n_sets; i++)
		n += sets[i] ? sets[i]->n_links + sets[i]->n_fds : 0;
	r = calloc(n ? n : 1, sizeof(*r));
	if (r) {
		for (i = 0, n = 0; i < n_links; i++)
			r[n++].link = links[i];
		for (i = 0; i < n_sets; i++) {
			for (j = 0; sets[i] && j < sets[i]->n_links; j++)
				r[n++].link = sets[i]->links[j];
			for (j = 0; sets[i] && j < sets[i]->n_fds; j++)
				r[n++] = (struct release){ .fd = sets[i]->fds[j] };
		}
		release_all(r, n);
	} else {
		for (i = 0; i < n_links; i++)
			bpf_link__destroy(links[i]);
		for (i = 0; i < n_sets; i++) {
			for (j = 0; sets[i] && j < sets[i]->n_links; j++)
				bpf_link__destroy(sets[i]->links[j]);
			for (j = 0; sets[i] && j < sets[i]->n_fds; j++)
				close(sets[i]->fds[j]);
		}
	}
	free(r);
	for (i = 0; i < n_sets; i++) {
		if (!sets[i])
			continue;
		free(sets[i]->links);
		free(sets[i]->fds);
		free(sets[i]);
	}
}

void uprobe_set__free(struct uprobe_set *s)
{
	if (s)
		uprobe_sets__free(&s, 1, NULL, 0);
}
