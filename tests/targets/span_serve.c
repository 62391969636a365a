// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A server that never changes: request after request, until killed, each
 * handle_request allocating 8 KiB in parse and 16 KiB in build_response, 8
 * of them in its json child; most of a request's time is spent inside
 * build_response, so a profiler attaching at a random moment often lands
 * inside a request (whose spans it then shows under "(entered before
 * attach)").  Prints "pid N ready" once serving.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <culpert/span.h>

#define NOINLINE __attribute__((noipa))

static void *volatile sink;

static NOINLINE void alloc_kib(unsigned long kib)
{
	unsigned long i;

	for (i = 0; i < kib; i++) {
		sink = malloc(1024);
		free(sink);
	}
}

static NOINLINE void json(void)
{
	uint64_t id = culpert_span_enter("json", 0);
	struct timespec ts = { 0, 500 * 1000 };

	alloc_kib(8);
	nanosleep(&ts, NULL);
	culpert_span_exit(id);
}

static NOINLINE void build_response(void)
{
	uint64_t id = culpert_span_enter("build_response", 0);
	struct timespec ts = { 0, 500 * 1000 };

	alloc_kib(4);
	nanosleep(&ts, NULL);
	json();
	alloc_kib(4);
	culpert_span_exit(id);
}

static NOINLINE void parse(void)
{
	uint64_t id = culpert_span_enter("parse", 0);

	alloc_kib(8);
	culpert_span_exit(id);
}

int main(void)
{
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		uint64_t id = culpert_span_enter("handle_request", 0);

		parse();
		build_response();
		culpert_span_exit(id);
	}
	return 0;
}
