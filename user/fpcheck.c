// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>

#include "elfobj.h"
#include "fpcheck.h"

/* enough functions for a clear majority without reading a whole large binary */
#define FPCHECK_MAX_FUNCS 4000

static bool sets_up_fp(const unsigned char *c, long n)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const unsigned char push_mov[] = { 0x55, 0x48, 0x89, 0xe5 };

	if (n >= 8 && !memcmp(c, endbr64, sizeof(endbr64))) {
		c += 4;
		n -= 4;
	}
	return n >= 4 && !memcmp(c, push_mov, sizeof(push_mov));
}

int fpcheck(struct elfobj *obj, struct fp_evidence *ev)
{
	const struct elf_symbol *syms;
	unsigned char code[8];
	size_t n, i;

	memset(ev, 0, sizeof(*ev));
	syms = elfobj__symbols(obj, &n);
	for (i = 0; i < n && ev->functions < FPCHECK_MAX_FUNCS; i++) {
		long got;

		/* tiny functions (thunks, getters) have no frame either way */
		if (syms[i].size < 16 || (i && syms[i].value == syms[i - 1].value))
			continue;
		got = elfobj__read(obj, syms[i].value, code, sizeof(code));
		if (got < 4)
			continue;
		ev->functions++;
		ev->with_fp += sets_up_fp(code, got);
	}
	return ev->functions ? 0 : -ENOENT;
}

bool fp_evidence__has_fp(const struct fp_evidence *ev)
{
	return ev->functions && ev->with_fp * 2 >= ev->functions;
}
