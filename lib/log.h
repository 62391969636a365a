/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Diagnostics on stderr, one level for the whole program: warnings always,
 * each -v adds info, then debug, then libbpf's own debug output.
 */
#ifndef CULPERT_LOG_H
#define CULPERT_LOG_H

enum log_level {
	LOG_WARN = 0,
	LOG_INFO = 1,
	LOG_DEBUG = 2,
	LOG_LIBBPF = 3,
};

extern int log_level;

void log_printf(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the one user-facing error line of a command: "error: ..." */
void pr_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define pr_warn(...) log_printf(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log_printf(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_printf(LOG_DEBUG, __VA_ARGS__)

#endif /* CULPERT_LOG_H */
