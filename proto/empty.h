/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Why a profile has no sampled allocation, in one sentence: culpert-bpf
 * prints it at the end of attach and capture, culpert report and info when
 * they read such a profile.  The facts come from the run (attach) or from
 * the profile's comments (docs/profile-format.md).
 */
#ifndef CULPERT_EMPTY_H
#define CULPERT_EMPTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.h"

struct empty_facts {
	uint64_t samples;	/* sampled allocations */
	bool have_calls;	/* the probes counted the calls they saw */
	uint64_t calls;		/* allocator calls seen (nested ones not counted) */
	uint64_t bytes;		/* the bytes they asked for */
	uint64_t rate;		/* sampling interval in bytes; 0 unknown */
	uint64_t duration_ns;	/* 0 unknown */
	bool go;		/* the program is written in Go */
	long pid;		/* the target's, for the commands suggested; 0 unknown */
	/* its child processes, not profiled ("124 (nginx), 125 (nginx)"); NULL or "": none */
	const char *children;
};

/*
 * the facts a culpert-bpf profile records: alloc_calls=, alloc_bytes=,
 * target.runtime=, target.children= ... (f->children points into p)
 */
void empty_facts__from_profile(const struct pprof_profile *p, uint64_t samples,
			       struct empty_facts *f);
/* why nothing was sampled, into buf; false (buf untouched) when something was */
bool empty__explain(const struct empty_facts *f, char *buf, size_t len);

#endif /* CULPERT_EMPTY_H */
