/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel's uprobe PMU, for uprobes made with perf_event_open rather
 * than through BPF links: the sampler listener (samplerpage.c) and the
 * capability probe of kfeatures.c both need its event type.
 */
#ifndef CULPERT_PERFUPROBE_H
#define CULPERT_PERFUPROBE_H

#define UPROBE_PMU_TYPE "/sys/bus/event_source/devices/uprobe/type"

/* the perf event type of the uprobe PMU: > 0, -ENOENT without one, or the read's error */
int perf_uprobe_pmu_type(void);

#endif /* CULPERT_PERFUPROBE_H */
