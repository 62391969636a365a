/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Frame-pointer stacks checked against the CFI.  A frame-pointer walk
 * steps from a return address to the next through the frame pointer of
 * the function the address is in: right only if that function keeps %rbp
 * as its frame pointer there.  The objects' CFI says whether it does
 * (the canonical frame address computed from %rbp); a stack passing
 * through code that does not has its callers above that point wrong or
 * missing.  Counted, not repaired: --unwind dwarf follows the CFI itself.
 */
#ifndef CULPERT_FPCHAIN_H
#define CULPERT_FPCHAIN_H

#include <stddef.h>
#include <stdint.h>

struct fpchain;
struct objcache;
struct procmaps;

/* objs must outlive it; NULL with errno set */
struct fpchain *fpchain__new(struct objcache *objs);
void fpchain__free(struct fpchain *c);

/*
 * frames: return addresses, leaf first, as a frame-pointer walk found them
 * (frames[0] the allocator's caller).  Returns the index of the first one
 * whose function does not keep a frame pointer there (the walk above it is
 * wrong), or -1 when every step holds or cannot be judged (no CFI).
 */
int fpchain__check(struct fpchain *c, const struct procmaps *maps, const uint64_t *frames,
		   size_t n);

#endif /* CULPERT_FPCHAIN_H */
