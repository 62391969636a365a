// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "elfobj.h"
#include "fpchain.h"
#include "objcache.h"
#include "procmaps.h"

/*
 * Verdicts cached by address, direct-mapped: a capture has few distinct
 * return addresses.  Allocated at the first check: 128 KiB that an idle
 * target (the agent holds many) never needs.
 */
#define CACHE_SLOTS 8192
#define CFI_OBJS 64

enum verdict { UNKNOWN, KEEPS_FP, NO_FP };

struct cache_slot {
	uint64_t addr;
	uint8_t verdict;
};

struct fpchain {
	struct objcache *objs;
	struct cache_slot *cache;	/* CACHE_SLOTS of them, from the first check */
	struct {
		struct elfobj *obj;
		Dwarf_CFI *cfi;
	} cfis[CFI_OBJS];
	size_t n_cfis;
};

struct fpchain *fpchain__new(struct objcache *objs)
{
	struct fpchain *c = calloc(1, sizeof(*c));

	if (c)
		c->objs = objs;
	return c;
}

void fpchain__free(struct fpchain *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n_cfis; i++)
		if (c->cfis[i].cfi)
			dwarf_cfi_end(c->cfis[i].cfi);
	free(c->cache);
	free(c);
}

/* the object's .eh_frame, read once; NULL without one */
static Dwarf_CFI *cfi_of(struct fpchain *c, struct elfobj *obj)
{
	size_t i;

	for (i = 0; i < c->n_cfis; i++)
		if (c->cfis[i].obj == obj)
			return c->cfis[i].cfi;
	if (c->n_cfis >= CFI_OBJS)
		return NULL;
	c->cfis[c->n_cfis].obj = obj;
	c->cfis[c->n_cfis].cfi = dwarf_getcfi_elf(elfobj__elf(obj));
	return c->cfis[c->n_cfis++].cfi;
}

/* x86-64 DWARF register 6 is %rbp */
static bool rbp_based(const Dwarf_Op *ops, size_t n)
{
	return n >= 1 && (ops[0].atom == DW_OP_breg6 ||
			  ((ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_regx) && ops[0].number == 6));
}

static enum verdict judge(struct fpchain *c, const struct procmaps *maps, uint64_t ret_addr)
{
	uint64_t pc = ret_addr - 1, vaddr;
	const struct procmap *m = procmaps__find(maps, pc);
	struct elfobj *obj = m ? objcache__get(c->objs, m) : NULL;
	Dwarf_CFI *cfi = obj ? cfi_of(c, obj) : NULL;
	Dwarf_Frame *frame;
	Dwarf_Op *ops;
	size_t nops;
	enum verdict v = UNKNOWN;

	if (!cfi || elfobj__offset_to_vaddr(obj, pc - m->start + m->offset, &vaddr) ||
	    dwarf_cfi_addrframe(cfi, vaddr, &frame))
		return UNKNOWN;
	if (!dwarf_frame_cfa(frame, &ops, &nops))
		v = rbp_based(ops, nops) ? KEEPS_FP : NO_FP;
	free(frame);
	return v;
}

int fpchain__check(struct fpchain *c, const struct procmaps *maps, const uint64_t *frames,
		   size_t n)
{
	size_t i;

	if (!c->cache && n > 1 && !(c->cache = calloc(CACHE_SLOTS, sizeof(*c->cache))))
		return -1;
	/* the last frame has no step above it to be wrong */
	for (i = 0; i + 1 < n; i++) {
		struct cache_slot *s = &c->cache[(frames[i] >> 1) % CACHE_SLOTS];

		if (s->addr != frames[i] || !s->verdict) {
			s->addr = frames[i];
			s->verdict = (uint8_t)judge(c, maps, frames[i]) + 1;
		}
		if (s->verdict - 1 == NO_FP)
			return (int)i;
	}
	return -1;
}
