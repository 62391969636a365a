/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Span names the BPF side could not read.  bpf_probe_read_user() cannot
 * fault a page in, so a name on a page the program never touched (a string
 * only the span probe uses) arrives as its address and length.  Read it
 * through /proc/PID/mem, which faults the page in as the program would, or,
 * once the process is gone, from the file the address maps.
 */
#ifndef CULPERT_SPANNAME_H
#define CULPERT_SPANNAME_H

#include <stddef.h>
#include <stdint.h>

struct objcache;
struct procmaps;

/*
 * The len (<= CULPERT_SPAN_NAME_MAX) bytes at addr into buf: through mem_fd
 * (an open /proc/PID/mem, -1 if none), else through the file mapping of
 * `maps` that holds addr, opened through objs.  0 or -errno.
 */
int span_name__read(int mem_fd, const struct procmaps *maps, struct objcache *objs,
		    uint64_t addr, uint32_t len, char *buf);

#endif /* CULPERT_SPANNAME_H */
