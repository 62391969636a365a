/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Teardown off the caller's thread: the agent's profiling thread hands a
 * leaving process's uprobe links and its live-table entries here and goes
 * on reading records; one thread of its own releases the links of every
 * process handed over meanwhile at once (their grace periods overlapped,
 * uprobe_sets__free()) and sweeps their live entries in one pass over the
 * table.  docs/agent.md, "The collector".
 */
#ifndef CULPERT_REAPER_H
#define CULPERT_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_link;
struct reaper;
struct uprobe_set;

/*
 * live_fd: the live table (keys culpert_live_key, values of value_size bytes starting with
 * the sample id, a __u64).  NULL and errno when the thread cannot start.
 */
struct reaper *reaper__new(int live_fd, size_t value_size);
/* everything handed over released and swept, then the thread ends; NULL is a no-op */
void reaper__free(struct reaper *r);
/* pid's links, released later; false (nothing taken) when it cannot queue them */
bool reaper__put_set(struct reaper *r, pid_t pid, struct uprobe_set *set);
bool reaper__put_link(struct reaper *r, pid_t pid, struct bpf_link *link);
/*
 * The live entries of tgid whose sample id is at most cut: those of the
 * process that left, not those of a program it exec'd meanwhile (their ids
 * are newer).  false when it cannot queue it.
 */
bool reaper__sweep(struct reaper *r, pid_t tgid, uint64_t cut);
/* links of pid still waiting to be released */
bool reaper__pending(struct reaper *r, pid_t pid);
/* wait up to timeout_ns for pid's links to be released; false on timeout */
bool reaper__wait(struct reaper *r, pid_t pid, uint64_t timeout_ns);

#endif /* CULPERT_REAPER_H */
