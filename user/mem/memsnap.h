/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The memory picture of a session's target, embedded in its profile as comments. */
#ifndef CULPERT_MEMSNAP_H
#define CULPERT_MEMSNAP_H

struct memstats;
struct session;

/*
 * Read the target's memory picture and add it as "PREFIX.*" comments
 * ("mem.start", "mem.end"); keep (may be NULL) gets the picture.  0 or
 * -errno; a failure is warned about, and the profile is still worth writing.
 */
int memsnap__add(struct session *s, const char *prefix, struct memstats *keep);

#endif /* CULPERT_MEMSNAP_H */
