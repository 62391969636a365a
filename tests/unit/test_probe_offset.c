// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Probe offsets: every rule on synthetic code, then the allocator entry
 * points of this machine's libraries against an oracle built from
 * objdump -d (an independent decoder) and the kernel's emulation rules.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "culpert.h"
#include "elfobj.h"
#include "probe_offset_check.h"

#define BASE 0x1000

/* x86-64 encodings the tests are made of */
#define TEST_RDI	0x48, 0x85, 0xff		/* test %rdi,%rdi */
#define CMP_RSI_RDI	0x48, 0x39, 0xf7		/* cmp %rsi,%rdi */
#define TESTB_RDX	0xf6, 0x02, 0x01		/* testb $1,(%rdx) */
#define CMPB_RIP	0x80, 0x3d, 0x01, 0x02, 0x14, 0x00, 0x00	/* cmpb $0,0x140201(%rip) */
#define ENDBR64		0xf3, 0x0f, 0x1e, 0xfa
#define PUSH_RBP	0x55
#define PUSH_R12	0x41, 0x54
#define JE8(d)		0x74, (d)
#define JE32(d)		0x0f, 0x84, (d), 0x00, 0x00, 0x00
#define JMP8(d)		0xeb, (d)
#define RET		0xc3

/* probe_offset__choose() on the bytes given, loaded at BASE, for a program reading `reads` */
#define CHOOSE_R(po, reads, ...) ({                                                  \
	static const uint8_t ___c[] = { __VA_ARGS__ };                               \
	probe_offset__choose(___c, sizeof(___c), BASE, (reads), (po));               \
})
/* ... for malloc's program: %rdi and the stack */
#define MALLOC_READS probe_offset__reads(CULPERT_FN_MALLOC)
#define CHOOSE(po, ...) CHOOSE_R(po, MALLOC_READS, __VA_ARGS__)

static bool reason_has(const struct probe_offset *po, const char *want)
{
	if (strstr(po->reason, want))
		return true;
	printf("  reason \"%s\" lacks \"%s\"\n", po->reason, want);
	return false;
}

/* glibc free: test %rdi,%rdi; je; ... -> at the je, %rdi untouched */
static void test_past_test_to_jcc(void)
{
	struct probe_offset po;

	ASSERT_EQ(CHOOSE(&po, TEST_RDI, JE8(1), RET, RET), 0, "choose");
	ASSERT_EQ(po.offset, 3, "probe at the je");
	ASSERT_STREQ(po.reason, "+3: past testq %rdi,%rdi (flags only) to je 0x1006 (emulated)",
		     "reason");
	ASSERT_EQ(CHOOSE(&po, TEST_RDI, JE32(1), RET, RET), 0, "choose");
	ASSERT_EQ(po.offset, 3, "jcc rel32 too");
}

/* libstdc++'s operator new: endbr64; test %rdi,%rdi; mov $1,%eax; push %rbx */
static void test_past_return_register(void)
{
	struct probe_offset po;

	ASSERT_EQ(CHOOSE(&po, ENDBR64, TEST_RDI, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x53, RET), 0, "choose");
	ASSERT_EQ(po.offset, 12, "probe at the push");
	ASSERT_TRUE(reason_has(&po, "movl $1,%eax (writes %rax)"), "reason");
	/* into another register it is an argument (or callee-saved): stays */
	ASSERT_EQ(CHOOSE(&po, 0xbf, 0x01, 0x00, 0x00, 0x00, 0x53, RET), 0, "choose");
	ASSERT_EQ(po.offset, 0, "mov $1,%edi writes an argument");
}

/* glibc posix_memalign: cmpb $0,...(%rip); push %r12 */
static void test_past_rip_relative_cmp(void)
{
	struct probe_offset po;

	CHOOSE(&po, CMPB_RIP, PUSH_R12, 0x41, 0x5c, RET);
	ASSERT_EQ(po.offset, 7, "probe at the push");
	reason_has(&po, "+7: past cmpb $0,0x140201(%rip) (flags only) to pushq %r12 (emulated)");
}

static void test_chain_of_skippable(void)
{
	struct probe_offset po;

	CHOOSE(&po, ENDBR64, CMP_RSI_RDI, TESTB_RDX, JE8(0), PUSH_RBP, 0x5d, RET);
	ASSERT_EQ(po.offset, 10, "past endbr64, cmp and testb");
	reason_has(&po, "past endbr64 (no effect), cmpq %rsi,%rdi (flags only), "
			"testb $1,(%rdx) (flags only) to je");
	CHOOSE(&po, 0xa8, 0x01, 0x48, 0x83, 0xff, 0x10, JE8(0), RET);	/* testb $1,%al; cmp $16,%rdi */
	ASSERT_EQ(po.offset, 6, "test and cmp with immediates");
	CHOOSE(&po, ENDBR64, PUSH_RBP, 0x5d, RET);
	ASSERT_EQ(po.offset, 4, "endbr64 then push");
}

/* what the kernel emulates already stays at +0 */
static void test_first_instruction_emulated(void)
{
	struct probe_offset po;

	CHOOSE(&po, PUSH_RBP, 0x5d, RET);
	ASSERT_EQ(po.offset, 0, "push %rbp");
	ASSERT_STREQ(po.reason, "+0: pushq %rbp (emulated)", "reason");
	CHOOSE(&po, PUSH_R12, 0x41, 0x5c, RET);
	ASSERT_EQ(po.offset, 0, "push %r12");
	CHOOSE(&po, JMP8(0), RET);
	ASSERT_EQ(po.offset, 0, "jmp");
	reason_has(&po, "(emulated)");
	CHOOSE(&po, 0x90, RET);
	ASSERT_EQ(po.offset, 0, "nop");
	reason_has(&po, "(emulated)");
}

