/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Whole small files (/proc, /sys) into memory, NUL-terminated. */
#ifndef CULPERT_READFILE_H
#define CULPERT_READFILE_H

#include <stddef.h>

/*
 * Read `path` (relative to dirfd, or AT_FDCWD) to the end into a fresh
 * buffer the caller frees; *len (may be NULL) excludes the NUL.  Files of
 * /proc report size 0, so this reads until EOF.  0 or -errno.
 */
int read_file_at(int dirfd, const char *path, char **buf, size_t *len);

#endif /* CULPERT_READFILE_H */
