// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ground truth for span attribution.  Known totals allocated inside nested
 * spans, with a parent span ("request") that allocates nothing itself and
 * a span ("worker") entered on three threads at once:
 *
 *   request;parse        32 MiB        request;validate   32 MiB
 *   request;parse;json   48 MiB        worker (3 threads) 48 MiB
 *   (no span)            32 MiB
 *
 * Built with include/culpert/span.h by default; with -DNO_SPANS the same
 * program has no probes at all, and the spans must come from --span-fn.
 * Prints "pid N ready", waits for SIGUSR1, runs, prints "total PATH BYTES".
 * "span_abc N" divides every total by N (1-64): an emulated guest checks
 * the same paths with N times fewer allocator calls at a rate N times finer.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ready.h"

#ifndef NO_SPANS
#include <culpert/span.h>
#define SPAN(name) CULPERT_SPAN_SCOPE(name)
#else
#define SPAN(name) do { } while (0)
#endif

#define NOINLINE __attribute__((noipa))
#define MiB (1024UL * 1024)

static volatile unsigned long sink;
static unsigned long scale = 1;

/* 64..1024-byte blocks, far below the test's rate, until `total` bytes */
static NOINLINE void alloc_bytes(unsigned long total)
{
	unsigned long done = 0, i = 0;

	total /= scale;
	while (done < total) {
		size_t sz = 64 * (1 + i++ % 16);
		char *p = malloc(sz);

		sink += (unsigned long)p;
		free(p);
		done += sz;
	}
}

static NOINLINE void json(void)
{
	SPAN("json");
	alloc_bytes(48 * MiB);
}

static NOINLINE void parse(void)
{
	SPAN("parse");
	alloc_bytes(32 * MiB);
	json();
}

static NOINLINE void validate(void)
{
	SPAN("validate");
	alloc_bytes(32 * MiB);
}

/* allocates nothing itself: its total is its children's */
static NOINLINE void request(void)
{
	SPAN("request");
	parse();
	validate();
}

static NOINLINE void *worker(void *arg)
{
	SPAN("worker");
	alloc_bytes(16 * MiB);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[3];
	int i;

	if (argc > 1)
		scale = strtoul(argv[1], NULL, 10);
	if (scale < 1 || scale > 64) {
		fprintf(stderr, "usage: span_abc [DIVISOR 1-64]\n");
		return 2;
	}
	ready_then_wait(stdout);

	for (i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	request();
	alloc_bytes(32 * MiB);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("total request;parse %lu\n", 32 * MiB / scale);
	printf("total request;parse;json %lu\n", 48 * MiB / scale);
	printf("total request;validate %lu\n", 32 * MiB / scale);
	printf("total worker %lu\n", 48 * MiB / scale);
	printf("total (no-span) %lu\n", 32 * MiB / scale);
	return 0;
}
