// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "uprobe.h"
#include "usdt.h"
#include "usdt_link.h"
#include "vec.h"

/* <bpf/usdt.bpf.h>: enum __bpf_usdt_arg_type, BPF_USDT_MAX_ARG_CNT, struct __bpf_usdt_spec */
enum { ARG_CONST, ARG_REG, ARG_REG_DEREF };
#define MAX_ARGS 12

struct usdt_spec {
	struct usdt_arg_spec args[MAX_ARGS];
	uint64_t usdt_cookie;
	short arg_cnt;
};

_Static_assert(sizeof(struct usdt_arg_spec) == 16, "struct __bpf_usdt_arg_spec");
_Static_assert(offsetof(struct usdt_spec, usdt_cookie) == 192, "struct __bpf_usdt_spec");

#if defined(__x86_64__)
#include <asm/ptrace.h>
#define REG(field) ((short)offsetof(struct pt_regs, field))

/*
 * x86-64: every name of a register in an operand, and where struct pt_regs
 * keeps it (the uapi names the fields rax...; the kernel's layout is the same)
 */
static const struct {
	const char *names[4];
	short off;
} regs[] = {
	{ { "rip", "eip", NULL, NULL }, REG(rip) },
	{ { "rax", "eax", "ax", "al" }, REG(rax) },
	{ { "rbx", "ebx", "bx", "bl" }, REG(rbx) },
	{ { "rcx", "ecx", "cx", "cl" }, REG(rcx) },
	{ { "rdx", "edx", "dx", "dl" }, REG(rdx) },
	{ { "rsi", "esi", "si", "sil" }, REG(rsi) },
	{ { "rdi", "edi", "di", "dil" }, REG(rdi) },
	{ { "rbp", "ebp", "bp", "bpl" }, REG(rbp) },
	{ { "rsp", "esp", "sp", "spl" }, REG(rsp) },
	{ { "r8", "r8d", "r8w", "r8b" }, REG(r8) },
	{ { "r9", "r9d", "r9w", "r9b" }, REG(r9) },
	{ { "r10", "r10d", "r10w", "r10b" }, REG(r10) },
	{ { "r11", "r11d", "r11w", "r11b" }, REG(r11) },
	{ { "r12", "r12d", "r12w", "r12b" }, REG(r12) },
	{ { "r13", "r13d", "r13w", "r13b" }, REG(r13) },
	{ { "r14", "r14d", "r14w", "r14b" }, REG(r14) },
	{ { "r15", "r15d", "r15w", "r15b" }, REG(r15) },
};
#else
/* elsewhere the operands are another language: the caller takes libbpf's perf-event path */
static const struct {
	const char *names[4];
	short off;
} regs[1];
#endif

static int reg_off(const char *name, size_t len)
{
	size_t i, j;

#if !defined(__x86_64__)
	return -EOPNOTSUPP;
#endif
	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (j = 0; j < 4 && regs[i].names[j]; j++)
			if (strlen(regs[i].names[j]) == len && !strncmp(regs[i].names[j], name, len))
				return regs[i].off;
	return -EINVAL;
}

/* "%reg" at s (len bytes): its pt_regs offset */
static int parse_reg(const char *s, size_t len)
{
	return len > 1 && s[0] == '%' ? reg_off(s + 1, len - 1) : -EINVAL;
}

int usdt_parse_arg(const char *s, size_t len, struct usdt_arg_spec *out)
{
	const char *at = memchr(s, '@', len), *op, *end = s + len, *paren;
	char *e, num[32];
	long size;
	int off;

	memset(out, 0, sizeof(*out));
	if (!at || at - s >= (long)sizeof(num))
		return -EINVAL;
	memcpy(num, s, (size_t)(at - s));
	num[at - s] = 0;
	size = strtol(num, &e, 10);
	if (*e || (labs(size) != 1 && labs(size) != 2 && labs(size) != 4 && labs(size) != 8))
		return -EINVAL;
	out->arg_signed = size < 0;
	out->arg_bitshift = (char)(64 - labs(size) * 8);
	op = at + 1;
	if (op < end && *op == '$') {
		/* a constant: val_off is the value */
		snprintf(num, sizeof(num), "%.*s", (int)(end - op - 1), op + 1);
		out->val_off = (uint64_t)strtoll(num, &e, 0);
		out->arg_type = ARG_CONST;
		return *num && !*e ? 0 : -EINVAL;
	}
	if (op < end && *op == '%') {
		off = parse_reg(op, (size_t)(end - op));
		out->arg_type = ARG_REG;
		out->reg_off = (short)off;
		return off < 0 ? off : 0;
	}
	/* OFF(%reg) or (%reg): memory at the register plus an offset (no index: SIB is not read) */
	paren = memchr(op, '(', (size_t)(end - op));
	if (!paren || end[-1] != ')' || memchr(paren, ',', (size_t)(end - paren)))
		return -EINVAL;
	snprintf(num, sizeof(num), "%.*s", (int)(paren - op), op);
	out->val_off = (uint64_t)(*num ? strtoll(num, &e, 0) : 0);
	if (*num && *e)
		return -EINVAL;
	off = parse_reg(paren + 1, (size_t)(end - paren - 2));
	out->arg_type = ARG_REG_DEREF;
	out->reg_off = (short)off;
	return off < 0 ? off : 0;
}

