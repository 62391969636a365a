/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The target's mappings through a capture: the snapshot of /proc/PID/maps
 * kept current (new mappings as the kernel reports them, re-reads when a
 * sample points outside it, unloaded libraries kept), and the history of
 * which mapping each sampled address was in (maphist), for the profile.
 */
#ifndef CULPERT_MAPVIEW_H
#define CULPERT_MAPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct maphist;
struct mapview;
struct mmapwatch;
struct objcache;
struct procmaps;
struct target;

/*
 * read the mappings of t, open their objects; new mappings through shared
 * (mmapwatch__new_shared()) when given, else through rings of its own.
 * 0 or -errno with the reason in err
 */
int mapview__new(const struct target *t, struct objcache *objs, struct mmapwatch *shared,
		 struct mapview **out, char *err, size_t errlen);
void mapview__free(struct mapview *v);
/* the current view: sorted, without overlaps */
const struct procmaps *mapview__maps(const struct mapview *v);
const struct maphist *mapview__hist(const struct mapview *v);
/* changes when an executable mapping comes (or the view is read again): a new object to plan */
uint64_t mapview__generation(const struct mapview *v);
/* take in the mappings the kernel reported since the last call */
void mapview__update(struct mapview *v);
/* re-read /proc/PID/maps now (a DWARF unwind met an address outside the view) */
void mapview__refresh(struct mapview *v);
/*
 * The frames of a sample taken at ts_ns, in place: what the aggregate
 * keeps (see maphist__frame()).  check: frame-pointer stacks, taken as the
 * BPF side found them, re-read the maps (at most every 100 ms) when a
 * frame is outside the view.
 */
void mapview__frames(struct mapview *v, uint64_t *frames, size_t n, uint64_t ts_ns, bool check);
/* "key=value" comments on how mappings were followed; cb's first error or 0 */
int mapview__comments(const struct mapview *v, int (*cb)(void *ctx, const char *comment),
		      void *ctx);

#endif /* CULPERT_MAPVIEW_H */
