// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The collector's duty-cycling hook, driven as budget.c drives it: one
 * target under a collector, its allocation probes on for 1 s, off for 1 s,
 * on again for 1 s.  For each phase prints "PHASE ALLOC_HITS FREE_HITS
 * OBSERVED_NS ON_NS SWITCH_NS" (the hits of that phase, the observed time so
 * far; by this program's clock, the time the probes were on so far outside
 * the switches, and the time the switches took), then "probes STATE" and
 * "sampler PATH" (otel_memory or uprobes).  The observed time lies between
 * ON_NS and ON_NS + SWITCH_NS however slow the machine is.  With
 * CYCLES, that many off/on switches at once after the phases, then one
 * more second on: the phase "cycled".
 *   dutycheck PID [CYCLES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "agent.h"
#include "collector.h"
#include "targets.h"

static uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* by this program's clock: the probes on (outside switches) since, the switches' time */
static uint64_t on_since, on_ns, switch_ns;

/* poll the collector for a second */
static void run(struct collector *c)
{
	uint64_t end = mono_ns() + 1000000000ULL;
	struct timespec step = { 0, 50 * 1000000L };

	while (mono_ns() < end) {
		collector__poll(c, mono_ns());
		nanosleep(&step, NULL);
	}
}

static int phase(struct collector *c, pid_t pid, const char *name, struct collector_state *last)
{
	struct collector_state st;

	uint64_t t;

	run(c);
	t = mono_ns();
	if (collector__state(c, pid, 0, &st))
		return -1;
	/* read before the state: the observed time there is at least this */
	if (on_since)
		on_ns += t - on_since;
	on_since = on_since ? t : 0;
	printf("%s %llu %llu %llu %llu %llu\n", name,
	       (unsigned long long)(st.calls_alloc - last->calls_alloc),
	       (unsigned long long)(st.calls_free - last->calls_free),
	       (unsigned long long)st.observed_ns, (unsigned long long)on_ns,
	       (unsigned long long)switch_ns);
	*last = st;
	return 0;
}

/*
 * Switch, and count the next phase from the moment the switch returned: the
 * hits while the links were being let go of belong to neither phase.
 */
static int switch_to(struct collector *c, pid_t pid, bool on, struct collector_state *last)
{
	uint64_t t0 = mono_ns();
	int err;

	if (!on && on_since)
		on_ns += t0 - on_since;
	err = collector__set_alloc_probes(c, pid, 0, on) || collector__state(c, pid, 0, last);
	switch_ns += mono_ns() - t0;
	on_since = on ? mono_ns() : 0;
	return err;
}

int main(int argc, char **argv)
{
	struct session_opts o = { .rate = 512 * 1024, .inuse = true, .unwind = SESSION_UNWIND_FP,
				  .max_depth = 64, .max_live = 1 << 16 };
	struct agent_target t = { 0 };
	struct collector_state last = { 0 };
	struct collector *c;
	unsigned long cycles, i;
	uint64_t t0;
	char err[1024];

	if (argc != 2 && argc != 3)
		return 2;
	cycles = argc == 3 ? strtoul(argv[2], NULL, 10) : 0;
	t.pid = atoi(argv[1]);
	snprintf(t.comm, sizeof(t.comm), "target");
	c = collector__new(&o, 4, 1024, false, false, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "dutycheck: %s\n", err);
		return 1;
	}
	/* attached on the collector's own thread: pending until then (a switch) */
	t0 = mono_ns();
	if (!collector__add(c, &t))
		for (i = 0; i < 3000 && collector__attaching(c, t.pid, 0); i++)
			usleep(10000);
	on_since = mono_ns();
	switch_ns = on_since - t0;
	if (collector__pending(c, t.pid, 0) || phase(c, t.pid, "on", &last) ||
	    switch_to(c, t.pid, false, &last) || phase(c, t.pid, "off", &last) ||
	    switch_to(c, t.pid, true, &last) || phase(c, t.pid, "on", &last)) {
		fprintf(stderr, "dutycheck: failed\n");
		collector__free(c);
		return 1;
	}
	for (i = 0; i < cycles; i++) {
		if (collector__set_alloc_probes(c, t.pid, 0, false) ||
		    collector__set_alloc_probes(c, t.pid, 0, true)) {
			collector__state(c, t.pid, 0, &last);
			fprintf(stderr, "dutycheck: switch %lu of %lu: %s\n", i + 1, cycles,
				last.error);
			collector__free(c);
			return 1;
		}
	}
	/* the phase after the switches, counted from the last one */
	if (cycles && (collector__state(c, t.pid, 0, &last) || phase(c, t.pid, "cycled", &last))) {
		collector__free(c);
		return 1;
	}
	collector__state(c, t.pid, 0, &last);
	printf("probes %s\nsampler %s\n", last.probes, last.sampler);
	collector__free(c);
	return 0;
}
