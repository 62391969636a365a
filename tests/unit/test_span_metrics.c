// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's span metrics (user/agent/span_metrics.c): cumulative buckets
 * from the profile's histogram, _sum and _count, the counters; and the
 * whole exposition through the Prometheus client's own parser
 * (tests/tools/promcheck.py, which also checks histogram consistency).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memfmt.h"
#include "span_metrics.h"
#include "test.h"
#include "totals.h"

static void labels(FILE *f, const void *ctx)
{
	memfmt_prom_label(f, "pid", ctx, false);
}

/* does the exposition hold this exact line? */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p;

	for (p = text; (p = strstr(p, line)); p += n)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

static void test_exposition(void)
{
	/* 200 requests: 150 of [1536, 1792) bytes, 50 of [4096, 5120) */
	struct totals_bucket h[] = { { 1536, 150 }, { 4096, 50 } };
	struct span_total req = { .path = (char *)"handle \"get\"", .self_bytes = 1000,
				  .self_calls = 10, .incl_bytes = 500000, .incl_calls = 900,
				  .instances = 200, .open = 1, .max_bytes = 5000,
				  .closed_bytes = 480000, .hist = h, .n_hist = 2 };
	struct span_totals t = { 0 };
	struct span_metrics_target m[2] = { { &t, labels, "41" }, { &t, labels, "42" } };
	char *text = NULL, cmd[512];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len), *p;

	if (!ASSERT_OK_PTR(f, "memstream") || !ASSERT_EQ(span_totals__add(&t, &req), 0, "add"))
		return;
	ASSERT_EQ(span_metrics_write(f, m, 2), 0, "write");
	fclose(f);
	ASSERT_TRUE(has_line(text, "culpert_span_alloc_bytes_bucket{pid=\"41\",span=\"handle \\\"get\\\"\",le=\"1023\"} 0"),
		    "nothing under 1 KiB");
	ASSERT_TRUE(has_line(text, "culpert_span_alloc_bytes_bucket{pid=\"41\",span=\"handle \\\"get\\\"\",le=\"2047\"} 150"),
		    "150 under 2 KiB");
	ASSERT_TRUE(has_line(text, "culpert_span_alloc_bytes_bucket{pid=\"41\",span=\"handle \\\"get\\\"\",le=\"4095\"} 150"),
		    "the next power of two has none more");
	ASSERT_TRUE(has_line(text, "culpert_span_alloc_bytes_bucket{pid=\"42\",span=\"handle \\\"get\\\"\",le=\"8191\"} 200"),
		    "all of them under 8 KiB");
	ASSERT_TRUE(has_line(text, "culpert_span_alloc_bytes_sum{pid=\"41\",span=\"handle \\\"get\\\"\"} 480000"),
		    "sum: the closed instances' bytes");
	ASSERT_TRUE(has_line(text, "culpert_span_alloc_bytes_count{pid=\"41\",span=\"handle \\\"get\\\"\"} 200"),
		    "count: the closed instances");
	ASSERT_TRUE(has_line(text, "culpert_span_allocated_bytes_total{pid=\"41\",span=\"handle \\\"get\\\"\"} 500000"),
		    "inclusive bytes");
	ASSERT_TRUE(has_line(text, "culpert_span_open_instances{pid=\"42\",span=\"handle \\\"get\\\"\"} 1"),
		    "open instances");
	/* the real parser, and the naming and histogram rules */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 tests/tools/promcheck.py pid >/dev/null");
	p = popen(cmd, "w");
	if (ASSERT_OK_PTR(p, "promcheck")) {
		fwrite(text, 1, len, p);
		ASSERT_EQ(pclose(p), 0, "promcheck.py accepts the exposition");
	}
	free(text);
	span_totals__free(&t);
}

int main(void)
{
	test_group = "unit/span_metrics";
	RUN_TEST(test_exposition);
	return TEST_EXIT();
}
