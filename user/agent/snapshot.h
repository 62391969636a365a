/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --snapshot-dir DIR --interval D --keep N: each target's profile written
 * to DIR/culpert-COMM-PID-UTCTIME.pb.gz (attach's names, so `culpert
 * report` and `diff` take them as they are), atomically: written to a
 * temporary file in DIR, flushed, renamed over.  A reader never sees half
 * a profile, and a failed write leaves the older snapshots alone.  Then
 * only the newest N of that target (COMM and PID) are kept.
 */
#ifndef CULPERT_SNAPSHOT_H
#define CULPERT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* write the whole profile to fd; 0 or -errno with a reason in err */
typedef int (*snapshot_write_fn)(void *ctx, int fd, char *err, size_t errlen);

struct snapshot_target {
	const char *comm;
	pid_t pid;
	int64_t time_ns;	/* Unix ns: the name's UTC time */
};

/*
 * One snapshot, then the rotation; the path written in *path.  0, or
 * -errno and a user-facing reason in err (the rotation's failures are
 * warnings only).
 */
int snapshot__write(const char *dir, unsigned int keep, const struct snapshot_target *t,
		    snapshot_write_fn fn, void *ctx, char *path, size_t pathlen, char *err,
		    size_t errlen);
/* remove the temporary files a killed agent left in dir; how many */
int snapshot__clean(const char *dir);

#endif /* CULPERT_SNAPSHOT_H */
