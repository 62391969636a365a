// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's start-up calibration of what one uprobe hit costs a process
 * on this kernel (user/agent/budget.c): a program doing what the
 * collector's allocation probes do on a call they do not sample -- a hash
 * lookup by tgid and a counter -- so the trap and the program's run are
 * both in the figure.  The counter also proves every call was a hit.  The
 * same program serves the entry, the return and (calib_session, which
 * asks for no return, as the collector's session does on a call it does
 * not sample) the session classes of probe site.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} calib_hits SEC(".maps");

static __always_inline void hit(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 *n = bpf_map_lookup_elem(&calib_hits, &tgid);

	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("uprobe")
int calib_hit(void *ctx)
{
	hit();
	return 0;
}

SEC("uprobe")
int calib_ret(void *ctx)
{
	hit();
	return 0;
}

/* a session's entry: 1 asks for no return probe */
SEC("uprobe")
int calib_session(void *ctx)
{
	hit();
	return 1;
}