/* each nop of the kernel's x86_nops[] table, 0x90 behind 66/f3, and lookalikes */
static void test_kernel_nops(void)
{
	static const struct {
		uint8_t b[12];
		int n;
		bool emulated;
	} nops[] = {
		{ { 0x90 }, 1, true },
		{ { 0x66, 0x90 }, 2, true },
		{ { 0x0f, 0x1f, 0x00 }, 3, true },
		{ { 0x0f, 0x1f, 0x40, 0x00 }, 4, true },
		{ { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 5, true },
		{ { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 6, true },
		{ { 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 }, 7, true },
		{ { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 }, 8, true },
		{ { 0x66, 0x66, 0x90 }, 3, true },
		{ { 0xf3, 0x90 }, 2, true },				/* pause */
		/* cs prefix: the kernel refuses to probe it at all */
		{ { 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 }, 10, false },
		{ { 0x0f, 0x1f, 0x40, 0x01 }, 4, false },		/* nopl 1(%rax): not in the table */
		{ { 0x41, 0x90 }, 2, false },				/* xchg %eax,%r8d */
	};
	struct probe_offset po;
	uint8_t code[32];
	size_t i;

	for (i = 0; i < sizeof(nops) / sizeof(nops[0]); i++) {
		size_t n = 0;

		code[n++] = 0x48, code[n++] = 0x85, code[n++] = 0xff;
		memcpy(code + n, nops[i].b, nops[i].n);
		n += nops[i].n;
		code[n++] = 0xc3;
		ASSERT_EQ(probe_offset__choose(code, n, BASE, MALLOC_READS, &po), 0, "choose");
		if (!ASSERT_EQ(po.offset, nops[i].emulated ? 3 : 0, "nop after test"))
			printf("  nop #%zu: %s\n", i, po.reason);
	}
}

/* after the flag-only prefix: only an emulated instruction is worth moving to */
static void test_next_not_emulated(void)
{
	struct probe_offset po;

	CHOOSE(&po, TEST_RDI, 0x48, 0x89, 0xf7, RET);		/* mov %rsi,%rdi */
	ASSERT_EQ(po.offset, 0, "mov");
	reason_has(&po, "+0: past testq %rdi,%rdi (flags only) comes movq %rsi,%rdi, not emulated "
			"(overwrites the last copy of an argument the probe reads)");
	CHOOSE(&po, TEST_RDI, 0x48, 0x89, 0xf0, RET);		/* mov %rsi,%rax; ret */
	ASSERT_EQ(po.offset, 0, "register-only, but no emulated instruction after it");
	CHOOSE(&po, TEST_RDI, RET);
	ASSERT_EQ(po.offset, 0, "ret");
	CHOOSE(&po, TEST_RDI, 0xe3, 0x00, RET);			/* jrcxz */
	ASSERT_EQ(po.offset, 0, "jrcxz");
	CHOOSE(&po, TEST_RDI, 0x48, 0x50, 0x58, RET);		/* push %rax with REX.W */
	ASSERT_EQ(po.offset, 0, "push with a REX other than 41");
	CHOOSE(&po, TEST_RDI, 0x66, 0x0f, 0x84, 0x00, 0x00, RET);	/* jcc with 66 */
	ASSERT_EQ(po.offset, 0, "66-prefixed jcc");
	CHOOSE(&po, TEST_RDI, 0xff, 0xd0, RET);			/* call *%rax */
	ASSERT_EQ(po.offset, 0, "indirect call is single-stepped");
}

/* instructions that write anything but flags are never skipped */
static void test_writers_not_skipped(void)
{
	struct probe_offset po;

	CHOOSE(&po, 0x48, 0x21, 0xff, JE8(0), RET);		/* and %rdi,%rdi */
	ASSERT_EQ(po.offset, 0, "and writes its destination");
	reason_has(&po, "+0: andq %rdi,%rdi (single-stepped: overwrites the last copy of an "
			"argument the probe reads)");
	ASSERT_EQ(po.insn_class, PROBE_INSN_STEPPED, "left single-stepped");
	CHOOSE(&po, 0x48, 0x83, 0xec, 0x08, PUSH_RBP, RET);	/* sub $8,%rsp */
	ASSERT_EQ(po.offset, 0, "sub moves the stack pointer");
	CHOOSE(&po, 0xa6, JE8(0), RET);				/* cmpsb: moves rsi/rdi */
	ASSERT_EQ(po.offset, 0, "cmpsb");
	CHOOSE(&po, 0xf0, 0x48, 0x0f, 0xb1, 0x17, JE8(0), RET);	/* lock cmpxchg */
	ASSERT_EQ(po.offset, 0, "lock cmpxchg");
	CHOOSE(&po, 0xf6, 0x12, JE8(0), RET);			/* notb (%rdx): group 3 like test */
	ASSERT_EQ(po.offset, 0, "not writes memory");
	reason_has(&po, "stores to memory");
	CHOOSE(&po, 0x80, 0x2f, 0x01, JE8(0), RET);		/* subb $1,(%rdi): group 1 like cmp */
	ASSERT_EQ(po.offset, 0, "sub writes memory");
	CHOOSE(&po, 0x48, 0x0f, 0xa3, 0xf7, JE8(0), RET);	/* bt: flags only, but not test/cmp */
	ASSERT_EQ(po.offset, 0, "bt is not on the list");
	CHOOSE(&po, TEST_RDI, 0x48, 0x39, 0x37, 0x5f, PUSH_RBP, RET);	/* cmp then pop %rdi */
	ASSERT_EQ(po.offset, 0, "pop after cmp");
}

static void test_skip_limit(void)
{
	uint8_t code[PROBE_OFFSET_MAX_SKIP + 8];
	struct probe_offset po;
	size_t i;

	/* the most 2-byte instructions that fit, then a je: moved; one more: not */
	for (i = 0; i < PROBE_OFFSET_MAX_SKIP; i += 2)
		code[i] = 0x38, code[i + 1] = 0xc0;		/* cmp %al,%al */
	code[i] = 0x74, code[i + 1] = 0x00, code[i + 2] = 0xc3;
	ASSERT_EQ(probe_offset__choose(code, i + 3, BASE, MALLOC_READS, &po), 0, "choose");
	ASSERT_EQ(po.offset, PROBE_OFFSET_MAX_SKIP, "exactly the limit may be skipped");
	code[i] = 0x38, code[i + 1] = 0xc0;
	code[i + 2] = 0x74, code[i + 3] = 0x00, code[i + 4] = 0xc3;
	ASSERT_EQ(probe_offset__choose(code, i + 5, BASE, MALLOC_READS, &po), 0, "choose");
	ASSERT_EQ(po.offset, 0, "past the limit may not");
	reason_has(&po, "within the first 64 bytes");
}

/*
 * Debian's jemalloc 5.3 free: nine instructions writing %rax %rcx %rdx and
 * flags, loading from the GOT and the TLS block, then jne at +0x30 with
 * %rdi untouched.
 */
#define JE_FREE 0x48, 0x89, 0xf8, 0x48, 0x8b, 0x15, 0x0e, 0x53, 0x0a, 0x00, 0x48, 0x89, 0xf9,  \
	0x48, 0xc1, 0xe8, 0x1a, 0x48, 0x81, 0xe1, 0x00, 0x00, 0x00, 0xc0, 0x25, 0xf0, 0x00,    \
	0x00, 0x00, 0x64, 0x48, 0x03, 0x04, 0x25, 0x00, 0x00, 0x00, 0x00, 0x48, 0x01, 0xd0,    \
	0x48, 0x3b, 0x88, 0xb0, 0x01, 0x00, 0x00, 0x0f, 0x85, 0x01, 0x00, 0x00, 0x00, RET, RET

static void test_past_register_writes(void)
{
	uint32_t free_reads = probe_offset__reads(CULPERT_FN_FREE);
	struct probe_offset po;

	CHOOSE_R(&po, free_reads, JE_FREE);
	ASSERT_EQ(po.offset, 0x30, "jemalloc's free: at the jne");
	reason_has(&po, "+48: past 9 instructions writing only flags and %rax %rcx %rdx to jne");
	ASSERT_EQ(po.insn_class, PROBE_INSN_EMULATED, "emulated");
	/* a program that read %rdx (reallocarray's size) would see the GOT's word instead */
	CHOOSE_R(&po, probe_offset__reads(CULPERT_FN_REALLOCARRAY), JE_FREE);
	ASSERT_EQ(po.offset, 0, "not past a write to an argument it reads");
	reason_has(&po, "comes movq 0xa530e(%rip),%rdx, not emulated (overwrites the last copy of "
			"an argument the probe reads)");
	/* mov $0,%esi: free reads no %rsi, calloc does */
	CHOOSE_R(&po, free_reads, 0xbe, 0x00, 0x00, 0x00, 0x00, JE8(0), RET);
	ASSERT_EQ(po.offset, 5, "free: %rsi unread");
	CHOOSE_R(&po, probe_offset__reads(CULPERT_FN_CALLOC), 0xbe, 0x00, 0x00, 0x00, 0x00,
		 JE8(0), RET);
	ASSERT_EQ(po.offset, 0, "calloc: %rsi is its size");
	/* a load is no store: mov 0x10(%rdi),%rax; test %rax,%rax; je */
	CHOOSE(&po, 0x48, 0x8b, 0x47, 0x10, 0x48, 0x85, 0xc0, JE8(0), RET);
	ASSERT_EQ(po.offset, 7, "past a load");
	/* setne %al, movzbl %al,%eax, lea 7(%rdi),%rcx, shr $3,%rcx, cmovne %rdi,%r11 */
	CHOOSE(&po, 0x0f, 0x95, 0xc0, 0x0f, 0xb6, 0xc0, 0x48, 0x8d, 0x4f, 0x07, 0x48, 0xc1, 0xe9,
	       0x03, 0x4c, 0x0f, 0x45, 0xdf, JE8(0), RET);
	ASSERT_EQ(po.offset, 18, "the usual register-only instructions");
	reason_has(&po, "setne %al (writes %rax)");
	/* xor %ecx,%ecx then jmp: the tail call of jemalloc's rallocx */
	CHOOSE_R(&po, probe_offset__reads(CULPERT_FN_REALLOC), 0x31, 0xc9, JMP8(0), RET);
	ASSERT_EQ(po.offset, 2, "rallocx");
}

/* an argument copied away before its register is overwritten: the probe says where it went */
static void test_moved_arguments(void)
{
	struct probe_offset po;

	/* mimalloc's malloc: mov x(%rip),%rax; mov %rdi,%rsi; mov %fs:(%rax),%rdi; cmp; ja */
	CHOOSE(&po, 0x48, 0x8b, 0x05, 0x49, 0xb4, 0x00, 0x00, 0x48, 0x89, 0xfe, 0x64, 0x48, 0x8b,
	       0x38, 0x48, 0x81, 0xfe, 0x00, 0x04, 0x00, 0x00, 0x77, 0x00, RET);
	ASSERT_EQ(po.offset, 21, "at the ja");
	ASSERT_EQ(po.args[0], 6, "the size in %rsi");
	reason_has(&po, "to ja 0x1017 (emulated, %rdi in %rsi)");
	ASSERT_EQ(probe_offset__args_cookie(&po), (7U ^ 6U) << CULPERT_PROBE_ARG_SHIFT, "cookie");
	/* mimalloc's realloc: both arguments move, then a tail call */
	CHOOSE_R(&po, probe_offset__reads(CULPERT_FN_REALLOC), 0x48, 0x89, 0xf2, 0x48, 0x89, 0xfe,
		 0x48, 0x89, 0xc7, JMP8(0), RET);	/* mov %rsi,%rdx; mov %rdi,%rsi; mov %rax,%rdi */
	ASSERT_EQ(po.offset, 9, "at the jmp");
	ASSERT_EQ(po.args[0], 6, "the pointer in %rsi");
	ASSERT_EQ(po.args[1], 2, "the size in %rdx");
	ASSERT_EQ(po.args[2], 2, "an argument not read stays where the ABI has it");
	ASSERT_EQ(probe_offset__args_cookie(&po),
		  ((7U ^ 6U) << CULPERT_PROBE_ARG_SHIFT) | ((6U ^ 2U) << (CULPERT_PROBE_ARG_SHIFT + 4)),
		  "cookie");
	/* a 32-bit mov zero-extends: no copy of the 64-bit size */
	CHOOSE(&po, 0x89, 0xfe, 0x31, 0xff, JE8(0), RET);	/* mov %edi,%esi; xor %edi,%edi */
	ASSERT_EQ(po.offset, 0, "mov %edi,%esi is no copy");
	/* the copy overwritten in turn: the value is gone */
	CHOOSE(&po, 0x48, 0x89, 0xf8, 0x31, 0xff, 0x31, 0xc0, JE8(0), RET);
	ASSERT_EQ(po.offset, 0, "mov %rdi,%rax; xor %edi,%edi; xor %eax,%eax");
	/* never into a register a stack capture reads */
	CHOOSE(&po, 0x48, 0x89, 0xfb, 0x31, 0xff, JE8(0), RET);	/* mov %rdi,%rbx; xor */
	ASSERT_EQ(po.offset, 0, "mov %rdi,%rbx");
	/* a probe sent back to +0 by a branch into the range has the arguments in place */
	CHOOSE(&po, 0x48, 0x89, 0xfe, 0x31, 0xff, JE8(0), RET, JMP8(0xf8), RET);
	ASSERT_EQ(po.offset, 0, "a jump to +3");
	ASSERT_EQ(po.args[0], 7, "%rdi at +0");
	ASSERT_EQ(probe_offset__args_cookie(&po), 0, "no cookie bits");
}

/* what a stack capture or the return probe reads is never written past, whatever the kind */
static void test_stack_registers_not_skipped(void)
{
	uint32_t free_reads = probe_offset__reads(CULPERT_FN_FREE);
	struct probe_offset po;

	CHOOSE_R(&po, free_reads, 0x48, 0x89, 0xfb, JE8(0), RET);	/* mov %rdi,%rbx */
	ASSERT_EQ(po.offset, 0, "%rbx");
	CHOOSE_R(&po, free_reads, 0x48, 0x89, 0xe5, JE8(0), RET);	/* mov %rsp,%rbp */
	ASSERT_EQ(po.offset, 0, "%rbp");
	CHOOSE_R(&po, free_reads, 0x4d, 0x31, 0xe4, JE8(0), RET);	/* xor %r12,%r12 */
	ASSERT_EQ(po.offset, 0, "%r12");
	CHOOSE_R(&po, free_reads, 0x48, 0x8d, 0x64, 0x24, 0xf8, PUSH_RBP, RET); /* lea -8(%rsp),%rsp */
	ASSERT_EQ(po.offset, 0, "%rsp");
	CHOOSE_R(&po, free_reads, 0x48, 0x83, 0xec, 0x08, JE8(0), RET);	/* sub $8,%rsp */
	ASSERT_EQ(po.offset, 0, "sub $8,%rsp");
	/* an unknown kind reads everything: only flags-only instructions are passed */
	CHOOSE_R(&po, PROBE_REGS_ALL, 0x48, 0x89, 0xf8, JE8(0), RET);	/* mov %rdi,%rax */
	ASSERT_EQ(po.offset, 0, "all registers read");
	CHOOSE_R(&po, PROBE_REGS_ALL, TEST_RDI, JE8(0), RET);
	ASSERT_EQ(po.offset, 3, "flags only still");
	/* ... and its arguments are never looked for elsewhere: mov %rdi,%rsi; xor %edi,%edi */
	CHOOSE_R(&po, PROBE_REGS_ALL, 0x48, 0x89, 0xfe, 0x31, 0xff, JE8(0), RET);
	ASSERT_EQ(po.offset, 0, "no moved arguments for an unknown kind");
}

/* nothing that stores, touches non-general registers or has implicit effects */
static void test_memory_and_other_writes_not_skipped(void)
{
	uint32_t free_reads = probe_offset__reads(CULPERT_FN_FREE);
	struct probe_offset po;

	CHOOSE_R(&po, free_reads, 0x48, 0x89, 0x07, JE8(0), RET);	/* mov %rax,(%rdi) */
	ASSERT_EQ(po.offset, 0, "mov to memory");
	reason_has(&po, "stores to memory");
	CHOOSE_R(&po, free_reads, 0x48, 0x01, 0x07, JE8(0), RET);	/* add %rax,(%rdi) */
	ASSERT_EQ(po.offset, 0, "add to memory");
	CHOOSE_R(&po, free_reads, 0x48, 0x89, 0x44, 0x24, 0x08, JE8(0), RET); /* mov %rax,8(%rsp) */
	ASSERT_EQ(po.offset, 0, "store into the stack");
	CHOOSE_R(&po, free_reads, 0x0f, 0x95, 0x07, JE8(0), RET);	/* setne (%rdi) */
	ASSERT_EQ(po.offset, 0, "setcc to memory");
	CHOOSE_R(&po, free_reads, 0x66, 0x0f, 0xef, 0xc0, JE8(0), RET);	/* pxor %xmm0,%xmm0 */
	ASSERT_EQ(po.offset, 0, "a vector register");
	CHOOSE_R(&po, free_reads, 0x48, 0x87, 0x07, JE8(0), RET);	/* xchg %rax,(%rdi) */
	ASSERT_EQ(po.offset, 0, "xchg with memory");
	CHOOSE_R(&po, free_reads, 0xf0, 0x48, 0x0f, 0xc1, 0x07, JE8(0), RET); /* lock xadd */
	ASSERT_EQ(po.offset, 0, "lock xadd");
	CHOOSE_R(&po, free_reads, 0x58, JE8(0), RET);			/* pop %rax */
	ASSERT_EQ(po.offset, 0, "pop moves the stack pointer");
	CHOOSE_R(&po, free_reads, 0x48, 0xab, JE8(0), RET);		/* stos */
	ASSERT_EQ(po.offset, 0, "string store");
	CHOOSE_R(&po, free_reads, 0x0f, 0x05, JE8(0), RET);		/* syscall */
	ASSERT_EQ(po.offset, 0, "syscall");
	CHOOSE_R(&po, free_reads, 0x0f, 0x31, JE8(0), RET);		/* rdtsc: rax, rdx */
	ASSERT_EQ(po.offset, 0, "not on the list, though register-only");
}

/* a branch into the register-writing stretch, or a loop back into it */
static void test_branch_into_register_writes(void)
{
	uint32_t free_reads = probe_offset__reads(CULPERT_FN_FREE);
	struct probe_offset po;

	/* mov %rdi,%rax; mov %rdi,%rcx; jne +0; ret; jmp back to +3 */
	CHOOSE_R(&po, free_reads, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf9, 0x75, 0x00, RET,
		 JMP8(0xf8), RET);
	ASSERT_EQ(po.offset, 0, "a jump to +3");
	reason_has(&po, "enters the function at +3");
	/* the jne itself loops back to +3 */
	CHOOSE_R(&po, free_reads, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf9, 0x75, 0xfb, RET);
	ASSERT_EQ(po.offset, 0, "a loop back into the stretch");
	/* back to +0 passes the probe like a call: fine */
	CHOOSE_R(&po, free_reads, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf9, 0x75, 0xf8, RET);
	ASSERT_EQ(po.offset, 6, "a loop to +0");
}

/* what each kind's program reads, and the classes reported */
static void test_reads_and_classes(void)
{
	struct probe_offset po;

	ASSERT_EQ(probe_offset__reads(CULPERT_FN_FREE), 0xf0b8, "free: rdi and the stack");
	ASSERT_EQ(probe_offset__reads(CULPERT_FN_MALLOC), 0xf0b8, "malloc: rdi");
	ASSERT_EQ(probe_offset__reads(CULPERT_FN_CALLOC), 0xf0f8, "calloc: rdi rsi");
	ASSERT_EQ(probe_offset__reads(CULPERT_FN_MEMALIGN), 0xf0f8, "memalign: rdi rsi");
	ASSERT_EQ(probe_offset__reads(CULPERT_FN_POSIX_MEMALIGN), 0xf0fc, "posix_memalign");
	ASSERT_EQ(probe_offset__reads(CULPERT_FN_REALLOCARRAY), 0xf0fc, "reallocarray");
	ASSERT_EQ(probe_offset__reads(999), PROBE_REGS_ALL, "unknown: all");
	CHOOSE(&po, 0x0f, 0x1f, 0x44, 0x00, 0x00, RET);
	ASSERT_EQ(po.insn_class, PROBE_INSN_OPTIMIZED, "5-byte nop");
	ASSERT_STREQ(probe_offset__class_name(po.insn_class), "emulated, optimized", "its name");
	CHOOSE(&po, PUSH_RBP, RET);
	ASSERT_STREQ(probe_offset__class_name(po.insn_class), "emulated", "push");
	CHOOSE(&po, 0x48, 0x89, 0xf8, RET);
	ASSERT_STREQ(probe_offset__class_name(po.insn_class), "single-stepped", "mov; ret");
	ASSERT_STREQ(probe_offset__cost_text(PROBE_INSN_STEPPED), "~10 us a hit", "its cost");
}

/* a branch anywhere in the function into +1..+offset: the moved probe would fire without a call */
static void test_branch_into_skipped(void)
{
	struct probe_offset po;

	/* +3 je +5; +5 ret; +6 jmp back to +3 (the je itself) */
	CHOOSE(&po, TEST_RDI, JE8(0), RET, JMP8(0xfb), RET);
	ASSERT_EQ(po.offset, 0, "jump to the probe point");
	reason_has(&po, "jmp 0x1003 at +6 enters the function at +3, cannot skip to +3");
	/* into the middle of the test */
	CHOOSE(&po, TEST_RDI, JE8(0), RET, JMP8(0xf9), RET);
	ASSERT_EQ(po.offset, 0, "jump to +1");
	/* back to +0: runs the test again and hits the probe like a call would */
	CHOOSE(&po, TEST_RDI, JE8(0), RET, JMP8(0xf8), RET);
	ASSERT_EQ(po.offset, 3, "jump to +0 is fine");
	/* a call to +3 from the far end (rel32), and a jcc rel32 */
	CHOOSE(&po, TEST_RDI, JE8(0), RET, 0xe8, 0xf8, 0xff, 0xff, 0xff, RET);
	ASSERT_EQ(po.offset, 0, "call to the probe point");
	CHOOSE(&po, TEST_RDI, JE8(0), RET, 0x0f, 0x85, 0xf7, 0xff, 0xff, 0xff, RET);
	ASSERT_EQ(po.offset, 0, "jne rel32 to the probe point");
	/* just past the probe point is fine */
	CHOOSE(&po, TEST_RDI, JE8(0), RET, JMP8(0xfc), RET);
	ASSERT_EQ(po.offset, 3, "jump to +4 (past the probe) is fine");
}

static void test_indirect_jump(void)
{
	struct probe_offset po;

	CHOOSE(&po, TEST_RDI, JE8(2), 0xff, 0xe0, RET);	/* jmp *%rax */
	ASSERT_EQ(po.offset, 0, "jump table");
	reason_has(&po, "+0: indirect jump in function (jmpq *%rax at +5), cannot prove");
	CHOOSE(&po, TEST_RDI, JE8(2), 0x3e, 0xff, 0xe0, RET);	/* notrack jmp *%rax */
	ASSERT_EQ(po.offset, 0, "notrack jump");
	CHOOSE(&po, TEST_RDI, JE8(0), 0xff, 0x25, 0, 0, 0, 0);	/* jmp *0(%rip): a tail call */
	ASSERT_EQ(po.offset, 0, "jump through memory");
	CHOOSE(&po, TEST_RDI, JE8(0), 0xff, 0xd0, RET);	/* call *%rax returns here */
	ASSERT_EQ(po.offset, 3, "an indirect call is no entry");
}

static void test_truncated(void)
{
	struct probe_offset po;

	CHOOSE(&po, 0x48, 0x85);
	ASSERT_EQ(po.offset, 0, "half a test");
	reason_has(&po, "+0: cannot decode the instruction at +0");
	CHOOSE(&po, TEST_RDI, 0x0f, 0x84, 0x00);
	ASSERT_EQ(po.offset, 0, "half a je");
	reason_has(&po, "cannot decode the instruction at +3");
	/* the prefix is fine, the function's end is cut: nothing proves the rest */
	CHOOSE(&po, TEST_RDI, JE8(0), RET, 0xe8, 0x00);
	ASSERT_EQ(po.offset, 0, "cut in the last instruction");
	reason_has(&po, "cannot decode the function at +6, cannot prove");
}

static void test_bad_input(void)
{
	static const uint8_t garbage[] = { 0x06, 0x07, 0x27 };	/* invalid in 64-bit mode */
	struct probe_offset po;
	uint8_t *big;

	ASSERT_EQ(probe_offset__choose(garbage, sizeof(garbage), BASE, MALLOC_READS, &po), 0, "garbage");
	ASSERT_EQ(po.offset, 0, "garbage stays at +0");
	reason_has(&po, "cannot decode");
	ASSERT_EQ(probe_offset__choose(garbage, 0, BASE, MALLOC_READS, &po), 0, "empty");
	ASSERT_EQ(po.offset, 0, "empty");
	reason_has(&po, "symbol size 0");
	ASSERT_EQ(probe_offset__choose(NULL, 5, BASE, MALLOC_READS, &po), -EINVAL, "no code");
	ASSERT_EQ(probe_offset__choose(garbage, 3, BASE, MALLOC_READS, NULL), -EINVAL,
		  "nowhere to answer");
	big = malloc(PROBE_OFFSET_MAX_FUNC + 1);
	if (!ASSERT_OK_PTR(big, "malloc"))
		return;
	memset(big, 0x90, PROBE_OFFSET_MAX_FUNC + 1);
	ASSERT_EQ(probe_offset__choose(big, PROBE_OFFSET_MAX_FUNC + 1, BASE, MALLOC_READS, &po), 0,
		  "huge");
	reason_has(&po, "too large");
	free(big);
}

/*
 * Random bytes, alone and behind a valid test: never a crash, never past
 * the skip limit, and a moved probe's reason names where it went.
 */
static void test_random_bytes(void)
{
	unsigned int seed = 12345;
	struct probe_offset po;
	uint8_t code[80];
	int i, moved = 0;

	for (i = 0; i < 20000; i++) {
		size_t n = 1 + (size_t)rand_r(&seed) % sizeof(code), j, from = 0;

		if (i & 1) {
			code[0] = 0x48, code[1] = 0x85, code[2] = 0xff;
			from = 3;
		}
		for (j = from; j < n; j++)
			code[j] = (uint8_t)rand_r(&seed);
		if (!ASSERT_EQ(probe_offset__choose(code, n, BASE, MALLOC_READS, &po), 0, "choose") ||
		    !decision_sane(&po, n, 1))
			return;
		moved += po.offset > 0;
	}
	/* the generator reaches the interesting path too */
	ASSERT_TRUE(moved > 0, "some random functions got a moved probe");
}

/* --- real libraries against objdump ---------------------------------------------------------- */

struct od_insn {
	uint64_t addr;
	uint8_t b[16];
	int len;
	char mnem[32];
	char ops[160];
};

/* objdump -d -w of [lo, hi) of `path`; count in *n */
static struct od_insn *objdump(const char *path, uint64_t lo, uint64_t hi, size_t *n)
{
	struct od_insn *v = NULL, *in;
	size_t cap = 0;
	char cmd[4200], line[1024];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump -d -w --start-address=0x%llx --stop-address=0x%llx '%s'",
		 (unsigned long long)lo, (unsigned long long)hi, path);
	f = popen(cmd, "r");
	*n = 0;
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char *bytes, *text, *p;
		unsigned long long a;

		/* "   98ef0:\t48 85 ff   \ttest   %rdi,%rdi" */
		if (sscanf(line, " %llx:", &a) != 1 || !(bytes = strchr(line, '\t')) ||
		    !(text = strchr(bytes + 1, '\t')))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
		}
		in = &v[(*n)++];
		memset(in, 0, sizeof(*in));
		in->addr = a;
		for (p = bytes + 1; p < text && in->len < 16;) {
			unsigned int x;
			int used;

			if (sscanf(p, "%2x%n", &x, &used) != 1)
				break;
			in->b[in->len++] = (uint8_t)x;
			p += used;
			while (*p == ' ')
				p++;
		}
		sscanf(text + 1, "%31s %159[^\n]", in->mnem, in->ops);
	}
	pclose(f);
	return v;
}

