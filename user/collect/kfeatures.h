/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel features, probed once at start-up.  Required ones missing make the
 * command fail naming the kernel needed; optional ones select a fallback.
 */
#ifndef CULPERT_KFEATURES_H
#define CULPERT_KFEATURES_H

#include <linux/capability.h>
#include <stdbool.h>
#include <stddef.h>

/* Linux 5.8's; older UAPI headers lack them */
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

struct kfeatures {
	bool btf;		/* /sys/kernel/btf/vmlinux: CO-RE and task storage (5.11+) */
	bool uprobes;		/* the uprobe PMU: CONFIG_UPROBE_EVENTS */
	bool ringbuf;		/* BPF ring buffer (5.8+) */
	bool uprobe_multi;	/* BPF_TRACE_UPROBE_MULTI links (6.6+) */
	bool uprobe_session;	/* BPF_TRACE_UPROBE_SESSION links (6.13+) */
	bool task_storage;	/* BPF_MAP_TYPE_TASK_STORAGE (5.11+) */
	bool bpf_loop;		/* the bpf_loop() helper (5.17+): span pruning, stack copies */
	bool find_vma;		/* the bpf_find_vma() helper (5.17+): unread span names */
	/*
	 * Hash maps allocate their elements with bpf_mem_alloc (6.1+): before,
	 * a tracing program using a BPF_F_NO_PREALLOC hash map made the
	 * verifier WARN (and refuse it on PREEMPT_RT): live_allocs is then
	 * preallocated.
	 */
	bool hash_no_prealloc;
	bool bpf_refused;	/* bpf() itself fails with EPERM: seccomp or an LSM, not the kernel */
	bool seccomp;		/* this process runs under a seccomp filter (/proc/self/status) */
	char release[65];	/* uname -r */
};

const struct kfeatures *features__get(void);
/* is capability cap (CAP_*) in our effective set? */
bool features__has_cap(int cap);
/* does this kernel allow perf-event uprobes only with CAP_SYS_ADMIN, which we lack? */
bool features__perf_uprobes_need_admin(void);
/* a user-facing reason why collection cannot work here, or NULL */
const char *features__blocker(void);
/* the same for the perf-event uprobes --no-multi (or a kernel without uprobe_multi) uses */
const char *features__perf_uprobe_blocker(bool no_multi);

#endif /* CULPERT_KFEATURES_H */
