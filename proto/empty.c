// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "empty.h"
#include "units.h"

/* samples a rate gives for a byte count, and the rate that would give about this many */
#define SAMPLES_WANTED 100

static bool comment_u64(const struct pprof_profile *p, const char *key, uint64_t *out)
{
	const char *c = pprof_profile__comment(p, key);
	char *end;

	if (!c || !c[0])
		return false;
	*out = strtoull(c, &end, 10);
	return !*end;
}

void empty_facts__from_profile(const struct pprof_profile *p, uint64_t samples,
			       struct empty_facts *f)
{
	const char *rt = pprof_profile__comment(p, "target.runtime");
	const char *pid = pprof_profile__comment(p, "target.pid");

	memset(f, 0, sizeof(*f));
	f->samples = samples;
	f->have_calls = comment_u64(p, "alloc_calls", &f->calls) &&
			comment_u64(p, "alloc_bytes", &f->bytes);
	f->rate = p->period > 0 ? (uint64_t)p->period : 0;
	f->duration_ns = p->duration_nanos > 0 ? (uint64_t)p->duration_nanos : 0;
	f->go = rt && !strcmp(rt, "go");
	f->pid = pid ? strtol(pid, NULL, 10) : 0;
	f->children = pprof_profile__comment(p, "target.children");
}

/*
 * "--rate 256 (about 100 samples at this load)": a power of two of bytes
 * giving about SAMPLES_WANTED; with no more calls than that, rate 1 samples
 * each of them, and says how many that is
 */
static char *rate_hint(char *buf, size_t len, uint64_t bytes, uint64_t calls)
{
	uint64_t want = bytes / SAMPLES_WANTED, r = 1;
	char rate[32];

	/* a sample is at most a call: with this few, each call is one */
	while (calls > SAMPLES_WANTED && r * 2 <= want && r < (1ULL << 40))
		r *= 2;
	if (r >= 1024)
		snprintf(rate, sizeof(rate), "%" PRIu64 "KiB", r / 1024);
	else
		snprintf(rate, sizeof(rate), "%" PRIu64, r);
	if (r == 1)
		snprintf(buf, len, "--rate 1 (every call: %" PRIu64 " sample%s at this load)", calls,
			 calls == 1 ? "" : "s");
	else
		snprintf(buf, len, "--rate %s (about %" PRIu64 " samples at this load)", rate,
			 bytes / r < calls ? bytes / r : calls);
	return buf;
}

/* " (pid 12's child processes 13 (nginx), 14 (nginx) were not profiled: ...)" */
static const char *children_hint(char *buf, size_t len, const struct empty_facts *f,
				 const char *pid)
{
	if (!f->children || !f->children[0])
		return "";
	snprintf(buf, len, "; its child processes %s were not profiled: they may be the ones "
		 "that allocate (a server's workers, a database's backends): "
		 "'culpert-bpf attach --pid %s --children' follows them", f->children, pid);
	return buf;
}

static char *during(char *buf, size_t len, uint64_t ns)
{
	char d[32];

	if (ns)
		snprintf(buf, len, " in %s", format_duration(d, sizeof(d), ns));
	else
		buf[0] = '\0';
	return buf;
}

bool empty__explain(const struct empty_facts *f, char *buf, size_t len)
{
	char b[32], r[32], hint[96], in[48], pid[24], kids[640];

	if (f->samples)
		return false;
	if (f->pid > 0)
		snprintf(pid, sizeof(pid), "%ld", f->pid);
	else
		snprintf(pid, sizeof(pid), "PID");
	during(in, sizeof(in), f->duration_ns);
	format_bytes(r, sizeof(r), (double)f->rate);
	if (f->go) {
		char seen[96] = "";

		if (f->have_calls)
			snprintf(seen, sizeof(seen), " (%" PRIu64 " C allocator call%s for %s%s)",
				 f->calls, f->calls == 1 ? "" : "s",
				 format_bytes(b, sizeof(b), (double)f->bytes), in);
		snprintf(buf, len, "the program is written in Go, whose runtime allocates its heap "
			 "without malloc: only C allocations (cgo, C libraries) reach the probes%s; "
			 "profile a Go heap with runtime/pprof or net/http/pprof's /debug/pprof/heap",
			 seen);
	}
	else if (f->have_calls && !f->calls && f->children && f->children[0])
		snprintf(buf, len, "no allocator call was seen%s: pid %s itself did not allocate "
			 "while profiled%s", in, pid, children_hint(kids, sizeof(kids), f, pid));
	else if (f->have_calls && !f->calls)
		snprintf(buf, len, "no allocator call was seen%s: the process did not allocate "
			 "while profiled (idle or blocked), or its code allocates through another "
			 "allocator than the one probed ('culpert-bpf probes --pid %s' shows it)", in,
			 pid);
	else if (f->have_calls && f->rate > 1 && f->children && f->children[0] &&
		 f->calls < SAMPLES_WANTED)
		/* a few calls of a parent that serves through its children: the rate is not it */
		snprintf(buf, len, "only %" PRIu64 " allocator call%s for %s%s by pid %s itself, and "
			 "no sample fell at one per %s%s", f->calls, f->calls == 1 ? "" : "s",
			 format_bytes(b, sizeof(b), (double)f->bytes), in, pid, r,
			 children_hint(kids, sizeof(kids), f, pid));
	else if (f->have_calls && f->rate > 1)
		snprintf(buf, len, "%" PRIu64 " allocator call%s for %s%s: %.2g samples expected at "
			 "one per %s, and none fell; try %s or a longer --duration%s", f->calls,
			 f->calls == 1 ? "" : "s", format_bytes(b, sizeof(b), (double)f->bytes), in,
			 (double)f->bytes / (double)f->rate, r,
			 rate_hint(hint, sizeof(hint), f->bytes, f->calls),
			 children_hint(kids, sizeof(kids), f, pid));
	else if (f->have_calls)
		snprintf(buf, len, "%" PRIu64 " allocator calls were seen%s but none was recorded "
			 "(lost: see lost_samples)", f->calls, in);
	else
		snprintf(buf, len, "no allocation was sampled%s at --rate %s, and the profile does "
			 "not say how many allocator calls were seen: if the process allocated, a "
			 "smaller --rate (e.g. --rate 4KiB) samples it", in, r);
	return true;
}
