// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A small stand-in for a native service: it handles "requests" in a loop,
 * each step allocating in its own function, so a profile of it shows who
 * allocates what.  Built with frame pointers.
 *
 *   demo_service [SECONDS]     run for SECONDS (default: until killed)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noipa))

static volatile sig_atomic_t done;
static volatile unsigned long sink;

static void on_term(int sig)
{
	done = 1;
}

/* small strings: header names and values */
static NOINLINE char **parse_headers(unsigned int n)
{
	char **h = malloc(n * sizeof(*h));
	unsigned int i;

	for (i = 0; i < n; i++) {
		h[i] = malloc(32 + (i * 37) % 200);
		h[i][0] = (char)i;
	}
	return h;
}

static NOINLINE void free_headers(char **h, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		free(h[i]);
	free(h);
}

/* a 4 KiB index block per query term */
static NOINLINE void build_index(unsigned int terms)
{
	unsigned int i;

	for (i = 0; i < terms; i++) {
		char *b = calloc(1, 4096);

		sink += (unsigned long)b[i % 4096];
		free(b);
	}
}

/* the response body, grown as it is rendered */
static NOINLINE void render_page(void)
{
	size_t cap = 1024, len = 0;
	char *buf = malloc(cap);

	while (len < 48 * 1024) {
		if (len + 1024 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		memset(buf + len, 'x', 1024);
		len += 1024;
	}
	sink += (unsigned long)buf[len - 1];
	free(buf);
}

/* now and then, a large cache refill */
static NOINLINE void refill_cache(void)
{
	char *c = malloc(1 << 20);

	c[0] = 1;
	sink += (unsigned long)c[0];
	free(c);
}

static NOINLINE void handle_request(unsigned long id)
{
	char **h = parse_headers(16);

	build_index(4);
	render_page();
	if (id % 64 == 0)
		refill_cache();
	free_headers(h, 16);
}

int main(int argc, char **argv)
{
	struct timespec pause = { 0, 200000 };	/* 0.2 ms between requests */
	time_t end = argc > 1 ? time(NULL) + atol(argv[1]) : 0;
	unsigned long id = 0;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	while (!done && (!end || time(NULL) < end)) {
		handle_request(id++);
		nanosleep(&pause, NULL);
	}
	printf("demo_service: handled %lu requests\n", id);
	return 0;
}