/* the kernel's rules again, in objdump's words, written apart from the code under test */
static bool od_emulated(const struct od_insn *i)
{
	static const char *const nops[] = { "", "90", "6690", "0f1f00", "0f1f4000", "0f1f440000",
					    "660f1f440000", "0f1f8000000000", "0f1f840000000000" };
	char hex[40] = "";
	int k;

	for (k = 0; k < i->len && k < 16; k++)
		sprintf(hex + 2 * k, "%02x", i->b[k]);
	if (!strcmp(i->mnem, "push") && i->ops[0] == '%')
		return i->len == 1 || (i->len == 2 && i->b[0] == 0x41);
	if ((i->mnem[0] == 'j' || !strcmp(i->mnem, "call")) && i->ops[0] != '*')
		return (i->len == 2 && (i->b[0] == 0xeb || (i->b[0] & 0xf0) == 0x70)) ||
		       (i->len == 5 && (i->b[0] == 0xe8 || i->b[0] == 0xe9)) ||
		       (i->len == 6 && i->b[0] == 0x0f && (i->b[1] & 0xf0) == 0x80);
	return i->len <= 8 && !strcmp(hex, nops[i->len]);
}

/* objdump's name of a general-purpose register, any width, to its number; -1 if none */
static int od_gpr(const char *r)
{
	static const char *const names[16][4] = {
		{ "rax", "eax", "ax", "al" }, { "rcx", "ecx", "cx", "cl" },
		{ "rdx", "edx", "dx", "dl" }, { "rbx", "ebx", "bx", "bl" },
		{ "rsp", "esp", "sp", "spl" }, { "rbp", "ebp", "bp", "bpl" },
		{ "rsi", "esi", "si", "sil" }, { "rdi", "edi", "di", "dil" },
	};
	char *end;
	long n;
	int g, w;

	if (*r++ != '%')
		return -1;
	for (g = 0; g < 8; g++)
		for (w = 0; w < 4; w++)
			if (!strcmp(r, names[g][w]))
				return g;
	if (!strcmp(r, "ah") || !strcmp(r, "ch") || !strcmp(r, "dh") || !strcmp(r, "bh"))
		return r[0] == 'a' ? 0 : r[0] == 'c' ? 1 : r[0] == 'd' ? 2 : 3;
	if (r[0] != 'r')
		return -1;
	n = strtol(r + 1, &end, 10);
	if (n < 8 || n > 15 || (*end && strcmp(end, "d") && strcmp(end, "w") && strcmp(end, "b")))
		return -1;
	return (int)n;
}

