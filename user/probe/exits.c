// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "culpert.h"

#include "a64insn.h"
#include "bsearch.h"
#include "elfobj.h"
#include "exits.h"
#include "hoist.h"
#include "plt.h"
#include "probe_offset.h"
#include "x86dec.h"

struct region {
	uint64_t start, end;
};

struct finder {
	struct elfobj *obj;
	Elf *elf;
	struct exits *out;
	struct region todo[EXITS_MAX_REGIONS];	/* regions[0..n_todo): found; [0..done): decoded */
	size_t n_todo;
	/* what moving exits off `ret` needs (hoist.h): the code, its direct branches */
	struct hoist_code code[EXITS_MAX_REGIONS];
	size_t n_code;
	struct hoist_branch *br;
	size_t n_br;
	bool indirect;			/* a jump through a register: the code's entries are not all known */
	bool a64;			/* arm64 code: decoded word by word, no exit hoisted */
	uint64_t ret_vaddr[EXITS_MAX];	/* of out->offsets[] */
};

static void give_up(struct finder *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void give_up(struct finder *f, const char *fmt, ...)
{
	va_list ap;

	if (!f->out->complete)
		return;
	f->out->complete = false;
	va_start(ap, fmt);
	vsnprintf(f->out->reason, sizeof(f->out->reason), fmt, ap);
	va_end(ap);
}

static bool visited(const struct finder *f, uint64_t addr)
{
	size_t i;

	for (i = 0; i < f->n_todo; i++)
		if (addr >= f->todo[i].start && addr < f->todo[i].end)
			return true;
	return false;
}

static int32_t le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

/* entry i of .eh_frame_hdr's table at hdr: the function start and its FDE */
static bool fde_entry(struct finder *f, uint64_t hdr, size_t i, uint64_t *start, uint64_t *fde)
{
	uint8_t pair[8];

	if (elfobj__read(f->obj, hdr + 12 + i * 8, pair, sizeof(pair)) != sizeof(pair))
		return false;
	*start = hdr + (uint64_t)(int64_t)le32(pair);
	*fde = hdr + (uint64_t)(int64_t)le32(pair + 4);
	return true;
}

struct fde_search {
	struct finder *f;
	uint64_t hdr, addr;
	bool failed;			/* an entry of the table could not be read */
};

/* FDE i of the search table starts at or before the address */
static bool fde_starts_by(size_t i, void *ctx)
{
	struct fde_search *s = ctx;
	uint64_t start, fde;

	if (s->failed || !fde_entry(s->f, s->hdr, i, &start, &fde)) {
		s->failed = true;
		return false;
	}
	return start <= s->addr;
}

/*
 * The FDE covering `addr`, through the binary search table of .eh_frame_hdr
 * in the encoding GNU linkers write (datarel sdata4, as fpcheck reads it):
 * a .cold part or a local function of a stripped object has no symbol, but
 * every function has an FDE.  Its end is its pc_range when the FDE's
 * pc_begin is pcrel sdata4 as GCC and clang emit, else the next FDE's start.
 */
static bool fde_range(struct finder *f, uint64_t addr, struct region *r)
{
	struct fde_search s = { .f = f, .addr = addr };
	uint64_t start, fde, next, fde2;
	uint8_t h[12], body[16];
	size_t lo;

	if (elfobj__eh_frame_hdr(f->obj, &s.hdr) ||
	    elfobj__read(f->obj, s.hdr, h, sizeof(h)) != sizeof(h) || h[0] != 1 || h[2] != 0x03 ||
	    h[3] != 0x3b)
		return false;
	lo = lower_bound_at((uint32_t)le32(h + 8), fde_starts_by, &s);
	if (s.failed)
		return false;
	if (!lo || !fde_entry(f, s.hdr, lo - 1, &start, &fde))
		return false;
	r->start = start;
	if (elfobj__read(f->obj, fde, body, sizeof(body)) == sizeof(body) &&
	    fde + 8 + (uint64_t)(int64_t)le32(body + 8) == start)
		r->end = start + (uint32_t)le32(body + 12);
	else if (fde_entry(f, s.hdr, lo, &next, &fde2))
		r->end = next;
	else
		return false;
	return addr < r->end;
}

/*
 * The code range around `addr`: the function symbol that starts there, or
 * the FDE covering it, or the symbol covering it.  false if none is known.
 */
static bool range_of(struct finder *f, uint64_t addr, struct region *r)
{
	const struct elf_symbol *sym = elfobj__sym_by_addr(f->obj, addr);

	if (sym && sym->value == addr && sym->size) {
		*r = (struct region){ addr, addr + sym->size };
		return true;
	}
	if (fde_range(f, addr, r))
		return true;
	if (sym && sym->size && addr < sym->value + sym->size) {
		*r = (struct region){ sym->value, sym->value + sym->size };
		return true;
	}
	return false;
}

static void add_region(struct finder *f, uint64_t addr)
{
	struct region r;

	if (visited(f, addr))
		return;
	if (!range_of(f, addr, &r)) {
		give_up(f, "no symbol or CFI covers code at %#llx a jump reaches",
			(unsigned long long)addr);
		return;
	}
	if (f->n_todo >= EXITS_MAX_REGIONS) {
		give_up(f, "more than %d code ranges reached by jumps", EXITS_MAX_REGIONS);
		return;
	}
	f->todo[f->n_todo++] = r;
}

static void add_exit(struct finder *f, uint64_t vaddr)
{
	uint64_t off;
	size_t i;

	if (elfobj__vaddr_to_offset(f->obj, vaddr, &off)) {
		give_up(f, "return at %#llx is in no loadable segment", (unsigned long long)vaddr);
		return;
	}
	for (i = 0; i < f->out->n; i++)
		if (f->out->offsets[i] == off)
			return;
	if (f->out->n >= EXITS_MAX) {
		give_up(f, "more than %d return instructions", EXITS_MAX);
		return;
	}
	f->ret_vaddr[f->out->n] = vaddr;
	f->out->offsets[f->out->n++] = off;
}

/* a tail call through the GOT to `name`: followed if this object defines it, else listed */
static void tail_to(struct finder *f, const char *name, uint64_t at)
{
	const struct elf_symbol *sym = name ? elfobj__sym_by_name(f->obj, name) : NULL;
	struct exits *o = f->out;
	size_t i;

	if (!name) {
		give_up(f, "tail call at %#llx through an unnamed GOT entry", (unsigned long long)at);
		return;
	}
	if (sym) {
		add_region(f, sym->value);
		return;
	}
	for (i = 0; i < o->n_tails; i++)
		if (!strcmp(o->tails[i], name))
			return;
	if (o->n_tails >= EXITS_MAX_TAILS || strlen(name) >= EXITS_NAME_LEN) {
		give_up(f, "too many tail calls into other objects (%s)", name);
		return;
	}
	snprintf(o->tails[o->n_tails++], EXITS_NAME_LEN, "%s", name);
}

/* a direct jump at `from` to `to`: a tail call through the PLT, or code to decode as well */
static void jump_out(struct finder *f, const struct region *r, uint64_t from, uint64_t to)
{
	uint64_t slot;

	if (to >= r->start && to < r->end)
		return;
	if (plt__in_plt(f->obj, to))
		tail_to(f, plt__entry_slot(f->obj, to, &slot) ? plt__got_symbol(f->obj, slot) : NULL,
			from);
	else
		add_region(f, to);
}

static void branch(struct finder *f, const struct region *r, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	uint64_t to, slot;

	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		struct hoist_branch *nb = realloc(f->br, (f->n_br + 1) * sizeof(*nb));

		to = (uint64_t)x->operands[0].imm;
		if (nb) {
			f->br = nb;
			f->br[f->n_br++] = (struct hoist_branch){ in->address, to };
		} else {
			/* without the whole list no exit may move: it stays on its `ret` */
			f->indirect = true;
		}
		jump_out(f, r, in->address, to);
		return;
	}
	/* jmp *sym@GOTPCREL(%rip): -fno-plt's tail call */
	if (in->id == X86_INS_JMP && plt__rip_operand(in, &slot)) {
		tail_to(f, plt__got_symbol(f->obj, slot), in->address);
		return;
	}
	/* through a register or a table: a switch, whose cases lie in the function */
	f->indirect = true;
}

