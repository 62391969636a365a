/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel features, probed once at start-up.  Required ones missing make the
 * command fail naming the kernel needed; optional ones select a fallback.
 */
#ifndef CULPERT_KFEATURES_H
#define CULPERT_KFEATURES_H

#include <stdbool.h>
#include <stddef.h>

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
	char release[65];	/* uname -r */
};

const struct kfeatures *features__get(void);
/* root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE (CAP_SYS_ADMIN covers the first two) */
bool features__privileged(void);
/* a user-facing reason why collection cannot work here, or NULL */
const char *features__blocker(void);

#endif /* CULPERT_KFEATURES_H */
