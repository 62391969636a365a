// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libculpert-sampler.so taken over late, without ptrace: the program
 * allocates, then dlopen's the library and calls culpert_sampler_takeover
 * and _release through dlsym, as the injector does from outside, and
 * checks its own work and the sampler's counters against its own count.
 *
 *   sampler_late LIB run [RATE]   the whole sequence, then "checks N failed F"
 *   sampler_late LIB wait [RATE]  the same, "pid N ready" once LIB is loaded
 *                                 (dormant), then SIGUSR1: a profiler
 *                                 attaches to LIB's probes meanwhile
 *   sampler_late LIB cycles N     N takeovers and releases while four threads
 *                                 allocate, free and check their blocks and a
 *                                 fifth opens, uses and closes the plugin
 *   sampler_late LIB preloaded    LIB is preloaded too: interposing from the
 *                                 start, takeover only sets the rate and
 *                                 release refuses
 *   sampler_late LIB second       LIB a copy of the library that is preloaded:
 *                                 takeover refuses (-EEXIST), nothing changes
 *   sampler_late LIB tls          static TLS filled by libsampler_tls_hog_*.so
 *                                 first (run it with glibc's surplus tuned
 *                                 down): says whether LIB could be loaded
 *
 * The sequence: blocks allocated before LIB is loaded (late_before); calls
 * while it is loaded but dormant (late_dormant); takeover, then calls from
 * this program, from libsampler_late_cxx.so (operator new/delete), from
 * four threads and from libsampler_late_plugin.so, opened by its bare name
 * through this program's RUNPATH after the takeover; old blocks realloc'd,
 * sized and freed; release; the blocks sampled before it freed, more calls
 * (late_released); takeover again and release (late_again).  At rate 1 the
 * sampler's events and weight must be exactly the calls and bytes of the
 * taken-over phases, and nothing else.  "total FN BYTES CALLS": what each
 * counted function allocated, for a profile's leaves.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <culpert/sampler.h>
#include "ready.h"

/* libsampler_late_cxx.so: operator new/delete, called from another object */
void *late_cxx_new(size_t n);
void late_cxx_delete(void *p);
void *late_cxx_new_array(size_t n);
void late_cxx_delete_array(void *p);

#define OLD		64
#define KEEP		100
#define THREADS		4
#define THREAD_CALLS	500

struct truth {
	const char *fn;
	unsigned long bytes, calls;
};

static struct truth t_counted = { .fn = "late_counted" }, t_cxx_new = { .fn = "late_cxx_new" },
	t_cxx_array = { .fn = "late_cxx_new_array" }, t_thread = { .fn = "late_thread_main" },
	t_plugin = { .fn = "late_plugin_alloc" }, t_again = { .fn = "late_again" };

static int checks, failed;
static const volatile struct culpert_sampler_page *page;
static int (*takeover)(unsigned long);
static int (*release)(void);
static int (*state)(void);

static void check(int ok, const char *what)
{
	checks++;
	if (!ok) {
		failed++;
		printf("FAIL %s\n", what);
	}
}

static void *tally(struct truth *t, void *p, size_t n)
{
	if (p) {
		t->bytes += n;
		t->calls++;
	}
	return p;
}

static unsigned long events(void)
{
	return page ? page->events : 0;
}

static unsigned long weight(void)
{
	return page ? page->weight_bytes : 0;
}

/* --- before the library: blocks the sampler must leave to the allocator --- */

static unsigned char *old[OLD];
static size_t old_size[OLD];
static void *old_cxx[8], *old_aligned[4];

static size_t old_len(int i)
{
	return 8 * (size_t)i + 3;
}

static __attribute__((noinline)) void late_before(void)
{
	int i;

	for (i = 0; i < OLD; i++) {
		old_size[i] = old_len(i);
		old[i] = i % 4 ? malloc(old_size[i]) : calloc(1, old_size[i]);
		memset(old[i], i, old_size[i]);
	}
	for (i = 0; i < 4; i++)
		old_cxx[i] = late_cxx_new(40 + i);
	for (i = 4; i < 8; i++)
		old_cxx[i] = late_cxx_new_array(40 + i);
	check(!posix_memalign(&old_aligned[0], 64, 100), "posix_memalign before");
	old_aligned[1] = aligned_alloc(256, 512);
	old_aligned[2] = memalign(128, 200);
	old_aligned[3] = valloc(300);
}

static int intact(int i)
{
	size_t k;

	for (k = 0; k < old_size[i]; k++)
		if (old[i][k] != (unsigned char)i)
			return 0;
	return 1;
}

/* loaded, not taken over: nothing seen */
static __attribute__((noinline)) void late_dormant(void)
{
	void *volatile p;
	int i;

	for (i = 0; i < 16; i++) {
		p = malloc(100 + i);
		free(p);
	}
}

