/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Human units in and out: sizes (base 1024) and durations. */
#ifndef CULPERT_UNITS_H
#define CULPERT_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * "4096", "4k", "4K", "4KB", "4KiB", "1.5MiB", "2g": bytes, base 1024.
 * 0 or -EINVAL (junk, negative, overflow).
 */
int parse_size(const char *s, uint64_t *out);
/* "30s", "2m", "500ms", "1h", "1.5s", "10" (seconds): nanoseconds.  0 or -EINVAL. */
int parse_duration(const char *s, uint64_t *out_ns);

/* "1.30 GiB", "512.00 KiB" (base 1024, named so), whole bytes under 1 KiB ("0 B"); returns buf */
char *format_bytes(char *buf, size_t len, double bytes);
/*
 * |v| at or past INT64_MAX, the largest value a pprof sample holds: such a
 * sum is saturated, and every output says so (">=8.00 EiB", docs/cli.md)
 */
bool bytes_saturated(double v);
/* v rounded to an int64, saturated (llround past the range is undefined) */
int64_t round_sat(double v);
/* "12", or ">=9223372036854775807" when saturated; returns buf */
char *format_count(char *buf, size_t len, double n);
/* the same with a sign: "+1.00 MiB", "-12 B", "0 B" */
char *format_bytes_signed(char *buf, size_t len, double bytes);
/* "1m30s", "250ms", "2h0m5s" */
char *format_duration(char *buf, size_t len, uint64_t ns);

#endif /* CULPERT_UNITS_H */
