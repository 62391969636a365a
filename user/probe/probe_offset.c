// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Choosing a function's probe offset.  Capstone (Debian's libcapstone4)
 * decodes: lengths, instruction ids, operand access, branch targets.  Which
 * instruction the kernel emulates is decided from the raw bytes instead, the
 * way arch/x86/kernel/uprobes.c decides it (branch_setup_xol_ops(),
 * push_setup_xol_ops()), and only for the plain encodings of those: a probe
 * that lands on anything else is single-stepped, which is what moving it
 * was meant to avoid.
 */
#include <errno.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "culpert.h"
#include "elfobj.h"
#include "log.h"
#include "probe_offset.h"
#include "x86dec.h"

/* the argument registers a cookie can say moved (culpert.h, CULPERT_PROBE_ARG_SHIFT) */
static const uint8_t arg_regs[PROBE_OFFSET_ARGS] = { 7, 6, 2 };	/* rdi, rsi, rdx */

/* shared with probe_offset_arm64.c; the short names below are this file's */
#define decide probe_offset__decide
#define size_checkable probe_offset__size_checkable

void probe_offset__init(struct probe_offset *po)
{
	int a;

	memset(po, 0, sizeof(*po));
	for (a = 0; a < PROBE_OFFSET_ARGS; a++)
		po->args[a] = arg_regs[a];
}

int probe_offset__decide(struct probe_offset *po, uint64_t offset, const char *fmt, ...)
{
	va_list ap;
	int a;

	/* at +0 (an entry into the skipped bytes, say): the arguments are where the ABI has them */
	if (!offset)
		for (a = 0; a < PROBE_OFFSET_ARGS; a++)
			po->args[a] = arg_regs[a];
	po->offset = offset;
	va_start(ap, fmt);
	vsnprintf(po->reason, sizeof(po->reason), fmt, ap);
	va_end(ap);
	return 0;
}

/*
 * The nops branch_setup_xol_ops() emulates: x86_nops[len] byte for byte
 * (arch/x86/include/asm/nops.h, 64-bit, ASM_NOP_MAX 8), and 0x90 behind
 * prefixes.  Of those prefixes only 66 and f3 (pause) are taken here:
 * REX.B turns 90 into xchg %eax,%r8d.
 */
