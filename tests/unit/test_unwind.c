// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The DWARF unwinder against this process's own stacks: unwind_chain.c
 * (no frame pointers) captures registers and a stack copy the way the BPF
 * side does, the unwinder walks them with /proc/self/maps, and the frames
 * are checked by symbol name.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame_name.h"
#include "objcache.h"
#include "procmaps.h"
#include "target.h"
#include "test.h"
#include "unwind.h"
#include "unwind_chain.h"

#define NOINLINE __attribute__((noinline, noipa))
#define MAX_FRAMES 128

/* big, so static: a capture on the stack would copy itself */
static struct unwind_capture cap;
static struct target self;
static struct objcache *objs;

struct walk {
	int n;			/* unwinder__unwind()'s return */
	enum unwind_stop stop;
	uint64_t frames[MAX_FRAMES];
};

static int unwind_with(struct unwinder *u, const struct procmaps *maps,
		       const struct culpert_regs *regs, const void *stack, size_t len, size_t max,
		       struct walk *w)
{
	memset(w, 0, sizeof(*w));
	w->stop = UNWIND_STOP__MAX;
	w->n = unwinder__unwind(u, maps, regs, stack, len, w->frames, max, &w->stop);
	return w->n;
}

/* name of the function at frame i (return addresses looked up at pc - 1), "" if none */
static const char *name_at(const struct procmaps *maps, const struct walk *w, int i)
{
	return frame_name(objs, maps, w->frames[i] - (i > 0), NULL);
}

static bool frame_in(const struct procmaps *maps, const struct walk *w, int i, const char *lib)
{
	const struct procmap *m = procmaps__find(maps, w->frames[i] - (i > 0));

	return m && strstr(m->path, lib);
}

static void print_walk(const struct procmaps *maps, const struct walk *w)
{
	int i;

	printf("  %d frames, stop %s:", w->n, unwind_stop_name(w->stop));
	for (i = 0; i < w->n; i++)
		printf(" %s", *name_at(maps, w, i) ? name_at(maps, w, i) : "?");
	printf("\n");
}

/* frames i.. are the names given, in order */
static bool names_at(const struct procmaps *maps, const struct walk *w, int i,
		     const char *const *names, int n)
{
	int j;

	for (j = 0; j < n; j++) {
		if (i + j >= w->n || !ASSERT_STREQ(name_at(maps, w, i + j), names[j], "frame"))
			return false;
	}
	return true;
}

/*
 * The whole way out of main: main, then glibc's __libc_start_call_main and
 * __libc_start_main, then _start, whose CFI ends the stack.
 */
static bool ends_in_start(const struct procmaps *maps, const struct walk *w, int main_idx)
{
	int i;

	if (!ASSERT_EQ(w->stop, UNWIND_STOP_END, "stop reason") ||
	    !ASSERT_STREQ(name_at(maps, w, w->n - 1), "_start", "outermost frame") ||
	    !ASSERT_TRUE(w->n - 1 - main_idx >= 2, "frames between main and _start"))
		return false;
	for (i = main_idx + 1; i < w->n - 1; i++) {
		if (!ASSERT_TRUE(frame_in(maps, w, i, "libc.so"), "libc between main and _start"))
			return false;
	}
	return true;
}

/*
 * What the kernel's frame-pointer walk makes of the same capture: ip, the
 * word at sp (the caller, put back as docs/unwind.md says), then the rbp chain.
 */
static int fp_walk(const struct unwind_capture *c, uint64_t *frames, int max)
{
	uint64_t fp = c->regs.bp, w[2];
	int n = 0;

	frames[n++] = c->regs.ip;
	if (c->len >= 8)
		memcpy(&frames[n++], c->stack, 8);
	while (n < max && fp >= c->regs.sp && fp + 16 <= c->regs.sp + c->len) {
		memcpy(w, c->stack + (fp - c->regs.sp), 16);
		frames[n++] = w[1];
		if (w[0] <= fp)
			break;
		fp = w[0];
	}
	return n;
}

static bool setup(struct procmaps *maps, struct unwinder **u)
{
	*u = NULL;
	memset(maps, 0, sizeof(*maps));
	if (!ASSERT_EQ(procmaps__read(getpid(), maps), 0, "procmaps__read"))
		return false;
	*u = unwinder__new(getpid(), objs);
	return ASSERT_OK_PTR(*u, "unwinder__new");
}

