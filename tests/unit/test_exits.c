// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finding a function's return instructions (exits.c) on functions of this
 * test binary written in assembly, so that each shape is what it says:
 * several returns, a tail call into another function, a .cold part without
 * a symbol (found through its FDE), a tail call through the PLT to another
 * object, a jump table, no return at all.  Then operator new of this
 * machine's libstdc++, checked against objdump (an independent decoder).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "culpert.h"
#include "elfobj.h"
#include "exits.h"
#include "test.h"

#define EX_FN(name, body)                                                                   \
	"	.p2align 4\n	.globl " #name "\n	.type " #name ",@function\n" #name ":\n" \
	"	.cfi_startproc\n" body "\n	.cfi_endproc\n	.size " #name ",.-" #name "\n"

asm(".text\n"
	EX_FN(ex_one, "	ret")
	EX_FN(ex_two, "	test %rdi, %rdi\n	je 1f\n	mov $1, %eax\n	ret\n1:	xor %eax, %eax\n	ret")
	/* a tail call into another function of the object, and a jump back into ex_two's middle */
	EX_FN(ex_tail, "	test %rdi, %rdi\n	je ex_one\n	jmp ex_two")
	/* a hot part jumping to a cold part in another section, which has no symbol, only CFI */
	EX_FN(ex_hot, "	test %rdi, %rdi\n	jne ex_cold_part\n	ret")
	"	.section .text.unlikely,\"ax\",@progbits\n"
	"ex_cold_part:\n	.cfi_startproc\n	push %rbx\n	.cfi_def_cfa_offset 16\n"
	"	pop %rbx\n	.cfi_def_cfa_offset 8\n	ret\n	.cfi_endproc\n"
	"	.text\n"
	/* a tail call through the PLT to a function another object defines */
	EX_FN(ex_plt, "	test %rdi, %rdi\n	je 1f\n	jmp free@PLT\n1:	ret")
	/* a switch: the jump table's cases lie in the function */
	EX_FN(ex_switch, "	lea 1f(%rip), %rax\n	jmp *%rax\n1:	ret")
	/* never returns */
	EX_FN(ex_noret, "	ud2")
	/* two stretches behind one je: both exits move to it */
	EX_FN(ex_hoist, "	push %rbx\n	test %rdi, %rdi\n	je 1f\n	mov %rsi, %rax\n"
		"	pop %rbx\n	ret\n1:	xor %eax, %eax\n	pop %rbx\n	ret")
	/* a stretch entered from a call's return, and one whose stack pointer comes from leave */
	EX_FN(ex_stay, "	push %rbp\n	mov %rsp, %rbp\n	test %rdi, %rdi\n	je 1f\n"
		"	call ex_one\n	pop %rbp\n	ret\n1:	mov %rdx, %rax\n	leave\n	ret"));

/* at run time ex_plt's PLT entry must exist: refer to free from C too */
void *volatile keep_free = (void *)free;

static struct elfobj *self;

/* the exits of `name` in this binary, as virtual addresses relative to `name` */
static int find(const char *name, struct exits *e, uint64_t *rel, size_t max)
{
	const struct elf_symbol *sym = elfobj__sym_by_name(self, name);
	uint64_t vaddr;
	size_t i;

	if (!ASSERT_OK_PTR(sym, name) || !ASSERT_EQ(exits__find(self, sym->value, sym->size, false, e), 0,
						   "exits__find"))
		return -1;
	for (i = 0; i < e->n && i < max; i++) {
		elfobj__offset_to_vaddr(self, e->offsets[i], &vaddr);
		rel[i] = vaddr - sym->value;
	}
	return 0;
}

static uint64_t sym_addr(const char *name)
{
	const struct elf_symbol *sym = elfobj__sym_by_name(self, name);

	return sym ? sym->value : 0;
}

static void test_returns(void)
{
	struct exits e;
	uint64_t rel[EXITS_MAX];

	if (find("ex_one", &e, rel, EXITS_MAX))
		return;
	ASSERT_TRUE(e.complete, e.reason);
	ASSERT_EQ(e.n, 1, "ex_one: one ret");
	ASSERT_EQ(rel[0], 0, "at +0");
	if (find("ex_two", &e, rel, EXITS_MAX))
		return;
	ASSERT_TRUE(e.complete, e.reason);
	ASSERT_EQ(e.n, 2, "ex_two: two rets");
	/* test(3) je(2) mov(5) ret | xor(2) ret */
	ASSERT_EQ(rel[0], 10, "first ret");
	ASSERT_EQ(rel[1], 13, "second ret");
}

/* the returns of the functions a tail call reaches are the caller's */
static void test_tail_calls(void)
{
	struct exits e;
	uint64_t rel[EXITS_MAX], base = sym_addr("ex_tail");

	if (find("ex_tail", &e, rel, EXITS_MAX))
		return;
	ASSERT_TRUE(e.complete, e.reason);
	ASSERT_EQ(e.n, 3, "ex_one's ret and ex_two's two");
	ASSERT_EQ(e.regions, 3, "ex_tail, ex_one, ex_two");
	ASSERT_EQ(base + rel[0], sym_addr("ex_one"), "ex_one's ret");
	ASSERT_EQ(base + rel[1], sym_addr("ex_two") + 10, "ex_two's first ret");
}

static void test_cold_part(void)
{
	struct exits e;
	uint64_t rel[EXITS_MAX];

	if (find("ex_hot", &e, rel, EXITS_MAX))
		return;
	ASSERT_TRUE(e.complete, e.reason);
	ASSERT_EQ(e.regions, 2, "the hot part and the cold part's FDE");
	ASSERT_EQ(e.n, 2, "a ret in each");
}