/* does objdump's mnemonic name one of the register-only operations (any size suffix)? */
static bool od_register_op(const char *m)
{
	static const char *const ops[] = { "mov", "movabs", "lea", "add", "sub", "and", "or", "xor",
		"adc", "sbb", "inc", "dec", "neg", "not", "shl", "shr", "sar", "rol", "ror", "imul" };
	char base[32];
	size_t k, n = strlen(m);

	if (!strncmp(m, "movz", 4) || !strncmp(m, "movs", 4) || !strncmp(m, "cmov", 4) ||
	    !strncmp(m, "set", 3))
		return strcmp(m, "movsb") && strcmp(m, "movsw") && strcmp(m, "movsl") &&
		       strcmp(m, "movsq") && strcmp(m, "movs");
	snprintf(base, sizeof(base), "%s", m);
	for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		if (!strcmp(base, ops[k]))
			return true;
		if (n == strlen(ops[k]) + 1 && !strncmp(base, ops[k], n - 1) && strchr("bwlq", m[n - 1]))
			return true;
	}
	return false;
}

/* all 64 bits of a general-purpose register: %rax .. %rdi, %r8 .. %r15 */
static bool od_whole(const char *r)
{
	size_t n = strlen(r);

	if (n < 3 || r[0] != '%' || r[1] != 'r' || od_gpr(r) < 0)
		return false;
	return (r[2] >= '0' && r[2] <= '9') ? (r[n - 1] >= '0' && r[n - 1] <= '9') : n == 4;
}