/* --- taken over --- */

static void *kept[KEEP];

static __attribute__((noinline)) void *late_thread_main(void *arg)
{
	struct truth *t = arg;
	void *volatile p;
	int i;

	for (i = 0; i < THREAD_CALLS; i++) {
		p = tally(t, malloc((size_t)(i % 256) + 1), (size_t)(i % 256) + 1);
		free(p);
	}
	return NULL;
}

static __attribute__((noinline)) void late_thread(void)
{
	struct truth per[THREADS] = { 0 };
	pthread_t th[THREADS];
	int i;

	for (i = 0; i < THREADS; i++)
		check(!pthread_create(&th[i], NULL, late_thread_main, &per[i]), "pthread_create");
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		t_thread.bytes += per[i].bytes;
		t_thread.calls += per[i].calls;
	}
}

static void (*plugin_alloc)(unsigned long *bytes, unsigned long *calls);

/* opened by its bare name: found only through this program's RUNPATH ($ORIGIN) */
static void plugin(void)
{
	void *h = dlopen("libsampler_late_plugin.so", RTLD_NOW);

	check(h != NULL, "dlopen of the plugin by its bare name after takeover");
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return;
	}
	/* $ORIGIN is this program's directory, not the hook's */
	check(dlopen("$ORIGIN/libsampler_tls_hog_8.so", RTLD_NOW) != NULL, "dlopen of $ORIGIN/...");
	plugin_alloc = (void (*)(unsigned long *, unsigned long *))dlsym(h, "late_plugin_alloc");
	check(plugin_alloc != NULL, "the plugin's function");
	if (plugin_alloc)
		plugin_alloc(&t_plugin.bytes, &t_plugin.calls);
}

/*
 * A child forked while taken over inherits the rewritten slots: it frees
 * old and new blocks, allocates, releases in its turn and exits; the
 * parent's counts are its own.
 */
static void fork_child(void)
{
	int status = 0, i;
	pid_t pid = fork();

	if (pid == 0) {
		void *volatile p;
		int ok = 1;

		for (i = 0; i < OLD; i++)
			if (i % 3 == 2)
				ok &= intact(i);
		for (i = 0; i < KEEP; i++)
			free(kept[i]);
		for (i = 0; i < 100; i++) {
			p = malloc(64);
			free(p);
		}
		ok &= state() == 1 && release() == 0 && state() == 0;
		p = malloc(10);
		free(p);
		_exit(ok ? 0 : 3);
	}
	check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "a child forked while taken over");
}

static __attribute__((noinline)) void late_counted(void)
{
	void *volatile p;
	int i, intact_all = 1, usable_ok = 1;

	/* blocks from before: realloc'd (content kept), sized, freed; a third left for later */
	for (i = 0; i < OLD; i++) {
		switch (i % 3) {
		case 0:
			old[i] = tally(&t_counted, realloc(old[i], 2 * old_size[i]), 2 * old_size[i]);
			intact_all &= old[i] && intact(i);
			break;
		case 1:
			usable_ok &= malloc_usable_size(old[i]) >= old_size[i];
			intact_all &= intact(i);
			free(old[i]);
			old[i] = NULL;
			break;
		}
	}
	check(intact_all, "old blocks intact, realloc'd ones too");
	check(usable_ok, "malloc_usable_size of old blocks");
	for (i = 0; i < 4; i++)
		free(old_aligned[i]);
	for (i = 0; i < 4; i++)
		late_cxx_delete(old_cxx[i]);
	for (i = 4; i < 8; i++)
		late_cxx_delete_array(old_cxx[i]);

	/* new blocks: half freed now, half after the release */
	for (i = 0; i < 2 * KEEP; i++) {
		size_t n = (size_t)(i * 37 % 4096) + 1;

		p = tally(&t_counted, malloc(n), n);
		memset(p, 1, n);
		if (i % 2)
			free(p);
		else
			kept[i / 2] = p;
	}
	free(NULL);
	for (i = 0; i < 10; i++) {
		void *q = NULL;

		p = tally(&t_counted, calloc(3, 40), 120);
		check(((volatile unsigned char *)p)[119] == 0, "calloc zeroes");
		free(p);
		check(!posix_memalign(&q, 64, 100), "posix_memalign");
		tally(&t_counted, q, 100);
		check(((uintptr_t)q & 63) == 0, "posix_memalign aligned");
		free(q);
		p = tally(&t_counted, aligned_alloc(128, 256), 256);
		check(((uintptr_t)p & 127) == 0, "aligned_alloc aligned");
		free(p);
		p = tally(&t_counted, memalign(32, 72), 72);
		check(((uintptr_t)p & 31) == 0, "memalign aligned");
		free(p);
		p = tally(&t_counted, realloc(NULL, 50), 50);
		p = tally(&t_counted, realloc(p, 5000), 5000);
		free(p);
	}
	for (i = 0; i < 20; i++) {
		p = tally(&t_cxx_new, late_cxx_new(24 + i), 24 + i);
		late_cxx_delete(p);
		p = tally(&t_cxx_array, late_cxx_new_array(100), 100);
		late_cxx_delete_array(p);
	}
	late_thread();
	plugin();
	fork_child();
}