static void teardown(struct procmaps *maps, struct unwinder *u)
{
	unwinder__free(u);
	procmaps__free(maps);
}

/* main -> this -> chain_a -> chain_b -> chain_c -> unwind_capture, all without frame pointers */
static NOINLINE void test_chain_without_frame_pointers(void)
{
	static const char *const chain[] = {
		"unwind_capture", "chain_c", "chain_b", "chain_a",
		"test_chain_without_frame_pointers", "main",
	};
	struct procmaps maps;
	struct unwinder *u;
	struct walk w, fp;
	int i, found = 0;

	chain_a(&cap);
	if (!setup(&maps, &u))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &w);
	print_walk(&maps, &w);
	if (!ASSERT_TRUE(w.n >= 9, "frame count") || !names_at(&maps, &w, 0, chain, 6) ||
	    !ends_in_start(&maps, &w, 5))
		goto out;
	/* the same capture defeats a frame-pointer walk: the test proves what only CFI can do */
	fp.n = fp_walk(&cap, fp.frames, MAX_FRAMES);
	for (i = 1; i < fp.n; i++)
		found += !strcmp(name_at(&maps, &fp, i), "chain_b") ||
			 !strcmp(name_at(&maps, &fp, i), "chain_a") ||
			 !strcmp(name_at(&maps, &fp, i), "main");
	ASSERT_TRUE(found < 3, "a frame-pointer walk also finds chain_b, chain_a and main: "
		    "is unwind_chain.c built with frame pointers?");
out:
	teardown(&maps, u);
}

/*
 * Every copy length from nothing to the whole stack: each one either ends
 * the walk like the full copy, or is flagged truncated with a prefix of the
 * full walk, and every frame count in between shows up.
 */
static NOINLINE void test_truncated_copies(void)
{
	struct procmaps maps;
	struct unwinder *u;
	struct walk full, w;
	bool seen[MAX_FRAMES] = { false };
	int last_n = 1, i;
	size_t len;

	chain_a(&cap);
	if (!setup(&maps, &u))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &full);
	if (!ASSERT_EQ(full.stop, UNWIND_STOP_END, "full copy") ||
	    !ASSERT_TRUE(full.n > 5, "frames"))
		goto out;
	for (len = 0; len <= cap.len; len += 4) {
		unwind_with(u, &maps, &cap.regs, cap.stack, len, MAX_FRAMES, &w);
		if (!ASSERT_TRUE(w.n >= 1 && w.n <= full.n, "frame count within the full walk's") ||
		    !ASSERT_EQ(memcmp(w.frames, full.frames, w.n * sizeof(w.frames[0])), 0,
			       "frames are a prefix of the full walk") ||
		    !ASSERT_TRUE(w.n >= last_n, "a longer copy never gives fewer frames"))
			goto out;
		if (w.stop == UNWIND_STOP_END) {
			if (!ASSERT_EQ(w.n, full.n, "an ended walk is the full walk"))
				goto out;
		} else if (!ASSERT_EQ(w.stop, UNWIND_STOP_TRUNCATED, "stop of a short copy") ||
			   !ASSERT_TRUE(w.n < full.n, "a truncated walk is shorter")) {
			printf("  len %zu\n", len);
			goto out;
		}
		if (len == 0 && !ASSERT_EQ(w.n, 1, "nothing copied: the probed ip alone"))
			goto out;
		seen[w.n] = true;
		last_n = w.n;
	}
	for (i = 1; i <= full.n; i++)
		ASSERT_TRUE(seen[i], "every frame count appears as the copy grows");
out:
	teardown(&maps, u);
}

static NOINLINE void test_depth_limit(void)
{
	struct procmaps maps;
	struct unwinder *u;
	struct walk full, w;
	int max;

	chain_a(&cap);
	if (!setup(&maps, &u))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &full);
	for (max = 1; max <= full.n; max++) {
		unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, max, &w);
		if (!ASSERT_EQ(w.n, max, "frames filled") ||
		    !ASSERT_EQ(w.stop, max < full.n ? UNWIND_STOP_DEPTH : UNWIND_STOP_END,
			       "stop reason") ||
		    !ASSERT_EQ(memcmp(w.frames, full.frames, max * sizeof(w.frames[0])), 0,
			       "prefix"))
			break;
	}