/* free is libc's: listed for the caller to judge, not followed */
static void test_plt_tail(void)
{
	struct exits e;
	uint64_t rel[EXITS_MAX];

	if (find("ex_plt", &e, rel, EXITS_MAX))
		return;
	ASSERT_TRUE(e.complete, e.reason);
	ASSERT_EQ(e.n, 1, "its own ret");
	ASSERT_EQ(e.n_tails, 1, "one tail call out");
	ASSERT_STREQ(e.tails[0], "free", "through free's PLT entry");
}

static void test_switch_and_noreturn(void)
{
	struct exits e;
	uint64_t rel[EXITS_MAX];

	if (!find("ex_switch", &e, rel, EXITS_MAX)) {
		ASSERT_TRUE(e.complete, e.reason);
		ASSERT_EQ(e.n, 1, "the case's ret");
	}
	if (!find("ex_noret", &e, rel, EXITS_MAX)) {
		ASSERT_TRUE(!e.complete, "a function without a return is not complete");
		ASSERT_TRUE(strstr(e.reason, "no return") != NULL, e.reason);
	}
}

/*
 * libstdc++'s operator new: its return instructions are the `ret`s objdump
 * shows in _Znwm and in the code its jumps reach; _Znam jumps to _Znwm
 * through the PLT and has the same ones.
 */
static void test_libstdcxx_new(void)
{
	const char *lib = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	struct elfobj *obj = elfobj__open(lib);
	const struct elf_symbol *nw, *na;
	struct exits e, ea;
	char cmd[512], line[256];
	size_t n_obj = 0, i;
	FILE *p;

	if (!ASSERT_OK_PTR(obj, lib))
		return;
	nw = elfobj__sym_by_name(obj, "_Znwm");
	na = elfobj__sym_by_name(obj, "_Znam");
	if (!ASSERT_OK_PTR(nw, "_Znwm") || !ASSERT_OK_PTR(na, "_Znam") ||
	    !ASSERT_EQ(exits__find(obj, nw->value, nw->size, false, &e), 0, "_Znwm") ||
	    !ASSERT_EQ(exits__find(obj, na->value, na->size, false, &ea), 0, "_Znam"))
		goto out;
	ASSERT_TRUE(e.complete && ea.complete, e.complete ? ea.reason : e.reason);
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --start-address=%#llx "
		 "--stop-address=%#llx %s", (unsigned long long)nw->value,
		 (unsigned long long)(nw->value + nw->size), lib);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p))
		n_obj += strstr(line, "\tret") != NULL;
	if (p)
		pclose(p);
	ASSERT_TRUE(n_obj >= 1 && e.n >= n_obj, "at least _Znwm's own rets, as objdump shows them");
	ASSERT_EQ(ea.n, e.n, "_Znam: the same returns as _Znwm");
	for (i = 0; i < e.n && i < ea.n; i++)
		ASSERT_EQ(ea.offsets[i], e.offsets[i], "same offset");
out:
	elfobj__free(obj);
}

/* exits moved off ret: the je gets one probe, saying for each way where the result is */
static void test_hoisted(void)
{
	const struct elf_symbol *sym = elfobj__sym_by_name(self, "ex_hoist");
	uint64_t je_off, want;
	struct exits e;

	if (!ASSERT_OK_PTR(sym, "ex_hoist") ||
	    !ASSERT_EQ(exits__find(self, sym->value, sym->size, true, &e), 0, "exits__find"))
		return;
	ASSERT_TRUE(e.complete, e.reason);
	ASSERT_EQ(e.n, 0, "no exit left on a ret");
	if (!ASSERT_EQ(e.n_hoists, 1, "one probe, on the je"))
		return;
	elfobj__vaddr_to_offset(self, sym->value + 4, &je_off);
	ASSERT_EQ(e.hoists[0].offset, je_off, "at the je (push 1, test 3)");
	/* taken: xor, pop -> NULL, slot one word up; not taken: mov %rsi,%rax, pop */
	want = CULPERT_HOIST_CC(4) | CULPERT_HOIST_COND |
	       CULPERT_HOIST_TAKEN(CULPERT_HOIST_SPEC(1, CULPERT_REG_ZERO, 1)) |
	       CULPERT_HOIST_NOT_TAKEN(CULPERT_HOIST_SPEC(1, 6, 1));
	ASSERT_EQ(e.hoists[0].cookie, want, "the cookie of both ways");
}

/* what cannot be proven stays on the ret: after a call, after leave */
static void test_not_hoisted(void)
{
	const struct elf_symbol *sym = elfobj__sym_by_name(self, "ex_stay");
	struct exits e;

	if (!ASSERT_OK_PTR(sym, "ex_stay") ||
	    !ASSERT_EQ(exits__find(self, sym->value, sym->size, true, &e), 0, "exits__find"))
		return;
	ASSERT_TRUE(e.complete, e.reason);
	ASSERT_EQ(e.n, 2, "both exits stay on their rets");
	ASSERT_EQ(e.n_hoists, 0, "nothing hoisted");
}

int main(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	test_group = "unit/exits";
	if (n < 0)
		return 1;
	exe[n] = '\0';
	self = elfobj__open(exe);
	if (!self) {
		printf("FAIL unit/exits/open: cannot open %s\n", exe);
		return 1;
	}
	RUN_TEST(test_returns);
	RUN_TEST(test_tail_calls);
	RUN_TEST(test_cold_part);
	RUN_TEST(test_plt_tail);
	RUN_TEST(test_switch_and_noreturn);
	RUN_TEST(test_libstdcxx_new);
	RUN_TEST(test_hoisted);
	RUN_TEST(test_not_hoisted);
	elfobj__free(self);
	return TEST_EXIT();
}
