/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Human units in and out: sizes (base 1024) and durations. */
#ifndef CULPERT_UNITS_H
#define CULPERT_UNITS_H

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
/* the same with a sign: "+1.00 MiB", "-12 B", "0 B" */
char *format_bytes_signed(char *buf, size_t len, double bytes);
/* "1m30s", "250ms", "2h0m5s" */
char *format_duration(char *buf, size_t len, uint64_t ns);

#endif /* CULPERT_UNITS_H */