/* x86-64 under capstone; code is kept for hoist__exit() (freed with the finder) or freed here */
static int x86_decode(struct finder *f, const struct region *r, uint8_t *code, uint64_t len)
{
	const cs_insn *in;
	struct x86dec d;
	size_t pos;
	int err;

	err = x86dec__open(&d, code, len, r->start);
	if (err) {
		free(code);
		if (err == -ENOMEM)
			return err;
		give_up(f, "no x86-64 decoder available (capstone)");
		return 0;
	}
	for (pos = 0; pos < len && f->out->complete; pos += in->size) {
		in = x86dec__at(&d, pos);
		if (!in) {
			give_up(f, "cannot decode the code at %#llx", (unsigned long long)(r->start + pos));
			break;
		}
		if (x86dec__in_group(in, CS_GRP_RET))
			add_exit(f, in->address);
		else if (x86dec__in_group(in, CS_GRP_JUMP))
			branch(f, r, in);
	}
	x86dec__close(&d);
	f->code[f->n_code++] = (struct hoist_code){ r->start, r->end, code };
	return 0;
}

/*
 * arm64, word by word: ret (ret x30, ret xN) is an exit; b and the
 * conditional branches are jumps (a b into the PLT a tail call); adrp, ldr
 * then br is -fno-plt's tail call through the GOT; any other br a jump
 * table.  retaa and retab cannot carry a uprobe at all (the kernel rejects
 * them): such a function's exits are not all known.
 */
