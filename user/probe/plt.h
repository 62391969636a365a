/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Calls through the PLT and the GOT of an x86-64 or arm64 object: which
 * symbol a GOT slot is filled with (its relocation), which slot a PLT
 * entry jumps through, and every call of the object's code to a set of
 * symbols.
 */
#ifndef CULPERT_PLT_H
#define CULPERT_PLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfobj;

/* the symbol the dynamic linker stores at GOT slot `slot`; NULL if none */
const char *plt__got_symbol(struct elfobj *obj, uint64_t slot);
#include <capstone/capstone.h>

/* x86-64: a memory operand `disp(%rip)` of a decoded instruction: the address it names */
bool plt__rip_operand(const cs_insn *in, uint64_t *addr);
/* is vaddr in .plt, .plt.sec or .plt.got? */
bool plt__in_plt(struct elfobj *obj, uint64_t vaddr);
/* the GOT slot the PLT entry at vaddr jumps through (past an endbr64 or bti); false if not one */
bool plt__entry_slot(struct elfobj *obj, uint64_t vaddr, uint64_t *slot);
/*
 * The functions of obj that call one of `names` (through the PLT, the GOT
 * or directly): cb(ctx, sym) once per such function, at most `max`.
 * Returns the count, or -errno.
 */
int plt__callers(struct elfobj *obj, const char *const *names, size_t n_names, size_t max,
		 void (*cb)(void *ctx, uint64_t func_vaddr), void *ctx);

#endif /* CULPERT_PLT_H */
