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
	bool bpf_refused;	/* bpf() itself fails with EPERM: seccomp or an LSM, not the kernel */
	bool seccomp;		/* this process runs under a seccomp filter (/proc/self/status) */
	char release[65];	/* uname -r */
};

const struct kfeatures *features__get(void);
/* root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE (CAP_SYS_ADMIN covers the first two) */
bool features__privileged(void);
/* a user-facing reason why collection cannot work here, or NULL */
const char *features__blocker(void);

#endif /* CULPERT_KFEATURES_H */
