// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The overhead floor: an empty program on the same probe points as culpert-bpf. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int floor_enter(void *ctx)
{
	return 0;
}
