// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* USDT argument specs as <bpf/usdt.bpf.h> reads them (user/collect/usdt_link.c). */
#include <stddef.h>
#if defined(__x86_64__)
#include <asm/ptrace.h>
#endif

#include "test.h"
#include "usdt_link.h"

enum { CONST, REG, REG_DEREF };

static bool parse(const char *s, struct usdt_arg_spec *a)
{
	return usdt_parse_arg(s, strlen(s), a) == 0;
}

#if defined(__x86_64__)
static void test_registers(void)
{
	struct usdt_arg_spec a;

	ASSERT_TRUE(parse("8@%rax", &a), "8@%rax");
	ASSERT_EQ(a.arg_type, REG, "a register");
	ASSERT_EQ(a.reg_off, offsetof(struct pt_regs, rax), "rax");
	ASSERT_EQ(a.arg_bitshift, 0, "8 bytes: no shift");
	ASSERT_TRUE(!a.arg_signed, "unsigned");
	ASSERT_TRUE(parse("-4@%edi", &a), "-4@%edi");
	ASSERT_EQ(a.reg_off, offsetof(struct pt_regs, rdi), "edi is rdi");
	ASSERT_EQ(a.arg_bitshift, 32, "4 bytes");
	ASSERT_TRUE(a.arg_signed, "signed");
	ASSERT_TRUE(parse("2@%r12w", &a) && a.reg_off == offsetof(struct pt_regs, r12) &&
		    a.arg_bitshift == 48, "2@%r12w");
	ASSERT_TRUE(parse("1@%sil", &a) && a.reg_off == offsetof(struct pt_regs, rsi) &&
		    a.arg_bitshift == 56, "1@%sil");
}

static void test_constants_and_memory(void)
{
	struct usdt_arg_spec a;

	ASSERT_TRUE(parse("8@$0", &a) && a.arg_type == CONST && a.val_off == 0, "8@$0");
	ASSERT_TRUE(parse("8@$3735928559", &a) && a.val_off == 3735928559ULL, "a big constant");
	ASSERT_TRUE(parse("-4@$-5", &a) && (int64_t)a.val_off == -5, "a negative constant");
	ASSERT_TRUE(parse("8@-56(%rbp)", &a), "8@-56(%rbp)");
	ASSERT_EQ(a.arg_type, REG_DEREF, "memory");
	ASSERT_EQ(a.reg_off, offsetof(struct pt_regs, rbp), "rbp");
	ASSERT_EQ((int64_t)a.val_off, -56, "offset");
	ASSERT_TRUE(parse("8@(%rsp)", &a) && a.arg_type == REG_DEREF && a.val_off == 0 &&
		    a.reg_off == offsetof(struct pt_regs, rsp), "no offset");
	ASSERT_TRUE(parse("4@16(%r9)", &a) && a.val_off == 16, "r9 + 16");
}

/* what neither libbpf 1.1 nor usdt_link reads is refused, never read wrong */
static void test_refused(void)
{
	struct usdt_arg_spec a;

	ASSERT_TRUE(!parse("8@(%rax,%rbx,8)", &a), "an index (SIB)");
	ASSERT_TRUE(!parse("8@sym(%rip)", &a), "a symbol");
	ASSERT_TRUE(!parse("3@%rax", &a), "3 bytes");
	ASSERT_TRUE(!parse("8@%xmm0", &a), "not a general register");
	ASSERT_TRUE(!parse("%rax", &a), "no size");
	ASSERT_TRUE(!parse("8@$", &a), "an empty constant");
	ASSERT_TRUE(!parse("8@-8(%rbp", &a), "unclosed");
}

#else
/* elsewhere no operand is read: span probes take libbpf's path (usdt_link__supported()) */
static void test_not_here(void)
{
	struct usdt_arg_spec a;

	ASSERT_TRUE(!usdt_link__supported(), "not supported");
	ASSERT_TRUE(!parse("8@x0", &a), "no register is read");
}
#endif

int main(void)
{
	test_group = "unit/usdt_arg";
#if defined(__x86_64__)
	RUN_TEST(test_registers);
	RUN_TEST(test_constants_and_memory);
	RUN_TEST(test_refused);
#else
	RUN_TEST(test_not_here);
#endif
	return TEST_EXIT();
}
