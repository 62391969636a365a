/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which mapping each sampled address was in when its sample was read.
 * While a process only gains mappings, an address means one thing for the
 * whole capture and the last snapshot of /proc/PID/maps says which; this
 * costs nothing then.  Once a refresh finds an executable mapping gone
 * (dlclose, a plugin reloaded), it keeps every mapping a sample was seen
 * in, and an address that meant one object and then another is stored the
 * second time as a token standing for (address, mapping), so both stay
 * right in the profile.
 */
#ifndef CULPERT_MAPHIST_H
#define CULPERT_MAPHIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct maphist;
struct procmap;
struct procmaps;

/* at most max_maps mappings recorded (what goes beyond stays unresolved, counted) */
struct maphist *maphist__new(size_t max_maps);
void maphist__free(struct maphist *h);
/* m (copied) was mapped at ts_ns, or seen first then; 0 or -ENOMEM */
int maphist__seen(struct maphist *h, const struct procmap *m, uint64_t ts_ns);
/*
 * The current view old is about to lose or replace a mapping: from now on
 * addresses may change meaning, and each frame is kept with its mapping.
 * 0 or -ENOMEM (tracking then stays off: the last snapshot decides).
 */
int maphist__changing(struct maphist *h, const struct procmaps *old);
/* fresh is about to replace old: maphist__changing() if an executable mapping of old is gone */
int maphist__refresh(struct maphist *h, const struct procmaps *old, const struct procmaps *fresh);
bool maphist__tracking(const struct maphist *h);
/*
 * The value to keep for return address `frame` of a sample taken at ts_ns,
 * whose mapping in the current view is m (NULL: none): frame itself, or a
 * token.  When m was mapped after ts_ns, the mapping that held the address
 * then is the one kept.
 */
uint64_t maphist__frame(struct maphist *h, const struct procmap *m, uint64_t frame,
			uint64_t ts_ns);
/*
 * A kept value back: the return address in *frame, and the mapping it was
 * in when seen, or NULL when this history does not know (then the last
 * snapshot decides).
 */
const struct procmap *maphist__resolve(const struct maphist *h, uint64_t stored, uint64_t *frame);
/* every mapping recorded; n in *n */
const struct procmap *maphist__mappings(const struct maphist *h, size_t *n);
/* addresses left unresolved because max_maps was reached */
uint64_t maphist__dropped(const struct maphist *h);

#endif /* CULPERT_MAPHIST_H */