/* released: the blocks sampled before are freed, nothing is seen */
static __attribute__((noinline)) void late_released(void)
{
	void *volatile p;
	int i;

	for (i = 0; i < KEEP; i++)
		free(kept[i]);
	for (i = 0; i < OLD; i++)
		free(old[i]);
	for (i = 0; i < 50; i++) {
		p = malloc(64);
		free(p);
		late_cxx_delete(late_cxx_new(8));
	}
	if (plugin_alloc) {
		unsigned long b = 0, c = 0;

		plugin_alloc(&b, &c);
	}
}

static __attribute__((noinline)) void late_again(void)
{
	void *volatile p;
	int i;

	for (i = 0; i < 10; i++) {
		p = tally(&t_again, malloc(100), 100);
		free(p);
	}
}

/* --- the sequence --- */

static void *load(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return NULL;
	takeover = (int (*)(unsigned long))dlsym(h, "culpert_sampler_takeover");
	release = (int (*)(void))dlsym(h, "culpert_sampler_release");
	state = (int (*)(void))dlsym(h, "culpert_sampler_state");
	page = dlsym(h, "culpert_sampler_page");
	return h;
}

static void sums(const struct truth *const *t, int n, unsigned long *calls, unsigned long *bytes)
{
	int i;

	*calls = *bytes = 0;
	for (i = 0; i < n; i++) {
		*calls += t[i]->calls;
		*bytes += t[i]->bytes;
	}
}

static int run(const char *lib, int wait, unsigned long rate)
{
	const struct truth *const counted[] = { &t_counted, &t_cxx_new, &t_cxx_array, &t_thread,
						&t_plugin };
	unsigned long e0, w0, e1, w1, calls, bytes;
	int i;

	late_before();
	if (!load(lib)) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	check(takeover && release && state && page, "the library's interface");
	if (!takeover || !release || !state || !page)
		goto out;
	check(state() == 0, "dormant once loaded");
	if (wait)
		ready_then_wait(stdout);
	late_dormant();
	check(events() == 0, "nothing seen before the takeover");

	check(takeover(rate) == 0, "takeover");
	check(takeover(rate) == 0, "takeover when taken over");
	check(state() == 1, "taken over");
	check(page->rate == rate, "the rate asked for");
	e0 = events();
	w0 = weight();
	late_counted();
	e1 = events();
	w1 = weight();
	check(release() == 0, "release");
	check(state() == 0, "dormant after release");
	sums(counted, 5, &calls, &bytes);
	printf("counted calls %lu bytes %lu events %lu weight %lu\n", calls, bytes, e1 - e0, w1 - w0);
	if (rate == 1)
		check(e1 - e0 == calls && w1 - w0 == bytes, "rate 1: every call after takeover, exactly");

	late_released();
	check(events() == e1, "nothing seen after release");

	check(takeover(rate) == 0, "takeover again");
	e0 = events();
	w0 = weight();
	late_again();
	e1 = events();
	w1 = weight();
	check(release() == 0, "release again");
	if (rate == 1)
		check(e1 - e0 == t_again.calls && w1 - w0 == t_again.bytes, "rate 1 again: exactly");
	late_dormant();
	check(events() == e1, "nothing seen after the second release");
	for (i = 0; i < 5; i++)
		printf("total %s %lu %lu\n", counted[i]->fn, counted[i]->bytes, counted[i]->calls);
	printf("total %s %lu %lu\n", t_again.fn, t_again.bytes, t_again.calls);
out:
	printf("checks %d failed %d\n", checks, failed);
	return failed != 0;
}

/* --- takeover and release under fire --- */

static int stop;
static int broken;

static void *cycles_worker(void *arg)
{
	unsigned char *held[64] = { 0 };
	unsigned long i;
	int k;

	for (i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		k = (int)(i % 64);
		if (held[k]) {
			/* the block kept its pattern whoever allocated it, and goes back whoever frees it */
			if (held[k][0] != (unsigned char)k || held[k][(size_t)k * 16] != (unsigned char)k)
				__atomic_store_n(&broken, 1, __ATOMIC_RELAXED);
			if (i % 3)
				free(held[k]);
			else
				held[k] = realloc(held[k], (size_t)k * 32 + 1);
			if (!(i % 3) && held[k])
				continue;
		}
		held[k] = i % 5 ? malloc((size_t)k * 16 + 1) : calloc(1, (size_t)k * 16 + 1);
		if (held[k])
			memset(held[k], k, (size_t)k * 16 + 1);
	}
	for (k = 0; k < 64; k++)
		free(held[k]);
	return arg;
}

