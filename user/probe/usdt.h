/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* USDT probe sites of an ELF object (the .note.stapsdt notes of <sys/sdt.h>). */
#ifndef CULPERT_USDT_H
#define CULPERT_USDT_H

#include <stddef.h>
#include <stdint.h>

struct elfobj;
struct objcache;
struct procmap;
struct procmaps;

struct usdt_site {
	char provider[64];
	char name[64];
	uint64_t pc;		/* virtual address of the probe's nop */
	uint64_t semaphore;	/* virtual address of its semaphore, 0 if none */
	char args[192];		/* argument spec, e.g. "8@%rax 8@%rdx" */
};

/*
 * Sites of `provider` (every provider when NULL) in obj; a malloc'd array
 * in *out, the count returned, or -errno.
 */
int usdt_sites(struct elfobj *obj, const char *provider, struct usdt_site **out);

/* an object with n > 0 sites, m its first executable mapping; non-zero stops the walk */
typedef int (*usdt_object_fn)(void *ctx, const struct procmap *m, struct elfobj *obj,
			      const struct usdt_site *sites, int n);

/*
 * cb for each object mapped executable in maps that has sites of provider,
 * once however many times it is mapped.  0, cb's non-zero return, or
 * -ENOMEM.
 */
int usdt_objects(const struct procmaps *maps, struct objcache *objs, const char *provider,
		 usdt_object_fn cb, void *ctx);

#endif /* CULPERT_USDT_H */
