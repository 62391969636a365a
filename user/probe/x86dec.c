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
