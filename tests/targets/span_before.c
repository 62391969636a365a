// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A span already open when the profiler attaches: handle_request is entered
 * before (no profiler listens: the probe does not fire and the span gets id
 * 0), the profiler attaches inside it, and its build_response child
 * allocates 3 MiB.  Then 4 requests, all seen whole, allocate 2 MiB each in
 * handle_request;build_response.  Prints "pid N ready" (inside the first
 * request), waits for SIGUSR1, runs, prints "total PATH BYTES" and exits.
 */
#include <stdio.h>
#include <stdlib.h>

#include <culpert/span.h>
#include "ready.h"

#define NOINLINE __attribute__((noipa))
#define MiB (1024UL * 1024)

static void *volatile sink;

static NOINLINE void build_response(unsigned long bytes)
{
	uint64_t id = culpert_span_enter("build_response", 0);
	unsigned long done;

	for (done = 0; done < bytes; done += 4096) {
		sink = malloc(4096);
		free(sink);
	}
	culpert_span_exit(id);
}

int main(void)
{
	uint64_t req = culpert_span_enter("handle_request", 0);
	int i;

	ready_then_wait(stdout);
	build_response(3 * MiB);
	culpert_span_exit(req);
	for (i = 0; i < 4; i++) {
		req = culpert_span_enter("handle_request", 0);
		build_response(2 * MiB);
		culpert_span_exit(req);
	}
	printf("total (entered before attach);build_response %lu\n", 3 * MiB);
	printf("total handle_request;build_response %lu\n", 8 * MiB);
	return 0;
}
