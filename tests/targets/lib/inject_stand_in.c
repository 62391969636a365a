// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stand-in for libculpert-sampler.so with the injection interface
 * (docs/inject.md) and the otel_memory probes, which never fire: what
 * tests/bpf/test_inject.sh loads to test the injector itself (stops,
 * restarted syscalls, signals, a killed culpert-bpf) apart from the
 * sampler.  Each call is counted where the target can read it:
 * culpert_inject_calls[0] takeovers, [1] releases.
 */
#include <stdint.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#define EXPORT __attribute__((visibility("default")))

__attribute__((used, section(".probes"))) volatile unsigned short otel_memory_alloc_semaphore;
__attribute__((used, section(".probes"))) volatile unsigned short otel_memory_free_semaphore;

EXPORT volatile unsigned long culpert_inject_calls[2];
static volatile int taken;

/* the probe sites the plan of an attach needs; never called */
EXPORT __attribute__((noipa)) void culpert_stand_in_sites(void *p, uint64_t size)
{
	if (otel_memory_alloc_semaphore)
		STAP_PROBE3(otel_memory, alloc, (uint64_t)(uintptr_t)p, size, size);
	if (otel_memory_free_semaphore)
		STAP_PROBE1(otel_memory, free, (uint64_t)(uintptr_t)p);
}

EXPORT int culpert_sampler_takeover(unsigned long rate_bytes)
{
	(void)rate_bytes;
	culpert_inject_calls[0]++;
	taken = 1;
	return 0;
}

EXPORT int culpert_sampler_release(void)
{
	culpert_inject_calls[1]++;
	taken = 0;
	return 0;
}

EXPORT int culpert_sampler_state(void)
{
	return taken;
}
