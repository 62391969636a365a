// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "bsearch.h"
#include "culpert.h"
#include "hoist.h"
#include "probe_offset.h"
#include "x86dec.h"

enum kind { K_SIMPLE, K_JCC, K_JMP, K_CALL, K_END };

struct insn {
	uint64_t addr;
	size_t pos;		/* in its code range */
	uint8_t kind;
};

/* the unknown and the NULL sources of a register's value, beside the 16 registers */
#define SRC_UNKNOWN 0xff
#define SRC_ZERO CULPERT_REG_ZERO

static const struct hoist_code *code_of(const struct hoist_code *code, size_t n, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (vaddr >= code[i].start && vaddr < code[i].end)
			return &code[i];
	return NULL;
}

static enum kind kind_of(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	bool direct = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;

	if (x86dec__in_group(in, CS_GRP_RET) || x86dec__in_group(in, CS_GRP_INT) ||
	    x86dec__in_group(in, CS_GRP_IRET) || in->id == X86_INS_UD2 || in->id == X86_INS_HLT)
		return K_END;
	if (x86dec__in_group(in, CS_GRP_CALL))
		return K_CALL;
	if (!x86dec__in_group(in, CS_GRP_JUMP))
		return K_SIMPLE;
	if (in->id == X86_INS_JMP)
		return direct ? K_JMP : K_END;
	/* jcc rel8/rel32; loop, jrcxz and the like end a stretch like an unknown branch */
	return direct && (in->bytes[0] & 0xf0) == 0x70 ? K_JCC :
	       direct && in->bytes[0] == 0x0f ? K_JCC : K_END;
}

/* every instruction of the range, in order; NULL when it does not decode to its end */
static struct insn *decode_all(struct x86dec *d, size_t *n)
{
	struct insn *v = malloc((d->len + 1) * sizeof(*v));
	const cs_insn *in;
	size_t pos = 0, k = 0;

	if (!v)
		return NULL;
	while (pos < d->len) {
		in = x86dec__at(d, pos);
		if (!in) {
			free(v);
			return NULL;
		}
		v[k++] = (struct insn){ .addr = in->address, .pos = pos, .kind = (uint8_t)kind_of(in) };
		pos += in->size;
	}
	*n = k;
	return v;
}

/* an immediate operand and a register operand rsp: add/sub $imm,%rsp; else false */
static bool rsp_imm(const cs_x86 *x, int64_t *imm)
{
	bool whole, rsp = false, have = false;
	uint8_t i;

	for (i = 0; i < x->op_count; i++) {
		if (x->operands[i].type == X86_OP_IMM) {
			*imm = x->operands[i].imm;
			have = true;
		} else if (x->operands[i].type == X86_OP_REG) {
			rsp = x86dec__gpr(x->operands[i].reg, &whole) == 4 && whole;
		}
	}
	return x->op_count == 2 && rsp && have;
}

/* lea disp(%rsp),%rsp */
static bool rsp_lea(const cs_x86 *x, int64_t *disp)
{
	uint8_t i;

	for (i = 0; i < x->op_count; i++) {
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RSP &&
		    x->operands[i].mem.index == X86_REG_INVALID) {
			*disp = x->operands[i].mem.disp;
			return true;
		}
	}
	return false;
}

struct sim {
	uint8_t src[16];	/* where each register's value comes from: a register at the entry */
	int64_t delta;		/* stack pointer now minus at the entry */
};

/* one instruction's effect; false when it cannot be followed */
static bool step(struct x86dec *d, const cs_insn *in, struct sim *s)
{
	const cs_x86 *x = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nr = 0, nw = 0, i;
	int64_t v = 0;
	bool whole;
	int g, src;

	if (cs_regs_access(d->cs, in, rd, &nr, wr, &nw) != CS_ERR_OK)
		return false;
	if (in->id == X86_INS_PUSH) {
		s->delta -= 8;
		return true;
	}
	if ((in->id == X86_INS_ADD || in->id == X86_INS_SUB) && rsp_imm(x, &v)) {
		s->delta += in->id == X86_INS_ADD ? v : -v;
		return true;
	}
	if (in->id == X86_INS_LEA && nw == 1 && x86dec__gpr(wr[0], &whole) == 4 && rsp_lea(x, &v)) {
		s->delta += v;
		return true;
	}
	if (in->id == X86_INS_POP)
		s->delta += 8;
	/* mov %r64,%r64: the value moves; xor of a register with itself: zero */
	if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && nr == 1 && nw == 1 &&
	    (g = x86dec__gpr(wr[0], &whole)) >= 0 && whole && (src = x86dec__gpr(rd[0], &whole)) >= 0 &&
	    whole && g != 4) {
		s->src[g] = s->src[src];
		return true;
	}
	if (in->id == X86_INS_XOR && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && x->operands[0].reg == x->operands[1].reg &&
	    (g = x86dec__gpr(x->operands[0].reg, &whole)) >= 0 && g != 4) {
		s->src[g] = SRC_ZERO;
		return true;
	}
	for (i = 0; i < nw; i++) {
		g = x86dec__gpr(wr[i], &whole);
		/* rsp written any other way (leave, mov %rbp,%rsp): the slot is not known */
		if (g == 4 && in->id != X86_INS_POP)
			return false;
		if (g >= 0 && g != 4)
			s->src[g] = SRC_UNKNOWN;
	}
	return true;
}

