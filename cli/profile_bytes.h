/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A profile as bytes, for the commands that move it without changing it (upload, pull):
 * read whole with a bound, check that it is a complete profile (lib/outfile writes it).
 */
#ifndef CULPERT_PROFILE_BYTES_H
#define CULPERT_PROFILE_BYTES_H

#include <stddef.h>

/* FILE ("-": stdin) into a fresh buffer, refused (-EFBIG) past max bytes; 0 or -errno */
int profile_bytes_read(const char *path, size_t max, char **buf, size_t *len);

/*
 * Whether buf is a whole gzip'd pprof profile, decoded by proto/ (samples streamed past,
 * not kept): 0, or -EINVAL with the reason in err ("truncated gzip data: ...").
 */
int profile_bytes_check(const void *buf, size_t len, char *err, size_t errlen);

#endif /* CULPERT_PROFILE_BYTES_H */