out:
	teardown(&maps, u);
}

/*
 * through glibc's qsort, built (like all of Debian) without frame pointers;
 * under AddressSanitizer qsort_r is its interceptor's, in libasan.so
 */
#ifdef __SANITIZE_ADDRESS__
#define LIBC_QSORT "libasan.so"
#else
#define LIBC_QSORT "libc.so"
#endif

static NOINLINE void test_through_libc(void)
{
	static const char *const tail[] = { "via_qsort", "test_through_libc", "main" };
	struct procmaps maps;
	struct unwinder *u;
	struct walk w;
	int i;

	via_qsort(&cap);
	if (!setup(&maps, &u))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &w);
	print_walk(&maps, &w);
	if (!ASSERT_TRUE(w.n > 4, "frame count") ||
	    !ASSERT_STREQ(name_at(&maps, &w, 1), "capture_cmp", "the comparator"))
		goto out;
	for (i = 2; i < w.n && frame_in(&maps, &w, i, LIBC_QSORT); i++)
		;
	if (ASSERT_TRUE(i > 2, "qsort's frames in libc") && names_at(&maps, &w, i, tail, 3))
		ends_in_start(&maps, &w, i + 2);
out:
	teardown(&maps, u);
}

static struct walk thread_walk;
static struct procmaps thread_maps;

/* unwinds where it captured: the thread's stack mapping is gone once it is joined */
static NOINLINE void *thread_main(void *arg)
{
	struct unwinder *u;

	chain_a(&cap);
	if (!setup(&thread_maps, &u))
		return NULL;
	unwind_with(u, &thread_maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &thread_walk);
	unwinder__free(u);
	return NULL;
}

/* a thread's stack ends in glibc's clone3, whose CFI marks the outermost frame */
static NOINLINE void test_thread_start(void)
{
	static const char *const chain[] = {
		"unwind_capture", "chain_c", "chain_b", "chain_a", "thread_main",
	};
	pthread_t th;
	int i;

	memset(&thread_maps, 0, sizeof(thread_maps));
	if (!ASSERT_EQ(pthread_create(&th, NULL, thread_main, NULL), 0, "pthread_create"))
		return;
	pthread_join(th, NULL);
	print_walk(&thread_maps, &thread_walk);
	if (names_at(&thread_maps, &thread_walk, 0, chain, 5) &&
	    ASSERT_EQ(thread_walk.stop, UNWIND_STOP_END, "stop reason") &&
	    ASSERT_TRUE(thread_walk.n > 5, "start_thread and clone3 after thread_main")) {
		for (i = 5; i < thread_walk.n; i++)
			ASSERT_TRUE(frame_in(&thread_maps, &thread_walk, i, "libc.so"),
				    "libc frame");
	}
	procmaps__free(&thread_maps);
}

static volatile int sink;

static NOINLINE void on_signal(int sig)
{
	/* used, so not a tail call: on_signal keeps its frame */
	sink += chain_a(&cap);
}

/* from a signal handler, through the kernel's signal frame and glibc's __restore_rt */
static NOINLINE void test_signal_handler(void)
{
	static const char *const chain[] = {
		"unwind_capture", "chain_c", "chain_b", "chain_a", "on_signal",
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct procmaps maps;
	struct unwinder *u;
	struct walk w;
	int i;

	if (!ASSERT_EQ(sigaction(SIGUSR1, &sa, NULL), 0, "sigaction"))
		return;
	raise(SIGUSR1);
	signal(SIGUSR1, SIG_DFL);
	if (!setup(&maps, &u))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &w);
	print_walk(&maps, &w);
	if (!names_at(&maps, &w, 0, chain, 5) ||
	    !ASSERT_TRUE(w.n > 5 && frame_in(&maps, &w, 5, "libc.so"), "__restore_rt in libc"))
		goto out;
	for (i = 6; i < w.n && strcmp(name_at(&maps, &w, i), "test_signal_handler"); i++)
		;
	if (ASSERT_TRUE(i < w.n, "the frame that raised the signal") &&
	    ASSERT_STREQ(name_at(&maps, &w, i + 1), "main", "its caller"))
		ends_in_start(&maps, &w, i + 1);
out:
	teardown(&maps, u);
}

