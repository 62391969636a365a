/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The memory picture of a session's target, embedded in its profile as comments. */
#ifndef CULPERT_MEMSNAP_H
#define CULPERT_MEMSNAP_H

struct memsnap;
struct memstats;
struct session;

/*
 * What the pictures of one session share: the allocator reader (libc's
 * layout, found once; the listener on libculpert-sampler.so's probe, which
 * keeps its figures fresh for the end picture).  NULL and errno on failure.
 */
struct memsnap *memsnap__new(void);
void memsnap__free(struct memsnap *ms);

/*
 * Read the target's memory picture, its allocator state included (unless
 * ms is NULL), and add it as "PREFIX.*" comments ("mem.start", "mem.end");
 * keep (may be NULL) gets the picture.  0 or -errno; a failure is warned
 * about, and the profile is still worth writing.
 */
int memsnap__add(struct memsnap *ms, struct session *s, const char *prefix, struct memstats *keep);

#endif /* CULPERT_MEMSNAP_H */