static bool kernel_nop(const uint8_t *b, size_t n)
{
	static const uint8_t nops[9][8] = {
		[1] = { 0x90 },
		[2] = { 0x66, 0x90 },
		[3] = { 0x0f, 0x1f, 0x00 },
		[4] = { 0x0f, 0x1f, 0x40, 0x00 },
		[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		[7] = { 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		[8] = { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};
	size_t i = 0;

	if (n >= 1 && n <= 8 && !memcmp(b, nops[n], n))
		return true;
	while (i + 1 < n && (b[i] == 0x66 || b[i] == 0xf3))
		i++;
	return i + 1 == n && b[i] == 0x90;
}

/*
 * Does the kernel emulate this instruction instead of single-stepping it?
 * Plain encodings only (exact lengths, no prefixes): the kernel refuses
 * 66-prefixed branches and cs/ds/es/ss/lock prefixes altogether, and
 * emulates push only with no REX or REX 41.
 */
bool probe_offset__emulated(const uint8_t *b, size_t n)
{
	if (kernel_nop(b, n))
		return true;
	switch (b[0]) {
	case 0x50 ... 0x57:	/* push %rax..%rdi */
		return n == 1;
	case 0x41:		/* push %r8..%r15 */
		return n == 2 && b[1] >= 0x50 && b[1] <= 0x57;
	case 0x70 ... 0x7f:	/* jcc rel8 */
	case 0xeb:		/* jmp rel8 */
		return n == 2;
	case 0xe8:		/* call rel32 */
	case 0xe9:		/* jmp rel32 */
		return n == 5;
	case 0x0f:		/* jcc rel32 */
		return n == 6 && b[1] >= 0x80 && b[1] <= 0x8f;
	}
	return false;
}

/*
 * test and cmp, recognised by their encodings too: the SDM defines both as
 * discarding the result and writing only flags.  Capstone's operand access
 * cannot decide this: 4.0.2 marks the operand of `test $imm, r/m` written.
 */
static bool flags_only(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	uint8_t reg = (x->modrm >> 3) & 7;

	if (in->id != X86_INS_TEST && in->id != X86_INS_CMP)
		return false;
	/* lock and rep make no sense on either: refuse rather than reason about them */
	if (x->prefix[0] || x->opcode[1])
		return false;
	switch (x->opcode[0]) {
	case 0x38 ... 0x3d:	/* cmp r/m,r; cmp r,r/m; cmp %al/%eax,imm */
	case 0x84 ... 0x85:	/* test r/m,r */
	case 0xa8 ... 0xa9:	/* test %al/%eax,imm */
		return true;
	case 0x80 ... 0x81:	/* group 1, /7 is cmp */
	case 0x83:
		return reg == 7;
	case 0xf6 ... 0xf7:	/* group 3, /0 is test */
		return reg == 0;
	}
	return false;
}

/*
 * Instructions whose only effects are on their explicit operands and the
 * flags: no implicit memory access (push, call, string ops), no implicit
 * register but rdx:rax (mul).  Which operand is written comes from
 * capstone's operand access, which is right for these (test and cmp are
 * taken by flags_only() before, see there).
 */
static bool register_op(unsigned int id)
{
	switch (id) {
	case X86_INS_MOV: case X86_INS_MOVABS: case X86_INS_MOVZX: case X86_INS_MOVSX:
	case X86_INS_MOVSXD: case X86_INS_LEA:
	case X86_INS_ADD: case X86_INS_SUB: case X86_INS_AND: case X86_INS_OR: case X86_INS_XOR:
	case X86_INS_ADC: case X86_INS_SBB: case X86_INS_INC: case X86_INS_DEC: case X86_INS_NEG:
	case X86_INS_NOT: case X86_INS_SHL: case X86_INS_SHR: case X86_INS_SAR: case X86_INS_ROL:
	case X86_INS_ROR: case X86_INS_IMUL: case X86_INS_MUL:
	case X86_INS_CMOVA: case X86_INS_CMOVAE: case X86_INS_CMOVB: case X86_INS_CMOVBE:
	case X86_INS_CMOVE: case X86_INS_CMOVG: case X86_INS_CMOVGE: case X86_INS_CMOVL:
	case X86_INS_CMOVLE: case X86_INS_CMOVNE: case X86_INS_CMOVNO: case X86_INS_CMOVNP:
	case X86_INS_CMOVNS: case X86_INS_CMOVO: case X86_INS_CMOVP: case X86_INS_CMOVS:
	case X86_INS_SETA: case X86_INS_SETAE: case X86_INS_SETB: case X86_INS_SETBE:
	case X86_INS_SETE: case X86_INS_SETG: case X86_INS_SETGE: case X86_INS_SETL:
	case X86_INS_SETLE: case X86_INS_SETNE: case X86_INS_SETNO: case X86_INS_SETNP:
	case X86_INS_SETNS: case X86_INS_SETO: case X86_INS_SETP: case X86_INS_SETS:
		return true;
	}
	return false;
}

#define ARG_REGS (PROBE_REG(7) | PROBE_REG(6) | PROBE_REG(2))

/* which register's value at entry each register holds; NOBODY once overwritten */
#define NOBODY 0xff
struct holds {
	uint8_t of[16];
};

/* is the entry value of every argument register in `reads` still in some register? */
static bool args_kept(const struct holds *h, uint32_t reads)
{
	int a, r;

	for (a = 0; a < PROBE_OFFSET_ARGS; a++) {
		if (!(reads & PROBE_REG(arg_regs[a])))
			continue;
		for (r = 0; r < 16 && h->of[r] != arg_regs[a]; r++)
			;
		if (r == 16)
			return false;
	}
	return true;
}

/*
 * Does the instruction write nothing but flags and general-purpose
 * registers, none the probe reads but the argument registers, and store
 * nothing?  A load is allowed (the program sees no memory the function
 * has not written, and it writes none here); a faulting one would end the
 * call before the probe, where the process dies anyway.  An argument
 * register may be overwritten once its entry value is in another register
 * (mimalloc's malloc: mov %rdi,%rsi; mov %fs:(%rax),%rdi): h follows
 * where each value is.  Sets *wrote to the registers written, or leaves
 * the reason in why (and h as it was).
 */
static bool writes_unread(struct x86dec *d, const cs_insn *in, uint32_t reads, uint32_t *wrote,
			  struct holds *h, const char **why)
{
	struct holds was = *h;
	int src = -1;
	const cs_x86 *x = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nr = 0, nw = 0, i;
	bool whole;
	int g;

	*why = "neither emulated nor register-only";
	/* lock, rep, and the segment overrides a store would need: refuse rather than reason */
	if (!register_op(in->id) || x->prefix[0] ||
	    cs_regs_access(d->cs, in, rd, &nr, wr, &nw) != CS_ERR_OK)
		return false;
	for (i = 0; i < x->op_count; i++) {
		/* AT&T order: a destination is last; a memory one is a store */
		if (x->operands[i].type == X86_OP_MEM &&
		    ((x->operands[i].access & CS_AC_WRITE) || i + 1 == x->op_count)) {
			*why = "stores to memory";
			return false;
		}
	}
	/* mov %r64,%r64 copies a value; a narrower mov zero-extends or merges, it does not */
	if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && nr == 1 && nw == 1 &&
	    x86dec__gpr(wr[0], &whole) >= 0 && whole)
		src = x86dec__gpr(rd[0], &whole) >= 0 && whole ? x86dec__gpr(rd[0], &whole) : -1;
	*wrote = 0;
	for (i = 0; i < nw; i++) {
		if (wr[i] == X86_REG_EFLAGS)
			continue;
		g = x86dec__gpr(wr[i], &whole);
		if (g < 0) {
			*why = "writes a register other than a general-purpose one";
			return false;
		}
		*wrote |= PROBE_REG(g);
		h->of[g] = src >= 0 ? was.of[src] : NOBODY;
	}
	/* only entry kinds the programs know read their arguments through the cookie */
	if (*wrote & reads & ~(reads == PROBE_REGS_ALL ? 0 : ARG_REGS)) {
		*why = "writes a register the probe reads";
		*h = was;
		return false;
	}
	if (!args_kept(h, reads)) {
		*why = "overwrites the last copy of an argument the probe reads";
		*h = was;
		return false;
	}
	return true;
}

static const char *const reg_names[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

/* "%rax %rdx" */
static void regs_text(uint32_t regs, char *buf, size_t len)
{
	size_t n = 0;
	int g;

	buf[0] = '\0';
	for (g = 0; g < 16; g++)
		if (regs & PROBE_REG(g))
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%%%s", n ? " " : "",
					      reg_names[g]);
}

/*
 * What a leading instruction that may be moved past does, with the
 * registers it writes in *wrote; NULL if it may not, with why.
 */
static const char *skippable(struct x86dec *d, const cs_insn *in, uint32_t reads, char *buf,
			     size_t len, uint32_t *wrote, struct holds *h, const char **why)
{
	size_t n;

	*wrote = 0;
	*why = "neither emulated nor register-only";
	/* endbr64 changes nothing (user-space IBT is not enforced) and is single-stepped */
	if (in->size == 4 && !memcmp(in->bytes, "\xf3\x0f\x1e\xfa", 4))
		return "no effect";
	if (flags_only(in))
		return "flags only";
	if (!writes_unread(d, in, reads, wrote, h, why))
		return NULL;
	n = (size_t)snprintf(buf, len, "writes ");
	if (n < len)
		regs_text(*wrote, buf + n, len - n);
	return buf;
}

/*
 * The leading instructions the probe may move past and the emulated one
 * after them.  Returns 1 with the candidate in po (still to be checked
 * against the whole function), 0 with the final +0 decision.
 */
static int find_candidate(struct x86dec *d, uint32_t reads, struct probe_offset *po)
{
	char text[96], kindbuf[96], regs[96], where[64], past[PROBE_OFFSET_REASON_LEN] = "";
	size_t pos = 0, n = 0, m, count = 0;
	uint32_t wrote, wrote_all = 0;
	const char *kind, *why;
	const cs_insn *in;
	struct holds h;
	int a, r;

	for (r = 0; r < 16; r++)
		h.of[r] = (uint8_t)r;
	for (;;) {
		in = x86dec__at(d, pos);
		if (!in)
			return decide(po, 0, "+0: cannot decode the instruction at +%zu", pos);
		x86dec__text(in, text, sizeof(text));
		if (probe_offset__emulated(in->bytes, in->size))
			break;
		kind = skippable(d, in, reads, kindbuf, sizeof(kindbuf), &wrote, &h, &why);
		if (!kind && !pos)
			return decide(po, 0, "+0: %s (single-stepped: %s)", text, why);
		if (!kind)
			return decide(po, 0, "+0: past %s comes %s, not emulated (%s)", past, text,
				      why);
		if (pos + in->size > PROBE_OFFSET_MAX_SKIP)
			return decide(po, 0, "+0: no emulated instruction within the first %d bytes",
				      PROBE_OFFSET_MAX_SKIP);
		n += (size_t)snprintf(past + n, sizeof(past) - n, "%s%s (%s)", pos ? ", " : "", text,
				      kind);
		/* a long list is cut, never written past */
		if (n >= sizeof(past))
			n = sizeof(past) - 1;
		wrote_all |= wrote;
		count++;
		pos += in->size;
	}
	if (!pos)
		return decide(po, 0, "+0: %s (emulated)", text);
	/* where each argument is now: in place if it still is there, else its first copy */
	for (a = 0, m = 0, where[0] = '\0'; a < PROBE_OFFSET_ARGS; a++) {
		po->args[a] = arg_regs[a];
		if (!(reads & PROBE_REG(arg_regs[a])) || h.of[arg_regs[a]] == arg_regs[a])
			continue;
		for (r = 0; r < 16 && h.of[r] != arg_regs[a]; r++)
			;
		po->args[a] = (uint8_t)r;
		m += (size_t)snprintf(where + m, m < sizeof(where) ? sizeof(where) - m : 0,
				      ", %%%s in %%%s", reg_names[arg_regs[a]], reg_names[r]);
	}
	/* jemalloc's free: too many to list, what they write says it */
	if (n + strlen(text) + strlen(where) + 40 >= sizeof(past)) {
		regs_text(wrote_all, regs, sizeof(regs));
		snprintf(past, sizeof(past), "%zu instructions writing only flags and %s", count,
			 regs);
	}
	decide(po, pos, "+%zu: past %s to %s (emulated%s)", pos, past, text, where);
	return 1;
}

/*
 * Moving the probe from +0 to +off is only invisible if nothing enters the
 * function at +1..+off: such an entry would hit the moved probe without a
 * call.  Decodes the whole function and checks every direct branch and
 * call target; an indirect jump (a jump table) could go anywhere.  Returns
 * true if clear, false with the +0 decision in po.
 */
static bool entries_clear(struct x86dec *d, struct probe_offset *po)
{
	uint64_t off = po->offset;
	const cs_insn *in;
	char text[96];
	size_t pos;

	for (pos = 0; pos < d->len; pos += in->size) {
		const cs_x86 *x;
		uint64_t to;

		in = x86dec__at(d, pos);
		if (!in) {
			decide(po, 0, "+0: cannot decode the function at +%zu, cannot prove", pos);
			return false;
		}
		/* xbegin names its abort handler like a branch target */
		if (!x86dec__in_group(in, CS_GRP_JUMP) && !x86dec__in_group(in, CS_GRP_CALL) &&
		    !x86dec__in_group(in, CS_GRP_BRANCH_RELATIVE) && in->id != X86_INS_XBEGIN)
			continue;
		x = &in->detail->x86;
		x86dec__text(in, text, sizeof(text));
		if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM) {
			/* an indirect call returns to the next instruction: only jumps matter */
			if (x86dec__in_group(in, CS_GRP_CALL))
				continue;
			decide(po, 0, "+0: indirect jump in function (%s at +%zu), cannot prove", text,
			       pos);
			return false;
		}
		to = (uint64_t)x->operands[0].imm;
		if (to > d->addr && to <= d->addr + off) {
			decide(po, 0, "+0: %s at +%zu enters the function at +%llu, cannot skip to +%llu",
			       text, pos, (unsigned long long)(to - d->addr), (unsigned long long)off);
			return false;
		}
	}
	return true;
}

bool probe_offset__size_checkable(uint64_t len, struct probe_offset *po)
{
	if (!len)
		decide(po, 0, "+0: function size unknown (symbol size 0), cannot prove");
	else if (len > PROBE_OFFSET_MAX_FUNC)
		decide(po, 0, "+0: function of %llu bytes too large to check",
		       (unsigned long long)len);
	return len && len <= PROBE_OFFSET_MAX_FUNC;
}

/* rbp, rbx, r12-r15 and rsp: what arch_copy_regs() and the frame-pointer walk read */
#define READS_STACK (PROBE_REG(3) | PROBE_REG(4) | PROBE_REG(5) | 0xf000U)
#define RDI PROBE_REG(7)
#define RSI PROBE_REG(6)
#define RDX PROBE_REG(2)

uint32_t probe_offset__reads(uint32_t fn)
{
	/*
	 * alloc_size() and the realloc/posix_memalign paths of handle_alloc()
	 * read no more than the arguments named here, free_enter() only %rdi;
	 * a program that comes to read another register must be named here.
	 */
	switch (fn) {
	case CULPERT_FN_MALLOC:
	case CULPERT_FN_PVALLOC:
	case CULPERT_FN_FREE:
		return READS_STACK | RDI;
	case CULPERT_FN_CALLOC:
	case CULPERT_FN_REALLOC:
	case CULPERT_FN_MEMALIGN:
		return READS_STACK | RDI | RSI;
	case CULPERT_FN_REALLOCARRAY:
	case CULPERT_FN_POSIX_MEMALIGN:
		return READS_STACK | RDI | RSI | RDX;
	}
	return PROBE_REGS_ALL;
}

uint32_t probe_offset__args_cookie(const struct probe_offset *po)
{
	uint32_t bits = 0;
	int a;

	for (a = 0; a < PROBE_OFFSET_ARGS; a++)
		bits |= (uint32_t)((po->args[a] ^ arg_regs[a]) & 0xf)
			<< (CULPERT_PROBE_ARG_SHIFT + CULPERT_PROBE_ARG_BITS * a);
	return bits;
}

const char *probe_offset__class_name(uint8_t insn_class)
{
	switch (insn_class) {
	case PROBE_INSN_EMULATED:
		return "emulated";
	case PROBE_INSN_OPTIMIZED:
		return "emulated, optimized";
	case PROBE_INSN_STEPPED:
		return "single-stepped";
	case PROBE_INSN_REJECTED:
		return "rejected";
	}
	return "unknown";
}

/*
 * The per-hit cost of each class, an empty BPF program on Linux 6.18 on
 * this project's 2-core test machine (tests/bench/insn_cost, the table of
 * docs/probe-offsets.md): a class, not a calibration of this machine.
 */
const char *probe_offset__cost_text(uint8_t insn_class)
{
	switch (insn_class) {
	case PROBE_INSN_EMULATED:
		return "~0.7 us a hit";
	case PROBE_INSN_OPTIMIZED:
		return "~0.5 us a hit";
	case PROBE_INSN_STEPPED:
		return "~10 us a hit";
	case PROBE_INSN_REJECTED:
		return "cannot be probed";
	}
	return "cost unknown";
}

/* the class of the instruction the probe ended on */
static uint8_t class_at(struct x86dec *d, uint64_t offset)
{
	const cs_insn *in = x86dec__at(d, offset);

	if (!in)
		return PROBE_INSN_UNKNOWN;
	/* the 5-byte nop of x86_nops[], which 6.18 turns into a call of the uprobe trampoline */
	if (in->size == 5 && !memcmp(in->bytes, "\x0f\x1f\x44\x00\x00", 5))
		return PROBE_INSN_OPTIMIZED;
	return probe_offset__emulated(in->bytes, in->size) ? PROBE_INSN_EMULATED :
							     PROBE_INSN_STEPPED;
}

int probe_offset__choose(const uint8_t *code, size_t len, uint64_t addr, uint32_t reads,
			 struct probe_offset *po)
{
	struct x86dec d;
	int err;

	if (!po || (!code && len))
		return -EINVAL;
	probe_offset__init(po);
	if (!size_checkable(len, po))
		return 0;
	err = x86dec__open(&d, code, len, addr);
	if (err == -ENOMEM)
		return err;
	if (err)
		return decide(po, 0, "+0: no x86-64 decoder available (capstone)");
	if (find_candidate(&d, reads, po) > 0)
		entries_clear(&d, po);
	po->insn_class = class_at(&d, po->offset);
	x86dec__close(&d);
	return 0;
}

int probe_offset__for_symbol(struct elfobj *obj, const struct elf_symbol *sym, uint32_t fn,
			     struct probe_offset *po)
{
	int machine = elfobj__machine(obj);
	uint8_t *code;
	long n;
	int err;

	probe_offset__init(po);
	if (machine != EM_X86_64 && machine != EM_AARCH64)
		return decide(po, 0, "+0: neither x86-64 nor arm64 code");
	if (!size_checkable(sym->size, po))
		return 0;
	code = malloc(sym->size);
	if (!code)
		return -ENOMEM;
	n = elfobj__read(obj, sym->value, code, sym->size);
	if (n != (long)sym->size)
		err = decide(po, 0, "+0: cannot read the function's %llu bytes of code",
			     (unsigned long long)sym->size);
	else
		err = machine == EM_AARCH64 ?
			      probe_offset__choose_arm64(code, sym->size, sym->value, po) :
			      probe_offset__choose(code, sym->size, sym->value,
						   probe_offset__reads(fn), po);
	free(code);
	if (!err)
		pr_debug("probe offset of %s: %s\n", sym->name, po->reason);
	return err;
}
