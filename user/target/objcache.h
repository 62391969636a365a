/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The target's mapped objects, each opened once (through /proc/PID/root so
 * containers work) and kept open: the target may exit before we symbolize.
 */
#ifndef CULPERT_OBJCACHE_H
#define CULPERT_OBJCACHE_H

#include <stddef.h>

struct objcache;
struct elfobj;
struct procmap;
struct target;

struct objcache *objcache__new(const struct target *t);
/* the object behind a file-backed mapping; NULL with errno when it cannot be opened */
struct elfobj *objcache__get(struct objcache *c, const struct procmap *m);
void objcache__free(struct objcache *c);
/* elfobj__trim() every object: the cache stays, what was read from the files goes */
void objcache__trim(struct objcache *c);
/*
 * Open what is not cached yet through t from now on: the objects are
 * files (device, inode, path), the same whichever process maps them, so
 * one cache serves many targets in turn (the agent's scrapes).
 */
void objcache__retarget(struct objcache *c, const struct target *t);
/* the objects cached (opened or not) */
size_t objcache__size(const struct objcache *c);

#endif /* CULPERT_OBJCACHE_H */