/* from the instruction at `from` to the ret at `to`: the spec of the result, 0 if unknown */
static uint16_t simulate(struct x86dec *d, const struct insn *v, size_t from, size_t to)
{
	struct sim s = { .delta = 0 };
	const cs_insn *in;
	size_t i;
	int k;

	for (k = 0; k < 16; k++)
		s.src[k] = (uint8_t)k;
	for (i = from; i < to; i++) {
		in = x86dec__at(d, v[i].pos);
		if (!in || !step(d, in, &s))
			return 0;
	}
	if (s.src[0] == SRC_UNKNOWN || s.src[0] == 4 || s.delta % 8 || s.delta < -1024 ||
	    s.delta > 1016)
		return 0;
	return (uint16_t)CULPERT_HOIST_SPEC(1, s.src[0], s.delta / 8);
}

/* the branch at vaddr, if the kernel emulates it: its condition code (or unconditional) */
static bool emulated_branch(const struct hoist_code *code, size_t n, uint64_t vaddr, bool *cond,
			    uint8_t *cc)
{
	const struct hoist_code *c = code_of(code, n, vaddr);
	const uint8_t *b;
	size_t left, len;

	if (!c)
		return false;
	b = c->code + (vaddr - c->start);
	left = c->end - vaddr;
	len = b[0] == 0x0f ? 6 : (b[0] == 0xe9 ? 5 : 2);
	if (left < len || !probe_offset__emulated(b, len))
		return false;
	*cond = b[0] != 0xeb && b[0] != 0xe9;
	*cc = (b[0] == 0x0f ? b[1] : b[0]) & 0xf;
	return true;
}

static bool insn_below(const void *elem, const void *key)
{
	return ((const struct insn *)elem)->addr < *(const uint64_t *)key;
}

/* inline: else gcc 12 warns that hoist__exit's v, fresh from decode_all, may be unset */
static inline size_t index_of(const struct insn *v, size_t n, uint64_t addr)
{
	size_t i = lower_bound(&addr, v, n, sizeof(*v), insn_below);

	return i < n && v[i].addr == addr ? i : n;
}

/* add the probe for the entry at v[at] of the stretch ending at v[ret], from the branch at `from` */
static bool add_entry(const struct hoist_code *code, size_t n_code, struct x86dec *d,
		      const struct insn *v, size_t n, size_t at, size_t ret, uint64_t from,
		      bool taken, struct hoist_point *out, size_t *k)
{
	struct hoist_point *p = &out[*k];

	if (at >= n || *k >= HOIST_MAX_POINTS ||
	    !emulated_branch(code, n_code, from, &p->cond, &p->cc) || (!p->cond && !taken))
		return false;
	p->vaddr = from;
	p->taken = taken;
	p->spec = simulate(d, v, at, ret);
	if (!p->spec)
		return false;
	(*k)++;
	return true;
}

/* every way into the stretch before the ret at v[ret]: the probes, or 0 */
static size_t entries(const struct hoist_code *code, size_t n_code, const struct hoist_branch *br,
		      size_t n_br, struct x86dec *d, const struct insn *v, size_t n, size_t ret,
		      struct hoist_point *out)
{
	size_t s = ret, i, k = 0;

	while (s > 0 && v[s - 1].kind == K_SIMPLE)
		s--;
	/* entered at the range's start, or falling out of a call: from where cannot be told */
	if (!s || v[s - 1].kind == K_CALL)
		return 0;
	if (v[s - 1].kind == K_JCC &&
	    !add_entry(code, n_code, d, v, n, s, ret, v[s - 1].addr, false, out, &k))
		return 0;
	for (i = 0; i < n_br; i++) {
		if (br[i].to < v[s].addr || br[i].to > v[ret].addr)
			continue;
		if (!add_entry(code, n_code, d, v, n, index_of(v, n, br[i].to), ret, br[i].from, true,
			       out, &k))
			return 0;
	}
	return k;
}

size_t hoist__exit(const struct hoist_code *code, size_t n_code, const struct hoist_branch *br,
		   size_t n_br, bool indirect, uint64_t ret_vaddr,
		   struct hoist_point out[HOIST_MAX_POINTS])
{
	const struct hoist_code *c = code_of(code, n_code, ret_vaddr);
	struct x86dec d;
	struct insn *v;
	size_t n = 0, k = 0, r;

	/* a jump through a register could enter anywhere */
	if (indirect || !c || x86dec__open(&d, c->code, c->end - c->start, c->start))
		return 0;
	v = decode_all(&d, &n);
	r = v ? index_of(v, n, ret_vaddr) : n;
	if (r < n && v[r].kind == K_END)
		k = entries(code, n_code, br, n_br, &d, v, n, r, out);
	free(v);
	x86dec__close(&d);
	return k;
}
