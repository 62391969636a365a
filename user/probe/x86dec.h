/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One x86-64 function's code under capstone (Debian's libcapstone4), as
 * probe_offset and exits read it: instructions decoded one at a time at a
 * byte position, with operand details, in AT&T syntax as objdump prints it.
 */
#ifndef CULPERT_X86DEC_H
#define CULPERT_X86DEC_H

#include <capstone/capstone.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct x86dec {
	csh cs;
	cs_insn *insn;
	const uint8_t *code;
	size_t len;
	uint64_t addr;
};

/* code[0..len) loaded at addr; 0, -ENOTSUP (no decoder) or -ENOMEM */
int x86dec__open(struct x86dec *d, const uint8_t *code, size_t len, uint64_t addr);
void x86dec__close(struct x86dec *d);
/* the instruction starting `pos` bytes in; NULL if it does not decode in full */
const cs_insn *x86dec__at(struct x86dec *d, size_t pos);
/* "testq %rdi,%rdi": objdump's spacing, so reasons stay short */
void x86dec__text(const cs_insn *in, char *buf, size_t len);
/* is the instruction in capstone group `group` (CS_GRP_JUMP, CS_GRP_CALL, ...)? */
bool x86dec__in_group(const cs_insn *in, uint8_t group);
/*
 * The x86-64 number (the encoding's: rax 0, rcx 1, ..., rdi 7, r8 8, ...)
 * of the general-purpose register capstone's `reg` is a part of, any
 * width (al, ah, ax, eax, rax); -1 for any other register.  `whole` says
 * whether reg is all 64 bits of it.
 */
int x86dec__gpr(unsigned int reg, bool *whole);

#endif /* CULPERT_X86DEC_H */
