/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel UAPI that libbpf 1.1 and Debian 12's linux/bpf.h predate.  The
 * values are the kernel's own (include/uapi/linux/bpf.h); the layout of the
 * link_create attributes is checked against the offsets the kernel uses.
 */
#ifndef CULPERT_BPF_COMPAT_H
#define CULPERT_BPF_COMPAT_H

#include <linux/types.h>
#include <stddef.h>

#define CULPERT_BPF_LINK_CREATE			28	/* enum bpf_cmd */
#define CULPERT_BPF_TRACE_UPROBE_MULTI		48	/* enum bpf_attach_type, Linux 6.6 */
#define CULPERT_BPF_TRACE_UPROBE_SESSION	57	/* enum bpf_attach_type, Linux 6.13 */
#define CULPERT_BPF_F_UPROBE_MULTI_RETURN	(1U << 0)

/* union bpf_attr, the link_create.uprobe_multi member */
struct culpert_uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;		/* const char * */
	__u64 offsets;		/* const unsigned long * */
	__u64 ref_ctr_offsets;	/* const unsigned long *, optional */
	__u64 cookies;		/* const __u64 *, optional */
	__u32 cnt;
	__u32 multi_flags;	/* CULPERT_BPF_F_UPROBE_MULTI_RETURN */
	__u32 pid;
	__u32 pad;
};

_Static_assert(offsetof(struct culpert_uprobe_multi_attr, path) == 16, "bpf_attr layout");
_Static_assert(offsetof(struct culpert_uprobe_multi_attr, cnt) == 48, "bpf_attr layout");
_Static_assert(offsetof(struct culpert_uprobe_multi_attr, pid) == 56, "bpf_attr layout");

#endif /* CULPERT_BPF_COMPAT_H */