static void *cycles_opener(void *arg)
{
	unsigned long b = 0, c = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		void *h = dlopen("libsampler_late_plugin.so", RTLD_NOW);
		void (*f)(unsigned long *, unsigned long *);

		if (!h) {
			__atomic_store_n(&broken, 1, __ATOMIC_RELAXED);
			break;
		}
		f = (void (*)(unsigned long *, unsigned long *))dlsym(h, "late_plugin_alloc");
		if (f)
			f(&b, &c);
		dlclose(h);
	}
	return arg;
}

static int cycles(const char *lib, int n)
{
	pthread_t th[5];
	int i;

	check(load(lib) && takeover && release && state && page, "the library's interface");
	if (!takeover || !release || !state || !page)
		goto out;
	for (i = 0; i < 5; i++)
		check(!pthread_create(&th[i], NULL, i < 4 ? cycles_worker : cycles_opener, NULL),
		      "pthread_create");
	for (i = 0; i < n; i++) {
		check(takeover(4096) == 0, "takeover");
		check(release() == 0, "release");
	}
	check(state() == 0, "dormant at the end");
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 5; i++)
		pthread_join(th[i], NULL);
	check(!broken, "blocks intact, plugin opened every time");
	printf("cycles %d events %lu\n", n, events());
out:
	printf("checks %d failed %d\n", checks, failed);
	return failed != 0;
}

static int preloaded(const char *lib)
{
	void *volatile p;

	check(load(lib) && takeover && page, "the library's interface");
	if (!takeover || !page)
		goto out;
	check(state() == 1, "preloaded: taken over from the start");
	check(takeover(1) == 0 && page->rate == 1, "preloaded: takeover sets the rate");
	/* the thread first finishes the draw it made at the old rate: 64 MiB pass it but once in e^128 */
	for (int i = 0; i < 64 * 1024 && !page->events; i++) {
		p = malloc(1024);
		free(p);
	}
	check(page->events > 0, "preloaded: sampling");
	check(release() == -EOPNOTSUPP, "preloaded: release refuses");
	check(state() == 1, "preloaded: still taken over");
out:
	printf("checks %d failed %d\n", checks, failed);
	return failed != 0;
}

/* a second copy next to a preloaded one: its takeover would sample every call twice */
static int second(const char *lib)
{
	void *volatile p;

	check(load(lib) && takeover && page, "the library's interface");
	if (!takeover || !page)
		goto out;
	check(state() == 0, "second copy: dormant");
	check(takeover(1) == -EEXIST, "second copy: takeover refuses");
	check(state() == 0, "second copy: still dormant");
	p = malloc(1000);
	free(p);
	check(page->events == 0, "second copy: sees nothing");
out:
	printf("checks %d failed %d\n", checks, failed);
	return failed != 0;
}

/* glibc's static TLS surplus filled by libraries of initial-exec TLS, biggest first */
static int tls(const char *lib)
{
	static const int hogs[] = { 1024, 512, 256, 128, 64, 32, 16, 8 };
	char name[64];
	void *volatile p;
	int i, loaded = 0;

	for (i = 0; i < (int)(sizeof(hogs) / sizeof(hogs[0])); i++) {
		snprintf(name, sizeof(name), "libsampler_tls_hog_%d.so", hogs[i]);
		if (dlopen(name, RTLD_NOW))
			loaded += hogs[i];
		else
			dlerror();
	}
	printf("hogs %d bytes\n", loaded);
	if (load(lib))
		printf("sampler loaded\n");
	else
		printf("sampler refused: %s\n", dlerror());
	/* the process goes on as before */
	for (i = 0; i < 1000; i++) {
		p = malloc((size_t)i + 1);
		memset(p, 0, (size_t)i + 1);
		free(p);
	}
	printf("alive\n");
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long rate = argc > 3 ? strtoul(argv[3], NULL, 0) : 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: %s LIB run|wait|cycles|preloaded|second|tls [RATE|N]\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[2], "tls"))
		return tls(argv[1]);
	if (!strcmp(argv[2], "cycles"))
		return cycles(argv[1], (int)rate);
	if (!strcmp(argv[2], "second"))
		return second(argv[1]);
	if (!strcmp(argv[2], "preloaded"))
		return preloaded(argv[1]);
	return run(argv[1], !strcmp(argv[2], "wait"), rate);
}
