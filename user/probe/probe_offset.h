/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where in a function its entry probe goes.  A uprobe on an instruction
 * the kernel emulates (push, jmp/jcc/call rel, the standard nops) costs
 * about 1 us per hit; on any other it is single-stepped out of line, about
 * 6 us.  glibc's free starts with `test %rdi,%rdi; je ...`, posix_memalign
 * with `cmpb $0,...(%rip)`: moving the probe past such flag-only leading
 * instructions to the first emulated one keeps the arguments, the stack
 * pointer and the return address exactly as at entry and saves the single
 * step.  Whatever cannot be proven safe stays at +0.
 */
#ifndef CULPERT_PROBE_OFFSET_H
#define CULPERT_PROBE_OFFSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfobj;
struct elf_symbol;

/* never move a probe further than this past the symbol */
#define PROBE_OFFSET_MAX_SKIP 16
/* functions bigger than this are not decoded: their probe stays at +0 */
#define PROBE_OFFSET_MAX_FUNC (1U << 20)
#define PROBE_OFFSET_REASON_LEN 256

struct probe_offset {
	uint64_t offset;	/* bytes past the symbol's start */
	/* "+3: past testq %rdi,%rdi (flags only) to je 0x98fb8 (emulated)" */
	char reason[PROBE_OFFSET_REASON_LEN];
};

/*
 * Choose the probe offset of the x86-64 function whose `len` bytes (the
 * whole function, as its symbol's size says) are at `code`, loaded at
 * `addr`.  Undecodable or unprovable code is a decision (+0 with the
 * reason), not an error.  0, or -EINVAL / -ENOMEM.
 */
int probe_offset__choose(const uint8_t *code, size_t len, uint64_t addr, struct probe_offset *po);
/* does the kernel emulate the x86-64 instruction of these n bytes (not single-step it)? */
bool probe_offset__emulated(const uint8_t *b, size_t n);
/* the same for an arm64 function (probe_offset_arm64.c: simulated, single-stepped, rejected) */
int probe_offset__choose_arm64(const uint8_t *code, size_t len, uint64_t addr,
			       struct probe_offset *po);
/* the same for a function symbol of an object (x86-64 or arm64), reading its code from the file */
int probe_offset__for_symbol(struct elfobj *obj, const struct elf_symbol *sym,
			     struct probe_offset *po);

/* for the per-architecture choosers: the decision and its reason; returns 0 */
int probe_offset__decide(struct probe_offset *po, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* true if a function of `len` bytes can be decoded whole; else false with the decision */
bool probe_offset__size_checkable(uint64_t len, struct probe_offset *po);

#endif /* CULPERT_PROBE_OFFSET_H */
