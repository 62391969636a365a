// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arm64 probe offsets (user/probe/probe_offset_arm64.c): the kernel's
 * classes (simulated, single-stepped, rejected) and the moves on synthetic
 * code, then Debian's arm64 glibc (libc6:arm64, installed for the cross
 * build) against aarch64-linux-gnu-objdump, an independent decoder.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfobj.h"
#include "probe_offset_check.h"

#define BASE 0x1000

/* A64 words the tests are made of (objdump -d of each, by hand) */
#define BTI_C		0xd503245f
#define BTI		0xd503241f
#define NOP		0xd503201f
#define PACIASP		0xd503233f
#define AUTIASP		0xd50323bf
#define YIELD		0xd503203f
#define STP_FP_LR	0xa9bc7bfd	/* stp x29, x30, [sp, #-64]! */
#define MOV_FP_SP	0x910003fd	/* mov x29, sp */
#define CBZ_X0_8	0xb4000040	/* cbz x0, .+8 */
#define CMP_X0_0	0xf100001f	/* cmp x0, #0x0 */
#define TST_X1_X2	0xea02003f	/* tst x1, x2 */
#define SUBS_X0		0xf1000400	/* subs x0, x0, #1: writes x0 */
#define BEQ_8		0x54000040	/* b.eq .+8 */
#define B_BACK8		0x17fffffe	/* b .-8 */
#define BR_X1		0xd61f0020	/* br x1 */
#define BLR_X1		0xd63f0020	/* blr x1 */
#define RET		0xd65f03c0
#define LDR_LIT		0x58000040	/* ldr x0, .+8 */
#define LDXR		0xc85f7c00	/* ldxr x0, [x0] */
#define MRS_DAIF	0xd53b4220	/* mrs x0, daif */
#define MRS_TPIDR	0xd53bd040	/* mrs x0, tpidr_el0 */
#define SVC_0		0xd4000001	/* svc #0 */
#define ADRP_X0		0x90000000	/* adrp x0, . */

static int choose(struct probe_offset *po, const uint32_t *w, size_t n)
{
	uint8_t code[64];
	size_t i;

	for (i = 0; i < n && i < sizeof(code) / 4; i++) {
		code[4 * i] = (uint8_t)w[i];
		code[4 * i + 1] = (uint8_t)(w[i] >> 8);
		code[4 * i + 2] = (uint8_t)(w[i] >> 16);
		code[4 * i + 3] = (uint8_t)(w[i] >> 24);
	}
	return probe_offset__choose_arm64(code, 4 * n, BASE, po);
}

#define CHOOSE(po, ...) ({                                                           \
	static const uint32_t ___w[] = { __VA_ARGS__ };                              \
	choose((po), ___w, sizeof(___w) / sizeof(___w[0]));                          \
})

/* the class of the first instruction, as the reason says it */
static bool at_zero_is(const char *what, int rc, const struct probe_offset *po, const char *want)
{
	if (!ASSERT_EQ(rc, 0, what) || !ASSERT_EQ(po->offset, 0, what))
		return false;
	if (strstr(po->reason, want))
		return true;
	printf("  %s: reason \"%s\" lacks \"%s\"\n", what, po->reason, want);
	test_ok = false;
	return false;
}

/* glibc's usual entry, and the other stepped, simulated and rejected first instructions */
static void test_first_instruction_class(void)
{
	struct probe_offset po;

	at_zero_is("stp", CHOOSE(&po, STP_FP_LR, MOV_FP_SP, RET), &po,
		   "+0: stp x29, x30, [sp, #-0x40]! (single-stepped)");
	at_zero_is("paciasp: signs lr, never skipped", CHOOSE(&po, PACIASP, CBZ_X0_8, RET), &po,
		   "+0: paciasp (single-stepped)");
	at_zero_is("cbz", CHOOSE(&po, CBZ_X0_8, RET, RET), &po, "+0: cbz x0, #0x1008 (simulated)");
	at_zero_is("adrp", CHOOSE(&po, ADRP_X0, RET), &po, "(simulated)");
	at_zero_is("blr", CHOOSE(&po, BLR_X1, RET), &po, "(simulated)");
	/* decode-insn.c steps every mrs but that of DAIF */
	at_zero_is("mrs tpidr_el0", CHOOSE(&po, MRS_TPIDR, RET), &po, "(single-stepped)");
	at_zero_is("mrs daif", CHOOSE(&po, MRS_DAIF, RET), &po, "rejected");
	at_zero_is("autiasp", CHOOSE(&po, AUTIASP, RET), &po, "rejected by the kernel");
	at_zero_is("yield", CHOOSE(&po, YIELD, RET), &po, "rejected");
	at_zero_is("ldr literal", CHOOSE(&po, LDR_LIT, RET, RET), &po, "rejected");
	at_zero_is("ldxr", CHOOSE(&po, LDXR, RET), &po, "rejected");
	at_zero_is("svc", CHOOSE(&po, SVC_0, RET), &po, "rejected");
}