/* code without CFI but with a frame pointer: walked by rbp, then CFI again */
static NOINLINE void test_code_without_cfi(void)
{
	static const char *const chain[] = {
		"unwind_capture", "call_without_cfi", "via_no_cfi", "test_code_without_cfi", "main",
	};
	struct procmaps maps;
	struct unwinder *u;
	struct walk w;

	via_no_cfi(&cap);
	if (!setup(&maps, &u))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &w);
	print_walk(&maps, &w);
	if (names_at(&maps, &w, 0, chain, 5))
		ends_in_start(&maps, &w, 4);
out:
	teardown(&maps, u);
}

static void fill_words(unsigned char *p, size_t len, uint64_t word)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8)
		memcpy(p + i, &word, 8);
}

static uint64_t rnd64(void)
{
	return ((uint64_t)random() << 33) ^ ((uint64_t)random() << 11) ^ (uint64_t)random();
}

/* registers and stacks that are not what they claim: errors, never a crash or a loop */
static NOINLINE void test_garbage(void)
{
	static unsigned char junk[UNWIND_CAPTURE_MAX];
	static struct unwind_capture rec;
	static const int data_word = 1;
	struct procmaps maps;
	struct culpert_regs r;
	struct unwinder *u;
	struct walk good, w;
	uint64_t codes[5];
	int i, n_err = 0;

	chain_a(&cap);
	if (!setup(&maps, &u))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &good);

	r = cap.regs;
	r.ip = 0x1000;
	ASSERT_EQ(unwind_with(u, &maps, &r, cap.stack, cap.len, MAX_FRAMES, &w), -EFAULT,
		  "ip in no mapping");
	r.ip = (uintptr_t)&data_word;
	ASSERT_EQ(unwind_with(u, &maps, &r, cap.stack, cap.len, MAX_FRAMES, &w), -EFAULT,
		  "ip in data");
	r = cap.regs;
	r.sp = 8;
	ASSERT_EQ(unwind_with(u, &maps, &r, cap.stack, cap.len, MAX_FRAMES, &w), -EFAULT,
		  "sp in no mapping");
	ASSERT_EQ(unwinder__unwind(u, &maps, &cap.regs, cap.stack, cap.len, w.frames, 0, &w.stop),
		  -EINVAL, "max 0");

	/* a return address that points nowhere */
	fill_words(junk, sizeof(junk), 0x4141414141414141ULL);
	unwind_with(u, &maps, &cap.regs, junk, cap.len, MAX_FRAMES, &w);
	ASSERT_EQ(w.n, 1, "frames before the junk");
	ASSERT_EQ(w.stop, UNWIND_STOP_ERROR, "junk return address");

	/*
	 * Every word the return address of chain_rec's recursive call: a
	 * recursion without bottom, 48 bytes a frame.  A stack walk is bounded
	 * by max however the stack looks.
	 */
	chain_rec(&rec, 2);
	unwind_with(u, &maps, &rec.regs, rec.stack, rec.len, MAX_FRAMES, &w);
	if (ASSERT_STREQ(name_at(&maps, &w, 2), "chain_rec", "recursive frame")) {
		fill_words(junk, sizeof(junk), w.frames[2]);
		unwind_with(u, &maps, &rec.regs, junk, rec.len, 8, &w);
		ASSERT_EQ(w.n, 8, "looping stack, frames");
		ASSERT_EQ(w.stop, UNWIND_STOP_DEPTH, "looping stack stops at max");
	}

	/*
	 * chain_c's saved rbp rewritten to point below chain_c's own frame:
	 * chain_b's CFA (rbp + 16) would lie under the stack pointer, a loop
	 * in disguise.  Offsets from chain_c's CFI: CFA = rsp + 1024, rbp at
	 * CFA - 16, return address at CFA - 8.
	 */
	memset(junk, 0, sizeof(junk));
	memcpy(junk, &good.frames[1], 8);
	fill_words(junk + 8 + 1008, 8, cap.regs.sp + 16);
	fill_words(junk + 8 + 1016, 8, good.frames[2]);
	fill_words(junk + 24, 8, good.frames[3]);
	unwind_with(u, &maps, &cap.regs, junk, cap.len, MAX_FRAMES, &w);
	ASSERT_EQ(w.n, 3, "frames before the one below its callee");
	ASSERT_EQ(w.stop, UNWIND_STOP_ERROR, "a caller below its callee");

	/* random corruption: every outcome must be a clean one; fixed seed, reproducible */
	srandom(5);
	codes[0] = cap.regs.ip;
	for (i = 1; i < 5; i++)
		codes[i] = good.frames[i];
	for (i = 0; i < 3000; i++) {
		int k, words = (int)(cap.len / 8);

		memcpy(junk, cap.stack, cap.len);
		for (k = random() % 8; k > 0; k--)
			((uint64_t *)junk)[random() % words] = random() % 2 ? rnd64() :
							       codes[random() % 5] + 1;
		r = cap.regs;
		r.ip = random() % 4 ? codes[random() % 5] : rnd64();
		r.sp = cap.regs.sp + (random() % 4 ? 0 : (uint64_t)(random() % 64) * 8);
		r.bp = random() % 2 ? r.bp : r.sp + (uint64_t)(random() % 256) * 8;
		unwind_with(u, &maps, &r, junk + (r.sp - cap.regs.sp),
			    cap.len - (r.sp - cap.regs.sp), MAX_FRAMES, &w);
		if (!ASSERT_TRUE(w.n == -EFAULT || (w.n >= 1 && w.n <= MAX_FRAMES &&
						   w.stop < UNWIND_STOP__MAX), "a clean outcome"))
			break;
		n_err += w.n < 0 || w.stop == UNWIND_STOP_ERROR;
	}
	ASSERT_TRUE(n_err > 0, "corruption was noticed at least once");
