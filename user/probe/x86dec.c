// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "x86dec.h"

int x86dec__open(struct x86dec *d, const uint8_t *code, size_t len, uint64_t addr)
{
	memset(d, 0, sizeof(*d));
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK)
		return -ENOTSUP;
	/* AT&T, as objdump prints it: the reasons are compared with objdump -d */
	if (cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
	    cs_option(d->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT) != CS_ERR_OK) {
		cs_close(&d->cs);
		return -ENOTSUP;
	}
	d->insn = cs_malloc(d->cs);
	if (!d->insn) {
		cs_close(&d->cs);
		return -ENOMEM;
	}
	d->code = code;
	d->len = len;
	d->addr = addr;
	return 0;
}

void x86dec__close(struct x86dec *d)
{
	if (d->insn)
		cs_free(d->insn, 1);
	cs_close(&d->cs);
}

const cs_insn *x86dec__at(struct x86dec *d, size_t pos)
{
	const uint8_t *p = d->code + pos;
	size_t left = d->len - pos;
	uint64_t pc = d->addr + pos;

	if (pos >= d->len || !cs_disasm_iter(d->cs, &p, &left, &pc, d->insn))
		return NULL;
	return d->insn;
}

void x86dec__text(const cs_insn *in, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s%s", in->mnemonic, in->op_str[0] ? " " : "");
	const char *s;

	for (s = in->op_str; *s && n + 1 < len; s++) {
		if (s[0] == ',' && s[1] == ' ')
			buf[n++] = *s++;
		else
			buf[n++] = *s;
	}
	if (n < len)
		buf[n] = '\0';
}

bool x86dec__in_group(const cs_insn *in, uint8_t group)
{
	uint8_t i;

	for (i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == group)
			return true;
	return false;
}

int x86dec__gpr(unsigned int reg, bool *whole)
{
	static const unsigned int regs[16][5] = {
		{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
		{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
		{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
		{ X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH },
		{ X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, 0 },
		{ X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, 0 },
		{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, 0 },
		{ X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, 0 },
		{ X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, 0 },
		{ X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, 0 },
		{ X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, 0 },
		{ X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, 0 },
		{ X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, 0 },
		{ X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, 0 },
		{ X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, 0 },
		{ X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, 0 },
	};
	int i, w;

	for (i = 0; i < 16; i++)
		for (w = 0; w < 5; w++)
			if (regs[i][w] && regs[i][w] == reg) {
				*whole = w == 0;
				return i;
			}
	return -1;
}
