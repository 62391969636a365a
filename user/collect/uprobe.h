/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Attaching one BPF program to many offsets of one object, for one process.
 * Uses a uprobe_multi (or uprobe session) link through the raw bpf()
 * syscall where the kernel has it, one perf-event uprobe per offset
 * through libbpf otherwise.
 */
#ifndef CULPERT_UPROBE_H
#define CULPERT_UPROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_link;
struct bpf_program;
struct uprobe_set;

enum uprobe_mode {
	UPROBE_MODE_PERF,	/* one perf-event uprobe per offset (any kernel with uprobes) */
	UPROBE_MODE_MULTI,	/* BPF_TRACE_UPROBE_MULTI link (6.6+) */
	UPROBE_MODE_SESSION,	/* BPF_TRACE_UPROBE_SESSION link (6.13+) */
};

/* the attach type a program must be loaded with for `mode` */
unsigned int uprobe_mode__attach_type(enum uprobe_mode mode);
const char *uprobe_mode__name(enum uprobe_mode mode);

struct uprobe_set *uprobe_set__new(void);
/*
 * Attach prog at `offsets` (file offsets) of `path`, cookies[i] for
 * offsets[i]; `retprobe` for return probes (not with SESSION).  All or
 * nothing: on failure nothing of this call stays attached.  0 or -errno.
 */
int uprobe_set__attach(struct uprobe_set *s, enum uprobe_mode mode, const struct bpf_program *prog,
		       const char *path, const uint64_t *offsets, const uint64_t *cookies,
		       size_t n, pid_t pid, int retprobe);
/*
 * The same through one uprobe_multi link, with a USDT semaphore per offset
 * (ref_ctrs[i], a file offset, 0 for none) that the kernel increments in
 * the process while the probe is in.  0 or -errno.
 */
int uprobe_set__attach_refctr(struct uprobe_set *s, const struct bpf_program *prog,
			      const char *path, const uint64_t *offsets, const uint64_t *ref_ctrs,
			      const uint64_t *cookies, size_t n, pid_t pid);
/* probe sites attached so far */
size_t uprobe_set__count(const struct uprobe_set *s);
/* detach everything (the kernel removes the breakpoints) */
void uprobe_set__free(struct uprobe_set *s);
/*
 * Many sets and libbpf links at once (NULL sets skipped), their waits for
 * the kernel's grace periods overlapped: about one grace period for all.
 */
void uprobe_sets__free(struct uprobe_set **sets, size_t n_sets, struct bpf_link **links,
		       size_t n_links);

#endif /* CULPERT_UPROBE_H */
