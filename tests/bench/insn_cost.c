// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bench tool: what one uprobe hit costs on this kernel depending on the
 * instruction it sits on -- the ones arch/x86/kernel/uprobes.c emulates
 * against the ones it single-steps -- next to what probe_offset chooses for
 * the same function.  Attaches the empty floor program to small functions
 * of its own, one at a time, at +0 and at the chosen offset.
 *
 *   insn_cost [CALLS [ROUNDS]]     (root)
 */
#include <bpf/libbpf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#include "culpert.h"
#include "elfobj.h"
#include "floor.skel.h"
#include "kfeatures.h"
#include "probe_offset.h"
#include "uprobe.h"

#define IC_FN(name, body)                                                            \
	"	.p2align 4\n	.globl " #name "\n	.type " #name ",@function\n"  \
	#name ":\n" body "\n	.size " #name ",.-" #name "\n"

/* each starts with the instruction under test; noinline C could not promise that */
asm(".text\n"
	IC_FN(ic_push_rbp, "push %rbp\n pop %rbp\n ret")
	IC_FN(ic_push_r12, "push %r12\n pop %r12\n ret")
	IC_FN(ic_jmp, "jmp 1f\n1: ret")
	IC_FN(ic_call, "call ic_leaf\n ret")
	IC_FN(ic_leaf, "ret")
	IC_FN(ic_nop, "nop\n ret")
	IC_FN(ic_nop5, ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n ret")
	IC_FN(ic_mov, "mov %rdi, %rax\n ret")
	IC_FN(ic_endbr64_push, "endbr64\n push %rbp\n pop %rbp\n ret")
	IC_FN(ic_test_je, "test %rdi, %rdi\n je 1f\n1: ret")
	IC_FN(ic_cmp_rip_push, "cmpb $0, ic_flag(%rip)\n push %rbx\n pop %rbx\n ret")
	IC_FN(ic_regs_jne, "mov %rdi, %rax\n mov ic_flag(%rip), %rdx\n shr $4, %rax\n"
			   " cmp %rax, %rdx\n jne 1f\n1: ret")
	".data\nic_flag: .byte 0\n.text\n");

void ic_push_rbp(long), ic_push_r12(long), ic_jmp(long), ic_call(long), ic_nop(long),
	ic_nop5(long), ic_mov(long), ic_endbr64_push(long), ic_test_je(long),
	ic_cmp_rip_push(long), ic_regs_jne(long);

static const struct {
	const char *name;
	void (*fn)(long);
} fns[] = {
	{ "ic_push_rbp", ic_push_rbp }, { "ic_push_r12", ic_push_r12 }, { "ic_jmp", ic_jmp },
	{ "ic_call", ic_call }, { "ic_nop", ic_nop }, { "ic_nop5", ic_nop5 },
	{ "ic_mov", ic_mov }, { "ic_endbr64_push", ic_endbr64_push },
	{ "ic_test_je", ic_test_je }, { "ic_cmp_rip_push", ic_cmp_rip_push },
	{ "ic_regs_jne", ic_regs_jne },
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double time_calls(void (*fn)(long), long calls)
{
	void (*volatile call)(long) = fn;
	double t0 = now_ns();
	long i;

	for (i = 0; i < calls; i++)
		call(1);
	return (now_ns() - t0) / (double)calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* median ns per call of fn with a probe at file offset `off` (UINT64_MAX: no probe) */
static double cost(struct floor_bpf *skel, enum uprobe_mode mode, const char *exe, uint64_t off,
		   void (*fn)(long), long calls, int rounds)
{
	double v[32];
	int r;

	for (r = 0; r < rounds && r < 32; r++) {
		struct uprobe_set *set = uprobe_set__new();

		if (!set || (off != UINT64_MAX && uprobe_set__attach(set, mode, skel->progs.floor_enter,
								     exe, &off, NULL, 1, getpid(), 0))) {
			uprobe_set__free(set);
			return -1;
		}
		v[r] = time_calls(fn, calls);
		uprobe_set__free(set);
	}
	qsort(v, (size_t)r, sizeof(v[0]), cmp_double);
	return v[r / 2];
}

int main(int argc, char **argv)
{
	enum uprobe_mode mode = features__get()->uprobe_multi ? UPROBE_MODE_MULTI : UPROBE_MODE_PERF;
	long calls = argc > 1 ? atol(argv[1]) : 20000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	struct floor_bpf *skel;
	struct elfobj *obj;
	char exe[PATH_MAX];
	ssize_t n;
	size_t i;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0 || calls <= 0 || rounds <= 0)
		return 2;
	exe[n] = '\0';
	obj = elfobj__open(exe);
	skel = floor_bpf__open();
	if (!obj || !skel)
		return 1;
	bpf_program__set_expected_attach_type(skel->progs.floor_enter,
					      uprobe_mode__attach_type(mode));
	if (floor_bpf__load(skel)) {
		fprintf(stderr, "insn_cost: cannot load the BPF program (root?)\n");
		return 1;
	}
	printf("  %-16s %9s %9s %9s   %s\n", "function", "bare ns", "+0 ns", "chosen ns",
	       "probe_offset's choice");
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		const struct elf_symbol *sym = elfobj__sym_by_name(obj, fns[i].name);
		struct probe_offset po;
		double bare, zero, chosen;
		uint64_t off;

		if (!sym || elfobj__vaddr_to_offset(obj, sym->value, &off) ||
		    probe_offset__for_symbol(obj, sym, CULPERT_FN_FREE, &po))
			return 1;
		bare = cost(skel, mode, exe, UINT64_MAX, fns[i].fn, calls, rounds);
		zero = cost(skel, mode, exe, off, fns[i].fn, calls, rounds);
		chosen = po.offset ? cost(skel, mode, exe, off + po.offset, fns[i].fn, calls, rounds)
				   : zero;
		printf("  %-16s %9.1f %9.1f %9.1f   %s\n", fns[i].name, bare, zero, chosen, po.reason);
	}
	floor_bpf__destroy(skel);
	elfobj__free(obj);
	return 0;
}
