// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "a64insn.h"
#include "elfobj.h"
#include "plt.h"
#include "probe_offset.h"
#include "x86dec.h"

/* cb(ctx, r_offset, symbol name) for every relocation with a symbol; stops when cb returns true */
static void for_each_rela(Elf *elf, bool (*cb)(void *ctx, uint64_t off, const char *name),
			  void *ctx)
{
	Elf_Scn *scn = NULL, *symscn;
	GElf_Shdr shdr, symshdr;
	GElf_Rela rela;
	GElf_Sym sym;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data, *syms;
		size_t i, n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_RELA || !shdr.sh_entsize)
			continue;
		symscn = elf_getscn(elf, shdr.sh_link);
		data = elf_getdata(scn, NULL);
		syms = symscn ? elf_getdata(symscn, NULL) : NULL;
		if (!data || !syms || !gelf_getshdr(symscn, &symshdr))
			continue;
		n = shdr.sh_size / shdr.sh_entsize;
		for (i = 0; i < n; i++)
			if (gelf_getrela(data, (int)i, &rela) && GELF_R_SYM(rela.r_info) &&
			    gelf_getsym(syms, (int)GELF_R_SYM(rela.r_info), &sym) &&
			    cb(ctx, rela.r_offset, elf_strptr(elf, symshdr.sh_link, sym.st_name)))
				return;
	}
}

struct slot_query {
	uint64_t slot;
	const char *name;
};

static bool slot_match(void *ctx, uint64_t off, const char *name)
{
	struct slot_query *q = ctx;

	if (off != q->slot)
		return false;
	q->name = name;
	return true;
}

const char *plt__got_symbol(struct elfobj *obj, uint64_t slot)
{
	struct slot_query q = { slot, NULL };

	for_each_rela(elfobj__elf(obj), slot_match, &q);
	return q.name;
}

bool plt__in_plt(struct elfobj *obj, uint64_t vaddr)
{
	Elf *elf = elfobj__elf(obj);
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || vaddr < shdr.sh_addr ||
		    vaddr >= shdr.sh_addr + shdr.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		return name && !strncmp(name, ".plt", 4);
	}
	return false;
}

bool plt__rip_operand(const cs_insn *in, uint64_t *addr)
{
	const cs_x86 *x = &in->detail->x86;

	if (x->op_count != 1 || x->operands[0].type != X86_OP_MEM ||
	    x->operands[0].mem.base != X86_REG_RIP || x->operands[0].mem.index != X86_REG_INVALID)
		return false;
	*addr = in->address + in->size + (uint64_t)x->operands[0].mem.disp;
	return true;
}

/* x86-64: [endbr64;] jmp *disp(%rip), in .plt, .plt.sec or .plt.got */
static bool x86_entry_slot(struct elfobj *obj, uint64_t vaddr, uint64_t *slot)
{
	uint8_t code[32];
	struct x86dec d;
	const cs_insn *in;
	size_t pos = 0;
	bool ok = false;

	if (elfobj__read(obj, vaddr, code, sizeof(code)) != sizeof(code) ||
	    x86dec__open(&d, code, sizeof(code), vaddr))
		return false;
	in = x86dec__at(&d, pos);
	if (in && in->id == X86_INS_ENDBR64) {
		pos += in->size;
		in = x86dec__at(&d, pos);
	}
	if (in && in->id == X86_INS_JMP)
		ok = plt__rip_operand(in, slot);
	x86dec__close(&d);
	return ok;
}

/* arm64: [bti c;] adrp x16, PAGE; ldr x17, [x16, #OFF]; add x16, x16, #OFF; br x17 */
static bool a64_entry_slot(struct elfobj *obj, uint64_t vaddr, uint64_t *slot)
{
	uint8_t code[3 * A64_INSN];
	unsigned int reg;
	size_t k;

	if (elfobj__read(obj, vaddr, code, sizeof(code)) != sizeof(code))
		return false;
	k = a64_bti(a64_word(code)) ? A64_INSN : 0;
	return a64_got_load(a64_word(code + k), a64_word(code + k + A64_INSN), vaddr + k, slot,
			    &reg) && reg == 17;
}

bool plt__entry_slot(struct elfobj *obj, uint64_t vaddr, uint64_t *slot)
{
	return elfobj__machine(obj) == EM_AARCH64 ? a64_entry_slot(obj, vaddr, slot) :
						    x86_entry_slot(obj, vaddr, slot);
}

static bool named(const char *s, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return true;
	return false;
}

