// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A small stand-in for a native service: it handles "requests" in a loop.
 * Each request is a span with nested spans for its stages, marked with
 * include/culpert/span.h, so a profile of it shows which stage allocates
 * what.  Built with frame pointers.
 *
 *   handle_request
 *     parse_payload      header strings
 *       json             a JSON document decoded into many small nodes (the heavy one)
 *     validate_payload   a scratch index
 *     build_response     a response body grown with realloc
 *
 * Outside any request a cache keeps the last 8 refills (8 MiB live), and
 * every 16th request forgets to free its headers: a slow leak to find.
 *
 *   demo_service [SECONDS]     run for SECONDS (default: until killed)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <culpert/span.h>

#define NOINLINE __attribute__((noipa))

static volatile sig_atomic_t done;
static volatile unsigned long sink;

static void on_term(int sig)
{
	done = 1;
}

struct node {
	struct node *next;
	char *key;
	char *value;
};

/* many small allocations: one node, a key and a value per member */
static NOINLINE struct node *decode_json(unsigned int members)
{
	struct node *head = NULL;
	unsigned int i;

	CULPERT_SPAN_SCOPE("json");
	for (i = 0; i < members; i++) {
		struct node *n = malloc(sizeof(*n));

		n->key = malloc(16 + i % 32);
		n->value = malloc(48 + (i * 7) % 160);
		n->key[0] = n->value[0] = (char)i;
		n->next = head;
		head = n;
	}
	return head;
}

static void free_json(struct node *n)
{
	while (n) {
		struct node *next = n->next;

		free(n->key);
		free(n->value);
		free(n);
		n = next;
	}
}

static NOINLINE struct node *parse_payload(char ***headers, unsigned int n)
{
	unsigned int i;

	CULPERT_SPAN_SCOPE("parse_payload");
	*headers = malloc(n * sizeof(**headers));
	for (i = 0; i < n; i++) {
		(*headers)[i] = malloc(32 + (i * 37) % 200);
		(*headers)[i][0] = (char)i;
	}
	return decode_json(256);
}

/* a 4 KiB scratch index per field checked */
static NOINLINE void validate_payload(const struct node *doc)
{
	unsigned int fields = 0;

	CULPERT_SPAN_SCOPE("validate_payload");
	for (; doc && fields < 4; doc = doc->next, fields++) {
		char *index = calloc(1, 4096);

		sink += (unsigned long)index[fields];
		free(index);
	}
}

/* the response body, grown as it is rendered */
static NOINLINE void build_response(void)
{
	size_t cap = 1024, len = 0;
	char *buf;

	CULPERT_SPAN_SCOPE("build_response");
	buf = malloc(cap);
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

/* now and then, outside any request, a 1 MiB cache refill; the last 8 stay */
static NOINLINE void refill_cache(void)
{
	static char *cache[8];
	static unsigned int next;

	free(cache[next]);
	cache[next] = malloc(1 << 20);
	cache[next][0] = 1;
	next = (next + 1) % 8;
}

static NOINLINE void handle_request(unsigned long id)
{
	struct node *doc;
	char **headers;
	unsigned int i;

	CULPERT_SPAN_SCOPE("handle_request");
	doc = parse_payload(&headers, 16);
	validate_payload(doc);
	build_response();
	free_json(doc);
	/* the bug: an early return path that forgets the headers */
	if (id % 16 == 0)
		return;
	for (i = 0; i < 16; i++)
		free(headers[i]);
	free(headers);
}

int main(int argc, char **argv)
{
	struct timespec pause = { 0, 200000 };	/* 0.2 ms between requests */
	time_t end = argc > 1 ? time(NULL) + atol(argv[1]) : 0;
	unsigned long id = 0;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	while (!done && (!end || time(NULL) < end)) {
		handle_request(id);
		if (++id % 64 == 0)
			refill_cache();
		nanosleep(&pause, NULL);
	}
	printf("demo_service: handled %lu requests\n", id);
	return 0;
}
