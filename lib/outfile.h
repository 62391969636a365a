/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Output files (-o) as a user expects of cp or a shell's '>', for every
 * writer of both binaries (docs/cli.md, "Output files"):
 *
 * - a regular file, or none yet: written beside it and renamed over it, so
 *   a reader never sees half a file; an existing file keeps its mode (and
 *   its owner, when we may set it) and must be writable by us, a new one
 *   gets 0666 less the umask;
 * - a device, FIFO or other special file: written through, never
 *   replaced (-o /dev/null stays the device);
 * - a symbolic link: written through to what it names, with the rules
 *   above (the link itself stays); a dangling one is refused, as cp does;
 * - a directory, "" or a path in a missing directory: refused, before the
 *   work when the caller checks first;
 * - "-": standard output.
 */
#ifndef CULPERT_OUTFILE_H
#define CULPERT_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct outfile;

/*
 * Could `path` be written?  For commands to ask before a long capture or
 * computation.  0 or -errno, the reason in err (the caller names the path).
 */
int outfile_check(const char *path, char *err, size_t errlen);
/* NULL with the reason in err (errno set) */
struct outfile *outfile__open(const char *path, char *err, size_t errlen);
/* where to write; the caller does not close it */
FILE *outfile__stream(struct outfile *f);
/*
 * Flush and put the file in place, then free f.  0 or -errno with the
 * reason in err; on failure the destination is as it was (a file being
 * written through may hold part of the output).
 */
int outfile__commit(struct outfile *f, char *err, size_t errlen);
/* give up: nothing is put in place; frees f (NULL is fine) */
void outfile__abort(struct outfile *f);
/* len bytes of buf as the file's whole content; 0 or -errno with the reason in err */
int outfile_write(const char *path, const void *buf, size_t len, char *err, size_t errlen);

#endif /* CULPERT_OUTFILE_H */