/* which register's entry value each register holds, -1 once overwritten (the oracle's) */
struct od_holds {
	int of[16];
};

/* the entry values of the argument registers read (rdi, rsi, rdx) are all still somewhere */
static bool od_args_kept(const struct od_holds *h, uint32_t reads)
{
	static const int args[] = { 7, 6, 2 };
	int a, r;

	for (a = 0; a < 3; a++) {
		for (r = 0; r < 16 && h->of[r] != args[a]; r++)
			;
		if ((reads & (1U << args[a])) && r == 16)
			return false;
	}
	return true;
}

/* mov %r64,%r64 copies; any other write clobbers; false when it may not be passed */
static bool od_step(const struct od_insn *i, uint32_t reads, struct od_holds *h)
{
	struct od_holds was = *h;
	char ops[160], *comma;
	int d, s = -1;

	if (!strncmp(i->mnem, "test", 4) || !strncmp(i->mnem, "cmp", 3) ||
	    !strcmp(i->mnem, "endbr64"))
		return true;
	snprintf(ops, sizeof(ops), "%s", i->ops);
	ops[strcspn(ops, " ")] = '\0';
	if (!strcmp(i->mnem, "mul") || !strcmp(i->mnem, "mulq")) {
		h->of[0] = h->of[2] = -1;
		d = 0;
	} else {
		comma = strrchr(ops, ',');
		d = od_gpr(comma ? comma + 1 : ops);
		if (d < 0)
			return true;	/* flags only: test, cmp, endbr64 */
		if (comma && (!strcmp(i->mnem, "mov") || !strcmp(i->mnem, "movq")) &&
		    od_whole(comma + 1)) {
			*comma = '\0';
			s = od_whole(ops) ? od_gpr(ops) : -1;
		}
		h->of[d] = s >= 0 ? was.of[s] : -1;
	}
	if (((1U << d) & reads & ~0xc4U) || !od_args_kept(h, reads)) {
		*h = was;
		return false;
	}
	return true;
}

