/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The exact span totals of a capture (bpf/totals.bpf.h), read from the BPF
 * side once detached, as proto/totals.h writes them into the profile.
 */
#ifndef CULPERT_COLLECT_SPAN_TOTALS_H
#define CULPERT_COLLECT_SPAN_TOTALS_H

#include <linux/types.h>

#include "culpert.h"

struct bpfobj;
struct span_totals;
struct spans;

/*
 * Every span path of the process with its names resolved through `spans`;
 * what is outside any span is the rest of `seen` (every allocator call the
 * probes saw).  0 or -errno.
 */
int span_totals_collect(const struct bpfobj_proc *pr, struct spans *spans,
			const struct culpert_calls_seen *seen, struct span_totals *out);

#endif /* CULPERT_COLLECT_SPAN_TOTALS_H */