out:
	teardown(&maps, u);
}

/*
 * An address range that now belongs to another file than the one reported
 * (dlclose, then dlopen of something else): the unwinder reloads its
 * objects once, and the walk is still right.
 */
static NOINLINE void test_remapped_object(void)
{
	struct procmaps maps, moved;
	struct unwinder_stats st;
	struct unwinder *u;
	struct walk before, after;
	const struct procmap *m;

	chain_a(&cap);
	if (!setup(&maps, &u))
		goto out;
	if (!ASSERT_EQ(procmaps__read(getpid(), &moved), 0, "procmaps__read"))
		goto out;
	unwind_with(u, &maps, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &before);
	unwinder__stats(u, &st);
	ASSERT_EQ(st.resets, 0, "resets before");
	ASSERT_TRUE(st.modules >= 2, "the executable and libc reported");
	/* the same file under another inode is, to the unwinder, another object */
	m = procmaps__find(&moved, cap.regs.ip);
	moved.v[m - moved.v].inode ^= 1;
	unwind_with(u, &moved, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &after);
	unwind_with(u, &moved, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &after);
	unwinder__stats(u, &st);
	ASSERT_EQ(st.resets, 1, "one reload, then the new object is known");
	ASSERT_EQ(after.n, before.n, "frames after the reload");
	ASSERT_EQ(after.stop, UNWIND_STOP_END, "stop after the reload");
	ASSERT_EQ(memcmp(after.frames, before.frames, before.n * sizeof(before.frames[0])), 0,
		  "same frames");
	/* the same file loaded at another address: another load bias, another module */
	moved.v[m - moved.v].offset += 4096;
	unwind_with(u, &moved, &cap.regs, cap.stack, cap.len, MAX_FRAMES, &after);
	unwinder__stats(u, &st);
	ASSERT_EQ(st.resets, 2, "a reload for a moved object");
	procmaps__free(&moved);
out:
	teardown(&maps, u);
}

int main(void)
{
	char err[256];

	test_group = "unit/unwind";
	if (target__open(getpid(), &self, err, sizeof(err))) {
		printf("FAIL unit/unwind: %s\n", err);
		return 1;
	}
	objs = objcache__new(&self);
	RUN_TEST(test_chain_without_frame_pointers);
	RUN_TEST(test_truncated_copies);
	RUN_TEST(test_depth_limit);
	RUN_TEST(test_through_libc);
	RUN_TEST(test_thread_start);
	RUN_TEST(test_signal_handler);
	RUN_TEST(test_code_without_cfi);
	RUN_TEST(test_garbage);
	RUN_TEST(test_remapped_object);
	objcache__free(objs);
	target__close(&self);
	return TEST_EXIT();
}