/* the GOT slots holding one of the names, and what calls to them aim at: built once per scan */
struct plt_index {
	uint64_t *slots;		/* sorted */
	size_t n_slots;
	uint64_t *targets;		/* PLT entries and functions that are one of the names, sorted */
	size_t n_targets;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool in_sorted(const uint64_t *v, size_t n, uint64_t x)
{
	return n && bsearch(&x, v, n, sizeof(*v), cmp_u64);
}

static int push(uint64_t **v, size_t *n, uint64_t x)
{
	uint64_t *nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = x;
	*v = nv;
	return 0;
}

struct slots_ctx {
	struct plt_index *x;
	const char *const *names;
	size_t n;
	int err;
};

static bool add_slot(void *ctx, uint64_t off, const char *name)
{
	struct slots_ctx *c = ctx;

	if (named(name, c->names, c->n))
		c->err = push(&c->x->slots, &c->x->n_slots, off);
	return c->err != 0;
}

/* every relocation of a GOT slot to one of the names */
static int index_slots(Elf *elf, struct plt_index *x, const char *const *names, size_t n)
{
	struct slots_ctx c = { x, names, n, 0 };

	for_each_rela(elf, add_slot, &c);
	if (x->n_slots)	/* qsort() takes no NULL base, even for 0 */
		qsort(x->slots, x->n_slots, sizeof(*x->slots), cmp_u64);
	return c.err;
}

/* the PLT entries that jump through those slots, and the names' own functions */
static int index_targets(struct elfobj *obj, struct plt_index *x, const char *const *names,
			 size_t n)
{
	Elf *elf = elfobj__elf(obj);
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx, i;
	/* x86-64 PLT entries are 16 bytes; arm64's 16 or, with BTI, 24: every word is tried */
	uint64_t step = elfobj__machine(obj) == EM_AARCH64 ? A64_INSN : 16, at, slot;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || !(name = elf_strptr(elf, shstrndx, shdr.sh_name)) ||
		    strncmp(name, ".plt", 4) || shdr.sh_size > (1U << 24))
			continue;
		for (at = shdr.sh_addr; at + 16 <= shdr.sh_addr + shdr.sh_size; at += step)
			if (plt__entry_slot(obj, at, &slot) && in_sorted(x->slots, x->n_slots, slot) &&
			    push(&x->targets, &x->n_targets, at))
				return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct elf_symbol *sym = elfobj__sym_by_name(obj, names[i]);

		if (sym && push(&x->targets, &x->n_targets, sym->value))
			return -ENOMEM;
	}
	if (x->n_targets)
		qsort(x->targets, x->n_targets, sizeof(*x->targets), cmp_u64);
	return 0;
}

/* call rel32 to a target, or call *GOT(%rip) through one of the slots */
static bool calls_named(const struct plt_index *x, const cs_insn *in)
{
	const cs_x86 *d = &in->detail->x86;
	uint64_t slot;

	if (in->id != X86_INS_CALL && in->id != X86_INS_JMP)
		return false;
	if (plt__rip_operand(in, &slot))
		return in_sorted(x->slots, x->n_slots, slot);
	return d->op_count == 1 && d->operands[0].type == X86_OP_IMM &&
	       in_sorted(x->targets, x->n_targets, (uint64_t)d->operands[0].imm);
}

/* x86-64: does the function at sym call one of the targets?  Its first 4 KiB are decoded */
static bool x86_function_calls(struct elfobj *obj, const struct elf_symbol *sym,
			       const struct plt_index *x)
{
	uint8_t code[4096];
	size_t len = sym->size < sizeof(code) ? sym->size : sizeof(code), pos;
	const cs_insn *in;
	struct x86dec d;
	bool hit = false;

	if (elfobj__read(obj, sym->value, code, len) != (long)len ||
	    x86dec__open(&d, code, len, sym->value))
		return false;
	for (pos = 0; pos < len && !hit && (in = x86dec__at(&d, pos)); pos += in->size)
		hit = calls_named(x, in);
	x86dec__close(&d);
	return hit;
}

/*
 * arm64: bl or b to a target, or blr / br through one of the slots just
 * loaded (adrp; ldr; blr: -fno-plt).  The first 4 KiB, word by word.
 */
static bool a64_function_calls(struct elfobj *obj, const struct elf_symbol *sym,
			       const struct plt_index *x)
{
	uint8_t code[4096];
	size_t len = (sym->size < sizeof(code) ? sym->size : sizeof(code)) & ~(size_t)3, pos;
	uint64_t to, slot, pc;
	unsigned int reg;
	uint32_t i;

	if (elfobj__read(obj, sym->value, code, len) != (long)len)
		return false;
	for (pos = 0; pos + A64_INSN <= len; pos += A64_INSN) {
		i = a64_word(code + pos);
		pc = sym->value + pos;
		if ((a64_bl(i) || a64_b(i)) && a64_branch_target(i, pc, &to) &&
		    in_sorted(x->targets, x->n_targets, to))
			return true;
		if ((a64_blr(i) || a64_br(i)) && pos >= 2 * A64_INSN &&
		    a64_got_load(a64_word(code + pos - 8), a64_word(code + pos - 4), pc - 8, &slot,
				 &reg) && reg == a64_rn(i) && in_sorted(x->slots, x->n_slots, slot))
			return true;
	}
	return false;
}

static bool function_calls(struct elfobj *obj, const struct elf_symbol *sym,
			   const struct plt_index *x)
{
	return elfobj__machine(obj) == EM_AARCH64 ? a64_function_calls(obj, sym, x) :
						    x86_function_calls(obj, sym, x);
}

int plt__callers(struct elfobj *obj, const char *const *names, size_t n_names, size_t max,
		 void (*cb)(void *ctx, uint64_t func_vaddr), void *ctx)
{
	struct plt_index x = { 0 };
	const struct elf_symbol *syms;
	size_t n, i, found = 0;
	int err;

	err = index_slots(elfobj__elf(obj), &x, names, n_names);
	if (!err)
		err = index_targets(obj, &x, names, n_names);
	syms = elfobj__symbols(obj, &n);
	for (i = 0; !err && x.n_targets + x.n_slots && i < n && found < max; i++) {
		if (syms[i].size < 16 || (i && syms[i].value == syms[i - 1].value) ||
		    named(syms[i].name, names, n_names))
			continue;
		if (function_calls(obj, &syms[i], &x)) {
			cb(ctx, syms[i].value);
			found++;
		}
	}
	free(x.slots);
	free(x.targets);
	return err ? err : (int)found;
}
