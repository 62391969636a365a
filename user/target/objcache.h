/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The target's mapped objects, each opened once (through /proc/PID/root so
 * containers work) and kept open: the target may exit before we symbolize.
 */
#ifndef CULPERT_OBJCACHE_H
#define CULPERT_OBJCACHE_H

struct objcache;
struct elfobj;
struct procmap;
struct target;

struct objcache *objcache__new(const struct target *t);
/* the object behind a file-backed mapping; NULL with errno when it cannot be opened */
struct elfobj *objcache__get(struct objcache *c, const struct procmap *m);
void objcache__free(struct objcache *c);

#endif /* CULPERT_OBJCACHE_H */