static int parse_spec(const char *args, struct usdt_spec *spec)
{
	const char *p = args;
	size_t len;
	int ret;

	memset(spec, 0, sizeof(*spec));
	for (;;) {
		p += strspn(p, " ");
		len = strcspn(p, " ");
		if (!len)
			return 0;
		if (spec->arg_cnt == MAX_ARGS)
			return -E2BIG;
		ret = usdt_parse_arg(p, len, &spec->args[spec->arg_cnt]);
		if (ret)
			return ret;
		spec->arg_cnt++;
		p += len;
	}
}

/* spec, offset and semaphore offset of one site; 0 or -errno with the reason */
static int site_point(struct elfobj *elf, const struct usdt_site *site, struct usdt_spec *spec,
		      uint64_t *off, uint64_t *ref, const struct usdt_link_opts *o, char *err,
		      size_t errlen)
{
	int ret = parse_spec(site->args, spec);

	if (ret) {
		snprintf(err, errlen, "cannot read the arguments '%s' of %s:%s in %s", site->args,
			 o->provider, o->name, o->path);
		return ret;
	}
	*ref = 0;
	ret = elfobj__vaddr_to_offset(elf, site->pc, off);
	if (!ret && site->semaphore)
		ret = elfobj__vaddr_to_offset(elf, site->semaphore, ref);
	if (ret)
		snprintf(err, errlen, "%s:%s at 0x%llx in %s is in no loadable segment", o->provider,
			 o->name, (unsigned long long)site->pc, o->path);
	return ret;
}

/*
 * A free spec id below max, taken and held; -E2BIG when none is left,
 * -ENOMEM.  The lowest: a link detached and attached again (duty cycling)
 * gets the ids it gave back, the same specs in them.
 */
static int take_id(const struct usdt_link_opts *o, uint32_t max, uint32_t *id)
{
	uint32_t i;

	if (max > USDT_SPEC_IDS_MAX)
		max = USDT_SPEC_IDS_MAX;
	if (vec_reserve(&o->held->ids, &o->held->cap, o->held->n + 1, sizeof(*o->held->ids)))
		return -ENOMEM;
	for (i = 0; i < max && o->pool->taken[i]; i++)
		;
	if (i == max)
		return -E2BIG;
	o->pool->taken[i] = 1;
	o->held->ids[o->held->n++] = i;
	*id = i;
	return 0;
}

void usdt_held__release(struct usdt_held *h, struct usdt_spec_ids *pool)
{
	while (h->n) {
		uint32_t id = h->ids[--h->n];

		if (id < USDT_SPEC_IDS_MAX)
			pool->taken[id] = 0;
	}
}

/* each site's spec into the map, its id the cookie; 0 or -errno with the reason */
static int store_specs(const struct usdt_link_opts *o, struct elfobj *elf,
		       const struct usdt_site *sites, int n, uint64_t *offs, uint64_t *refs,
		       uint64_t *cookies, size_t *count, char *err, size_t errlen)
{
	struct bpf_map *map = bpf_object__find_map_by_name(o->obj, "__bpf_usdt_specs");
	struct usdt_spec spec;
	uint32_t id;
	int i, ret;

	if (!map || bpf_map__value_size(map) != sizeof(spec)) {
		snprintf(err, errlen, "libbpf's __bpf_usdt_specs map is not the layout this build knows");
		return -EPROTO;
	}
	for (*count = 0, i = 0; i < n; i++) {
		if (strcmp(sites[i].name, o->name))
			continue;
		ret = site_point(elf, &sites[i], &spec, &offs[*count], &refs[*count], o, err,
				 errlen);
		if (ret)
			return ret;
		ret = take_id(o, bpf_map__max_entries(map), &id);
		if (ret == -E2BIG)
			snprintf(err, errlen, "more than %u USDT sites attached at once",
				 bpf_map__max_entries(map));
		else if (ret)
			snprintf(err, errlen, "out of memory");
		if (ret)
			return ret;
		if (bpf_map_update_elem(bpf_map__fd(map), &id, &spec, BPF_ANY)) {
			ret = -errno;
			snprintf(err, errlen, "cannot store a USDT argument spec: %s", strerror(errno));
			return ret;
		}
		cookies[(*count)++] = (uint64_t)id;
	}
	return 0;
}

int usdt_link__attach(struct uprobe_set *set, const struct usdt_link_opts *o, char *err,
		      size_t errlen)
{
	struct usdt_site *sites = NULL;
	uint64_t *offs = NULL, *refs = NULL, *cookies = NULL;
	struct elfobj *elf = elfobj__open(o->path);
	size_t count = 0;
	int n, ret;

	if (!elf) {
		ret = -errno;
		snprintf(err, errlen, "cannot read %s: %s", o->path, strerror(errno));
		return ret;
	}
	n = usdt_sites(elf, o->provider, &sites);
	ret = n < 0 ? n : 0;
	if (n > 0) {
		offs = calloc((size_t)n, sizeof(*offs));
		refs = calloc((size_t)n, sizeof(*refs));
		cookies = calloc((size_t)n, sizeof(*cookies));
		ret = offs && refs && cookies ? 0 : -ENOMEM;
	}
	if (!ret && n > 0)
		ret = store_specs(o, elf, sites, n, offs, refs, cookies, &count, err, errlen);
	if (!ret && count) {
		ret = uprobe_set__attach_refctr(set, o->prog, o->path, offs, refs, cookies, count,
						o->pid);
		if (ret)
			snprintf(err, errlen, "cannot attach to the %s:%s probes of %s: %s",
				 o->provider, o->name, o->path, strerror(-ret));
	} else if (ret == -ENOMEM) {
		snprintf(err, errlen, "out of memory");
	}
	free(offs);
	free(refs);
	free(cookies);
	free(sites);
	elfobj__free(elf);
	return ret;
}
