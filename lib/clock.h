/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A clock as nanoseconds. */
#ifndef CULPERT_CLOCK_H
#define CULPERT_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC is also the BPF side's bpf_ktime_get_ns() and perf's clockid */
static inline uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ns from now on clk, as pthread_cond_timedwait() takes it (clk: the condition's clock) */
static inline struct timespec clock_deadline(clockid_t clk, uint64_t ns)
{
	uint64_t t = clock_ns(clk) + ns;

	return (struct timespec){ (time_t)(t / 1000000000ULL), (long)(t % 1000000000ULL) };
}

#endif /* CULPERT_CLOCK_H */
