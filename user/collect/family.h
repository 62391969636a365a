/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * attach --children: one capture of a process and of its descendants, those
 * there at attach and those it forks later (a pre-forking server's workers,
 * a forking server's handlers).  One BPF object serves them all, one
 * session per process; the profile is theirs merged, each sample labelled
 * with its process's pid and comm (docs/profile-format.md).
 */
#ifndef CULPERT_FAMILY_H
#define CULPERT_FAMILY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "session.h"

struct family;

/* attach to o->pid and its descendants; 0 or -errno with the user-facing reason in err */
int family__open(const struct session_opts *o, struct family **out, char *err, size_t errlen);
/*
 * Sample until duration_ns (0 = no limit) passes, *stop is set, or the
 * first process exits or exec's; children are followed as they come and go.
 */
int family__run(struct family *f, uint64_t duration_ns, volatile sig_atomic_t *stop,
		enum session_end *why);
/* the first process's session (the --pid given): its comm, pid, rate, memory picture */
struct session *family__root(const struct family *f);
/* the merged profile; 0 or -errno */
int family__write(struct family *f, const char *path);
/* samples over every process, and how many processes were profiled */
uint64_t family__samples(const struct family *f);
uint64_t family__lost(const struct family *f);
size_t family__processes(const struct family *f);
/* one warning line on stderr for each way the capture is incomplete */
void family__warn_losses(const struct family *f);
void family__close(struct family *f);
/* allocator calls the probes saw in every process, and their bytes, once written */
bool family__calls_seen(const struct family *f, uint64_t *calls, uint64_t *bytes);

/* every live descendant of pid, children first, malloc'd; NULL when none (or out of memory) */
pid_t *family_descendants(pid_t pid, size_t *n);
/* descendants named in full by family_describe(); the rest are "and N more" */
#define FAMILY_DESCRIBE_MAX	8
/*
 * The descendants of pid, "124 (nginx), 125 (nginx)", into buf ("" for
 * none); returns how many there are
 */
size_t family_describe(pid_t pid, char *buf, size_t len);

#endif /* CULPERT_FAMILY_H */
