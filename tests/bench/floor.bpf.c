// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The overhead floor: an empty program on the same probe points as culpert-bpf. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int floor_enter(void *ctx)
{
	return 0;
}

/* the floor of a culpert:span_* USDT site: the probe and libbpf's USDT dispatch, nothing read */
SEC("usdt")
int floor_usdt(struct pt_regs *ctx)
{
	return 0;
}