/* bti c, nop, cmp, tst change nothing the probe reads: moved to the simulated branch */
static void test_past_no_effect_to_simulated(void)
{
	struct probe_offset po;

	ASSERT_EQ(CHOOSE(&po, BTI_C, CBZ_X0_8, RET, RET), 0, "choose");
	ASSERT_EQ(po.offset, 4, "at the cbz");
	ASSERT_STREQ(po.reason, "+4: past bti c (no effect) to cbz x0, #0x100c (simulated)",
		     "reason");
	ASSERT_EQ(CHOOSE(&po, BTI, NOP, CMP_X0_0, BEQ_8, RET, RET), 0, "choose");
	ASSERT_EQ(po.offset, 12, "past three");
	ASSERT_EQ(CHOOSE(&po, TST_X1_X2, BEQ_8, RET, RET), 0, "choose");
	ASSERT_EQ(po.offset, 4, "past tst");
	/* subs writes x0: a probe after it would see another argument */
	at_zero_is("subs", CHOOSE(&po, SUBS_X0, BEQ_8, RET, RET), &po, "(single-stepped)");
	at_zero_is("bti then stp", CHOOSE(&po, BTI_C, STP_FP_LR, RET), &po,
		   "+0: past bti c (no effect) comes stp x29, x30, [sp, #-0x40]!, not simulated");
	at_zero_is("bti then paciasp", CHOOSE(&po, BTI_C, PACIASP, STP_FP_LR, RET), &po,
		   "comes paciasp, not simulated");
}

static void test_skip_limit(void)
{
	struct probe_offset po;

	/* as on x86: at most 16 bytes skipped, so the probe lands at +16 at most */
	at_zero_is("limit", CHOOSE(&po, NOP, NOP, NOP, NOP, NOP, CBZ_X0_8, RET, RET), &po,
		   "no simulated instruction within the first 16 bytes");
	ASSERT_EQ(CHOOSE(&po, NOP, NOP, NOP, NOP, CBZ_X0_8, RET, RET), 0, "choose");
	ASSERT_EQ(po.offset, 16, "within the limit");
}

/* a branch to +4 would hit the moved probe without a call; an indirect jump could */
static void test_entries(void)
{
	struct probe_offset po;

	at_zero_is("branch into", CHOOSE(&po, BTI_C, CBZ_X0_8, RET, B_BACK8, RET), &po,
		   "b #0x1004 at +12 enters the function at +4, cannot skip to +4");
	at_zero_is("indirect", CHOOSE(&po, BTI_C, CBZ_X0_8, RET, BR_X1), &po,
		   "indirect jump in function (br x1 at +12)");
	/* a call through a register returns to the next instruction */
	ASSERT_EQ(CHOOSE(&po, BTI_C, CBZ_X0_8, BLR_X1, RET), 0, "choose");
	ASSERT_EQ(po.offset, 4, "blr is no entry");
}

static void test_bad_input(void)
{
	static const uint8_t odd[6] = { 0x1f, 0x20, 0x03, 0xd5, 0, 0 };
	struct probe_offset po;

	ASSERT_EQ(probe_offset__choose_arm64(odd, sizeof(odd), BASE, &po), 0, "6 bytes");
	ASSERT_EQ(po.offset, 0, "not whole instructions");
	ASSERT_TRUE(strstr(po.reason, "not whole A64 instructions") != NULL, po.reason);
	ASSERT_EQ(probe_offset__choose_arm64(odd, 0, BASE, &po), 0, "empty");
	ASSERT_TRUE(strstr(po.reason, "size unknown") != NULL, po.reason);
	ASSERT_EQ(probe_offset__choose_arm64(NULL, 4, BASE, &po), -EINVAL, "NULL code");
}

/* random words: always an answer, in range, and the reason names the offset */
static void test_random_words(void)
{
	unsigned int seed = 4242;
	struct probe_offset po;
	uint32_t w[16];
	int i, moved = 0;
	size_t n, j;

	for (i = 0; i < 20000; i++) {
		n = 1 + (size_t)rand_r(&seed) % 16;
		for (j = 0; j < n; j++)
			w[j] = (uint32_t)rand_r(&seed) << 16 ^ (uint32_t)rand_r(&seed);
		/* half of them start the way the interesting paths do */
		if (i & 1)
			w[0] = BTI_C;
		if (i & 2 && n > 1)
			w[1] = CBZ_X0_8;
		if (!ASSERT_EQ(choose(&po, w, n), 0, "choose") || !decision_sane(&po, 4 * n, 4))
			return;
		moved += po.offset > 0;
	}
	ASSERT_TRUE(moved > 0, "some random functions got a moved probe");
}