static void a64_decode(struct finder *f, const struct region *r, const uint8_t *code,
		       uint64_t len)
{
	uint64_t pos, pc, to, slot;
	unsigned int reg;
	uint32_t i;

	for (pos = 0; pos + A64_INSN <= len && f->out->complete; pos += A64_INSN) {
		i = a64_word(code + pos);
		pc = r->start + pos;
		if (a64_ret(i))
			add_exit(f, pc);
		else if (a64_ret_auth(i))
			give_up(f, "retaa/retab at %#llx, which the kernel cannot probe",
				(unsigned long long)pc);
		else if (!a64_bl(i) && a64_branch_target(i, pc, &to))
			jump_out(f, r, pc, to);
		else if ((a64_br(i) || a64_br_auth(i)) && pos >= 2 * A64_INSN &&
			 a64_got_load(a64_word(code + pos - 8), a64_word(code + pos - 4), pc - 8,
				      &slot, &reg) && reg == a64_rn(i))
			tail_to(f, plt__got_symbol(f->obj, slot), pc);
		else if (a64_br(i) || a64_br_auth(i))
			f->indirect = true;
	}
}

static int decode_region(struct finder *f, const struct region *r)
{
	uint64_t len = r->end - r->start;
	uint8_t *code;

	if (len > PROBE_OFFSET_MAX_FUNC) {
		give_up(f, "code range of %llu bytes too large to decode", (unsigned long long)len);
		return 0;
	}
	code = malloc(len);
	if (!code)
		return -ENOMEM;
	if (elfobj__read(f->obj, r->start, code, len) != (long)len) {
		give_up(f, "cannot read the code at %#llx", (unsigned long long)r->start);
		free(code);
		return 0;
	}
	if (!f->a64)
		return x86_decode(f, r, code, len);
	a64_decode(f, r, code, len);
	free(code);
	return 0;
}

/* the probes of one hoisted exit, merged into the cookies of their branches */
static bool add_hoists(struct finder *f, const struct hoist_point *p, size_t n)
{
	struct exits *o = f->out;
	size_t i, j;
	uint64_t off, bits;

	for (i = 0; i < n; i++) {
		if (elfobj__vaddr_to_offset(f->obj, p[i].vaddr, &off))
			return false;
		bits = p[i].taken ? CULPERT_HOIST_TAKEN(p[i].spec) : CULPERT_HOIST_NOT_TAKEN(p[i].spec);
		for (j = 0; j < o->n_hoists && o->hoists[j].offset != off; j++)
			;
		if (j == o->n_hoists) {
			if (o->n_hoists >= EXITS_MAX)
				return false;
			o->hoists[o->n_hoists++] = (struct exit_hoist){ off, CULPERT_HOIST_CC(p[i].cc) |
					(p[i].cond ? CULPERT_HOIST_COND : 0) };
		}
		o->hoists[j].cookie |= bits;
	}
	return true;
}

/* move every exit that can be moved off its `ret` (hoist.h); the others stay */
static void hoist_exits(struct finder *f)
{
	struct hoist_point p[HOIST_MAX_POINTS];
	struct exits *o = f->out;
	size_t i, n, kept = 0;

	for (i = 0; i < o->n; i++) {
		n = hoist__exit(f->code, f->n_code, f->br, f->n_br, f->indirect, f->ret_vaddr[i], p);
		if (n && add_hoists(f, p, n))
			continue;
		o->offsets[kept] = o->offsets[i];
		f->ret_vaddr[kept++] = f->ret_vaddr[i];
	}
	o->n = kept;
}

static void hoist_exits_free(struct finder *f)
{
	size_t k;

	for (k = 0; k < f->n_code; k++)
		free((void *)f->code[k].code);
	free(f->br);
}

int exits__find(struct elfobj *obj, uint64_t vaddr, uint64_t size, bool hoist, struct exits *out)
{
	struct finder f = { .obj = obj, .elf = elfobj__elf(obj), .out = out };
	int machine = elfobj__machine(obj);
	size_t done;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->complete = true;
	if (machine != EM_X86_64 && machine != EM_AARCH64) {
		give_up(&f, "neither x86-64 nor arm64 code");
		return 0;
	}
	f.a64 = machine == EM_AARCH64;
	if (size)
		f.todo[f.n_todo++] = (struct region){ vaddr, vaddr + size };
	else
		add_region(&f, vaddr);
	for (done = 0; done < f.n_todo && out->complete && !err; done++)
		err = decode_region(&f, &f.todo[done]);
	out->regions = done;
	if (!err && out->complete && !out->n && !out->n_tails)
		give_up(&f, "no return instruction found");
	/* arm64's kernel simulates ret: a probe there costs no more than one on a branch */
	if (!err && out->complete && hoist && !f.a64)
		hoist_exits(&f);
	hoist_exits_free(&f);
	return err;
}
