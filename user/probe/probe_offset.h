/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where in a function its entry probe goes.  A uprobe on an instruction
 * the kernel emulates (push, jmp/jcc/call rel, the standard nops) costs
 * about 1 us per hit; on any other it is single-stepped out of line, about
 * 10 us.  glibc's free starts with `test %rdi,%rdi; je ...`, jemalloc's
 * with eleven register-only instructions before a `jne`: moving the probe
 * past leading instructions that write only flags and registers the entry
 * point's BPF program does not read, and store nothing, to the first
 * emulated one keeps everything the program sees (its arguments, the
 * stack pointer, the return address, the registers a stack capture reads)
 * exactly as at entry and saves the single step.  Whatever cannot be
 * proven safe stays at +0 (docs/probe-offsets.md).
 */
#ifndef CULPERT_PROBE_OFFSET_H
#define CULPERT_PROBE_OFFSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfobj;
struct elf_symbol;

/* never move a probe further than this past the symbol (jemalloc's free: 0x30) */
#define PROBE_OFFSET_MAX_SKIP 64
/* functions bigger than this are not decoded: their probe stays at +0 */
#define PROBE_OFFSET_MAX_FUNC (1U << 20)
#define PROBE_OFFSET_REASON_LEN 256

/* what the kernel does with the instruction under a probe, the classes of the per-hit cost */
enum probe_insn_class {
	PROBE_INSN_UNKNOWN,
	PROBE_INSN_EMULATED,	/* x86 emulated, arm64 simulated: one trap */
	PROBE_INSN_OPTIMIZED,	/* x86 5-byte nop: a call into the uprobe trampoline, no trap */
	PROBE_INSN_STEPPED,	/* single-stepped out of line: two traps */
	PROBE_INSN_REJECTED,	/* arm64: the kernel refuses to probe it */
};

/*
 * The registers an entry point's BPF program reads, as bits of their
 * x86-64 numbers (rax 0, rcx 1, rdx 2, rbx 3, rsp 4, rbp 5, rsi 6, rdi 7,
 * r8..r15 8..15).
 */
#define PROBE_REG(n) (1U << (n))
#define PROBE_REGS_ALL 0xffffU

/* the arguments whose register a probe past copies of them can say (rdi, rsi, rdx) */
#define PROBE_OFFSET_ARGS 3

struct probe_offset {
	uint64_t offset;	/* bytes past the symbol's start */
	uint8_t insn_class;	/* enum probe_insn_class of the instruction at offset */
	/*
	 * x86-64 number of the register holding the entry value of argument
	 * 1..3 at the probe: 7, 6, 2 (rdi, rsi, rdx) unless the skipped
	 * instructions copied one away before overwriting it
	 */
	uint8_t args[PROBE_OFFSET_ARGS];
	/* "+3: past testq %rdi,%rdi (flags only) to je 0x98fb8 (emulated)" */
	char reason[PROBE_OFFSET_REASON_LEN];
};

/*
 * What the entry programs (bpf/sampler.bpf.h, bpf/culpert.bpf.c) read at a
 * probe on an entry point of kind `fn` (enum culpert_fn): its argument
 * registers, and for every kind the stack pointer and the registers a
 * stack capture copies (rbp, rbx, r12-r15).  An unknown kind: all.
 */
uint32_t probe_offset__reads(uint32_t fn);
/*
 * Choose the probe offset of the x86-64 function whose `len` bytes (the
 * whole function, as its symbol's size says) are at `code`, loaded at
 * `addr`, for a program that reads the registers `reads` (PROBE_REG bits,
 * probe_offset__reads()).  Undecodable or unprovable code is a decision
 * (+0 with the reason), not an error.  0, or -EINVAL / -ENOMEM.
 */
int probe_offset__choose(const uint8_t *code, size_t len, uint64_t addr, uint32_t reads,
			 struct probe_offset *po);
/* does the kernel emulate the x86-64 instruction of these n bytes (not single-step it)? */
bool probe_offset__emulated(const uint8_t *b, size_t n);
/* the same for an arm64 function (probe_offset_arm64.c: simulated, single-stepped, rejected) */
int probe_offset__choose_arm64(const uint8_t *code, size_t len, uint64_t addr,
			       struct probe_offset *po);
/*
 * The same for a function symbol of an object (x86-64 or arm64), reading
 * its code from the file, for an entry point of kind `fn` (enum culpert_fn)
 */
int probe_offset__for_symbol(struct elfobj *obj, const struct elf_symbol *sym, uint32_t fn,
			     struct probe_offset *po);
/* the cookie bits saying where the arguments are (culpert.h, CULPERT_PROBE_ARG_SHIFT) */
uint32_t probe_offset__args_cookie(const struct probe_offset *po);
/* "emulated", "single-stepped", ...: how `probes` names an enum probe_insn_class */
const char *probe_offset__class_name(uint8_t insn_class);
/* "~0.7 us a hit": the class's cost per hit as tests/bench/insn_cost measured it */
const char *probe_offset__cost_text(uint8_t insn_class);

/* for the per-architecture choosers: no decision yet, the arguments where the ABI has them */
void probe_offset__init(struct probe_offset *po);
/* for the per-architecture choosers: the decision and its reason; returns 0 */
int probe_offset__decide(struct probe_offset *po, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* true if a function of `len` bytes can be decoded whole; else false with the decision */
bool probe_offset__size_checkable(uint64_t len, struct probe_offset *po);

#endif /* CULPERT_PROBE_OFFSET_H */