/* --- Debian's arm64 glibc against aarch64-linux-gnu-objdump ---------------------------------- */

#define ARM64_LIBC "/lib/aarch64-linux-gnu/libc.so.6"

/* objdump's first instruction of the function at `start`: "cbz" and its operands */
static bool od_first(uint64_t start, char *mnem, size_t mlen, char *ops, size_t olen)
{
	char cmd[512], line[512], *text;
	bool got = false;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "aarch64-linux-gnu-objdump -d -w --start-address=0x%llx "
		 "--stop-address=0x%llx %s", (unsigned long long)start,
		 (unsigned long long)start + 4, ARM64_LIBC);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long a;

		/* "   929c4:\tb4000880 \tcbz\tx0, 92ad4 <...>" */
		if (got || sscanf(line, " %llx:", &a) != 1 || a != start ||
		    !(text = strchr(line, '\t')) || !(text = strchr(text + 1, '\t')))
			continue;
		ops[0] = '\0';
		got = sscanf(text + 1, "%31s %127[^\n]", mnem, ops) >= 1;
	}
	if (f)
		pclose(f);
	(void)mlen;
	(void)olen;
	return got;
}

/* the kernel's simulated set, in objdump's words, written apart from the code under test */
static bool od_simulated(const char *m)
{
	static const char *const sim[] = { "b", "bl", "cbz", "cbnz", "tbz", "tbnz", "adr", "adrp",
					   "br", "blr", "ret" };
	size_t k;

	if (!strncmp(m, "b.", 2))
		return true;
	for (k = 0; k < sizeof(sim) / sizeof(sim[0]); k++)
		if (!strcmp(m, sim[k]))
			return true;
	return false;
}

/*
 * Every glibc entry point: objdump's first instruction is in the class the
 * chooser names.  glibc 2.36 for arm64 starts free with cbz x0 (simulated)
 * and malloc with stp x29, x30 (stepped): both classes occur.
 */
static void test_arm64_glibc(void)
{
	static const char *const names[] = { "malloc", "calloc", "realloc", "reallocarray",
		"free", "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", NULL };
	const char *const *name;
	struct elfobj *obj;
	int simulated = 0, stepped = 0;

	if (!ASSERT_TRUE(access(ARM64_LIBC, R_OK) == 0, ARM64_LIBC " (libc6:arm64, make deps)"))
		return;
	obj = elfobj__open(ARM64_LIBC);
	if (!ASSERT_OK_PTR(obj, ARM64_LIBC))
		return;
	for (name = names; *name; name++) {
		const struct elf_symbol *s = elfobj__sym_by_name(obj, *name);
		char mnem[32], ops[128], want[200];
		struct probe_offset po;
		bool sim;

		if (!ASSERT_TRUE(s != NULL, *name) ||
		    !ASSERT_EQ(probe_offset__for_symbol(obj, s, 0, &po), 0, *name) ||
		    !ASSERT_TRUE(od_first(s->value, mnem, sizeof(mnem), ops, sizeof(ops)),
				 "aarch64-linux-gnu-objdump printed it"))
			continue;
		sim = od_simulated(mnem);
		snprintf(want, sizeof(want), "+0: %s", mnem);
		ASSERT_EQ(po.offset, 0, *name);
		if (!ASSERT_TRUE(!strncmp(po.reason, want, strlen(want)) &&
				 strstr(po.reason, sim ? "(simulated)" : "(single-stepped)"), *name))
			printf("  %s: chooser says \"%s\"; objdump starts \"%s %s\"\n", *name,
			       po.reason, mnem, ops);
		simulated += sim;
		stepped += !sim;
	}
	ASSERT_TRUE(simulated > 0 && stepped > 0, "both classes among glibc's entry points");
	elfobj__free(obj);
}

int main(void)
{
	test_group = "unit/probe_offset_arm64";
	RUN_TEST(test_first_instruction_class);
	RUN_TEST(test_past_no_effect_to_simulated);
	RUN_TEST(test_skip_limit);
	RUN_TEST(test_entries);
	RUN_TEST(test_bad_input);
	RUN_TEST(test_random_words);
	RUN_TEST(test_arm64_glibc);
	return TEST_EXIT();
}
