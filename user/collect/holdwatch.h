/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The watchdog of processes stopped for the agent (docs/agent.md, "Pick-up
 * at exec"): a small child of the agent that holds the map of held
 * processes (tgid -> start, ns since boot) and, once the agent's end of
 * its pipe closes, whichever way the agent went, sends SIGCONT to every
 * process still in it, again until the programs that stop processes are
 * gone, so none stays stopped for an attach that will not come.
 */
#ifndef CULPERT_HOLDWATCH_H
#define CULPERT_HOLDWATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Fork the watchdog: held_fd, the map; prog_ids, the programs that stop
 * processes (their ids, loaded already).  Before anything is attached:
 * the child keeps no other descriptor of the caller's.  The pipe's write
 * end (close-on-exec) in *pipe_w: closing it, or the caller's exit, wakes
 * the child.  0 or -errno.
 */
int holdwatch__start(int held_fd, const uint32_t *prog_ids, size_t n_progs,
		     uint64_t ns_per_tick, int *pipe_w);

/* every process in the map let go (SIGCONT) if still the one it names, its entry deleted */
void holdwatch__sweep(int held_fd, uint64_t ns_per_tick, int log_fd);

#endif /* CULPERT_HOLDWATCH_H */