static bool od_skippable(const struct od_insn *i, uint32_t reads)
{
	static const char *const ok[] = { "test", "testb", "testw", "testl", "testq",
					  "cmp", "cmpb", "cmpw", "cmpl", "cmpq", "endbr64" };
	char ops[160], *dst;
	size_t k;
	int g;

	for (k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
		if (!strcmp(i->mnem, ok[k]))
			return !strstr(i->ops, "lock");
	/* "0xa530e(%rip),%rdx        # ccf78 <...>": objdump's comment goes */
	if (!strncmp(i->mnem, "test", 4) || !strncmp(i->mnem, "cmp", 3) ||
	    !strcmp(i->mnem, "endbr64"))
		return true;
	snprintf(ops, sizeof(ops), "%s", i->ops);
	ops[strcspn(ops, " ")] = '\0';
	if (!strcmp(i->mnem, "mul") || !strcmp(i->mnem, "mulq"))
		return !(reads & 0x5) && ops[0] == '%';
	if (!od_register_op(i->mnem))
		return false;
	/* AT&T: the destination is the last operand, a register or it is a store */
	dst = strrchr(ops, ',');
	dst = dst ? dst + 1 : ops;
	g = od_gpr(dst);
	/* argument registers: od_step() decides whether their values survive */
	return g >= 0 && !(reads & ~0xc4U & (1U << g));
}

/* the expected offset of the function objdump printed: -1 when objdump cannot decode it */
static long od_expect(const struct od_insn *v, size_t n, uint64_t start, uint32_t reads)
{
	struct od_holds h;
	uint64_t off = 0;
	size_t i, k;

	for (k = 0; k < 16; k++)
		h.of[k] = (int)k;
	for (i = 0; i < n && !od_emulated(&v[i]); i++)
		if (!od_skippable(&v[i], reads) || !od_step(&v[i], reads, &h) ||
		    v[i].addr + v[i].len - start > PROBE_OFFSET_MAX_SKIP)
			return 0;
	if (i == n)
		return 0;
	off = v[i].addr - start;
	for (k = 0; off && k < n; k++) {
		unsigned long long to;

		if (!strcmp(v[k].mnem, "(bad)"))
			return -1;
		if (v[k].mnem[0] != 'j' && strcmp(v[k].mnem, "call") && strcmp(v[k].mnem, "xbegin"))
			continue;
		if (v[k].ops[0] == '*')
			return v[k].mnem[0] == 'j' ? 0 : (long)off;
		if (sscanf(v[k].ops, "%llx", &to) == 1 && to > start && to <= start + off)
			return 0;
	}
	return (long)off;
}

/* the entry point kind of the names the tests below look at, as allocator.c's tables say */
static uint32_t kind_of(const char *name)
{
	static const struct { const char *name; uint32_t fn; } kinds[] = {
		{ "free", CULPERT_FN_FREE }, { "sdallocx", CULPERT_FN_FREE },
		{ "dallocx", CULPERT_FN_FREE }, { "mi_free", CULPERT_FN_FREE },
		{ "tc_free", CULPERT_FN_FREE }, { "_ZdlPv", CULPERT_FN_FREE },
		{ "_ZdlPvm", CULPERT_FN_FREE }, { "calloc", CULPERT_FN_CALLOC },
		{ "mi_calloc", CULPERT_FN_CALLOC }, { "tc_calloc", CULPERT_FN_CALLOC },
		{ "realloc", CULPERT_FN_REALLOC }, { "rallocx", CULPERT_FN_REALLOC },
		{ "mi_realloc", CULPERT_FN_REALLOC }, { "tc_realloc", CULPERT_FN_REALLOC },
		{ "reallocarray", CULPERT_FN_REALLOCARRAY },
		{ "posix_memalign", CULPERT_FN_POSIX_MEMALIGN },
		{ "tc_posix_memalign", CULPERT_FN_POSIX_MEMALIGN },
		{ "aligned_alloc", CULPERT_FN_MEMALIGN }, { "memalign", CULPERT_FN_MEMALIGN },
		{ "tc_memalign", CULPERT_FN_MEMALIGN }, { "pvalloc", CULPERT_FN_PVALLOC },
		/* xallocx(ptr, size, extra, flags) is no entry point: all its arguments */
		{ "xallocx", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, name))
			return kinds[i].fn;
	return CULPERT_FN_MALLOC;
}

/* every listed entry point of `path`: the chooser agrees with objdump; returns moved probes */
static int check_library(const char *path, const char *const *names)
{
	struct elfobj *obj = elfobj__open(path);
	int moved = 0;

	if (!ASSERT_OK_PTR(obj, path))
		return 0;
	for (; *names; names++) {
		const struct elf_symbol *s = elfobj__sym_by_name(obj, *names);
		struct probe_offset po;
		struct od_insn *v;
		size_t n;
		long want;

		if (!s)
			continue;
		if (!ASSERT_EQ(probe_offset__for_symbol(obj, s, kind_of(*names), &po), 0, *names))
			continue;
		v = objdump(path, s->value, s->value + s->size, &n);
		if (!ASSERT_TRUE(v && n > 0, "objdump -d printed the function"))
			continue;
		want = od_expect(v, n, s->value, probe_offset__reads(kind_of(*names)));
		if (want < 0) {
			/* objdump cannot decode it either: only +0 is acceptable */
			want = 0;
		}
		if (!ASSERT_EQ(po.offset, want, *names))
			printf("  %s %s: chooser says \"%s\"; objdump starts \"%s %s\"\n", path,
			       *names, po.reason, v[0].mnem, v[0].ops);
		moved += po.offset > 0;
		free(v);
	}
	elfobj__free(obj);
	return moved;
}

static const char *libc_path(void)
{
	static char path[4096];
	char line[4352];
	FILE *f = fopen("/proc/self/maps", "r");

	path[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "/libc.so.6") && sscanf(line, "%*s %*s %*s %*s %*s %4095s", path) == 1)
			break;
	if (f)
		fclose(f);
	return path;
}

static const char *const libc_entries[] = { "malloc", "calloc", "realloc", "reallocarray",
	"free", "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", NULL };

/*
 * This machine's glibc: the oracle must agree on every entry point, and
 * the whole exercise must move at least free's probe (glibc 2.36 starts
 * free with test %rdi,%rdi; je).
 */
static void test_glibc_entry_points(void)
{
	const char *libc = libc_path();
	const char *const only_free[] = { "free", NULL };

	if (!ASSERT_TRUE(libc[0], "libc.so.6 mapped"))
		return;
	ASSERT_TRUE(check_library(libc, libc_entries) > 0, "some glibc entry point moved");
	ASSERT_EQ(check_library(libc, only_free), 1, "free's probe moved");
}

/* the other allocators Debian ships (installed by make deps) */
static void test_other_allocators(void)
{
	static const char *const names[] = { "malloc", "calloc", "realloc", "free",
		"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", "mallocx",
		"rallocx", "xallocx", "sdallocx", "dallocx", "mi_malloc", "mi_calloc", "mi_realloc",
		"mi_free", "mi_malloc_aligned", "mi_zalloc", "tc_malloc", "tc_free", "tc_calloc",
		"tc_realloc", "tc_memalign", "tc_posix_memalign", "_Znwm", "_ZdlPv", "_ZdlPvm",
		"_Znam", "_ZnwmRKSt9nothrow_t", "_ZnwmSt11align_val_t", NULL };
	static const char *const libs[] = {
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
		"/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
		"/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
	};
	size_t i;

	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (ASSERT_TRUE(access(libs[i], R_OK) == 0, libs[i]))
			check_library(libs[i], names);
}

int main(void)
{
	test_group = "unit/probe_offset";
	RUN_TEST(test_past_test_to_jcc);
	RUN_TEST(test_past_rip_relative_cmp);
	RUN_TEST(test_past_return_register);
	RUN_TEST(test_chain_of_skippable);
	RUN_TEST(test_first_instruction_emulated);
	RUN_TEST(test_kernel_nops);
	RUN_TEST(test_next_not_emulated);
	RUN_TEST(test_writers_not_skipped);
	RUN_TEST(test_skip_limit);
	RUN_TEST(test_past_register_writes);
	RUN_TEST(test_moved_arguments);
	RUN_TEST(test_stack_registers_not_skipped);
	RUN_TEST(test_memory_and_other_writes_not_skipped);
	RUN_TEST(test_branch_into_register_writes);
	RUN_TEST(test_reads_and_classes);
	RUN_TEST(test_branch_into_skipped);
	RUN_TEST(test_indirect_jump);
	RUN_TEST(test_truncated);
	RUN_TEST(test_bad_input);
	RUN_TEST(test_random_bytes);
	RUN_TEST(test_glibc_entry_points);
	RUN_TEST(test_other_allocators);
	return TEST_EXIT();
}
