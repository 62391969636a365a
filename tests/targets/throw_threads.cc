// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Many threads throwing exceptions through operator new, to inject into
 * and release again and again (docs/inject.md): the takeover rewrites the
 * GOT entries of operator new under threads that are inside it or
 * unwinding out of it.  Each worker, round after round:
 *   - asks operator new for 2^47 bytes: std::bad_alloc thrown from inside
 *     the allocator, through whatever wraps it, caught here;
 *   - builds 16 strings of its own digits (most past the short-string
 *     buffer: operator new), sums their characters;
 *   - sorts with glibc's qsort, whose comparator allocates and throws a
 *     std::runtime_error with a heap-allocated message out through
 *     qsort's C frames;
 *   - replaces one of 64 kept strings, after checking the one it frees
 *     (made up to 64 rounds earlier: blocks from before an injection are
 *     freed after it).
 * and sleeps PAUSE_US, if not 0 (a service under load, not 63 threads
 * spinning on a machine of a few cores, which starve the profiler too).
 * At SIGUSR1 the workers stop, and each recomputes, with no allocation,
 * the sum its rounds must have given and the kept strings' contents.
 *
 *   throw_threads [WORKERS [PAUSE_US]]   (default 63: with the main thread, 64; 0)
 *
 * Prints "pid N ready" once every worker runs, and at the end
 * "workers W rounds R caught C failed F": exits 0 when F is 0 and C is
 * 2 x R (the bad_alloc and the qsort exception of every round).
 */
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <pthread.h>
#include <signal.h>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#define NOINLINE __attribute__((noipa))
#define KEPT 64
#define STRINGS 16

static volatile size_t big = 1ULL << 47;
static volatile unsigned long sink;
static std::atomic<bool> stop;
static unsigned long pause_us;

struct worker {
	unsigned long id, rounds, caught, failed, sum;
	std::vector<std::string> kept;
	pthread_t thread;
};

/* the characters of string i of round r of worker w: its digits, repeated (i % 5 + 1) times */
static int digits(const worker &w, unsigned long r, int i, char *buf, size_t len)
{
	return snprintf(buf, len, "%lu", w.id * 1000003UL + r * 17UL + (unsigned long)i);
}

static unsigned long weigh(const char *d, int n, int times)
{
	unsigned long s = 0;

	for (int k = 0; k < n; k++)
		s += (unsigned char)d[k];
	return s * (unsigned long)times + (unsigned long)(n * times) * 131UL;
}

static NOINLINE void throw_new()
{
	char *p = new char[big];

	sink += (unsigned long)p;
	delete[] p;
}

static NOINLINE std::string make(const worker &w, unsigned long r, int i)
{
	char d[32];
	int n = digits(w, r, i, d, sizeof(d));
	std::string s;

	for (int k = 0; k <= i % 5; k++)
		s.append(d, (size_t)n);
	return s;
}

static NOINLINE unsigned long build(const worker &w, unsigned long r)
{
	std::vector<std::string> v;
	unsigned long s = 0;

	for (int i = 0; i < STRINGS; i++)
		v.push_back(make(w, r, i));
	for (const std::string &x : v)
		s += weigh(x.data(), (int)x.size(), 1);
	return s;
}

static thread_local unsigned long compared;

static NOINLINE int compare_cb(const void *a, const void *b)
{
	std::string *p = new std::string(40, 'c');

	sink += p->size();
	delete p;
	if (++compared % 5 == 0)
		throw std::runtime_error(std::string(48, 'x') + " from inside qsort");
	return *(const int *)a - *(const int *)b;
}

static NOINLINE void in_qsort()
{
	int v[8] = { 5, 3, 7, 1, 8, 2, 6, 4 };

	qsort(v, 8, sizeof(v[0]), compare_cb);
}

static void round(worker &w)
{
	unsigned long r = w.rounds;
	std::string &old = w.kept[r % KEPT];

	try {
		throw_new();
	} catch (std::bad_alloc &) {
		w.caught++;
	}
	w.sum += build(w, r);
	try {
		in_qsort();
	} catch (std::runtime_error &e) {
		w.caught += std::string(e.what()).size() == 66;
	}
	/* the kept string this one replaces was made KEPT rounds ago */
	if (r >= KEPT && old != make(w, r - KEPT, (int)(r % STRINGS)))
		w.failed++;
	old = make(w, r, (int)(r % STRINGS));
	w.rounds++;
}

static void *work(void *arg)
{
	worker &w = *(worker *)arg;

	while (!stop.load(std::memory_order_relaxed)) {
		round(w);
		if (pause_us)
			usleep((useconds_t)pause_us);
	}
	return nullptr;
}

/* what the rounds must have given, recomputed without allocating */
static unsigned long verify(const worker &w)
{
	unsigned long r, s = 0, failed = w.failed;
	char d[32];

	for (r = 0; r < w.rounds; r++)
		for (int i = 0; i < STRINGS; i++)
			s += weigh(d, digits(w, r, i, d, sizeof(d)), i % 5 + 1);
	failed += s != w.sum;
	failed += w.caught != 2 * w.rounds;
	for (r = w.rounds > KEPT ? w.rounds - KEPT : 0; r < w.rounds; r++) {
		const std::string &k = w.kept[r % KEPT];
		int n = digits(w, r, (int)(r % STRINGS), d, sizeof(d));

		failed += weigh(k.data(), (int)k.size(), 1) != weigh(d, n, (int)(r % STRINGS) % 5 + 1);
	}
	return failed;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], nullptr, 10) : 63, i;
	unsigned long rounds = 0, caught = 0, failed = 0;
	std::vector<worker> ws(n);
	sigset_t set;
	int sig;

	pause_us = argc > 2 ? strtoul(argv[2], nullptr, 10) : 0;
	/* blocked before the workers start: they inherit it, and SIGUSR1 waits for sigwait */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, nullptr);
	for (i = 0; i < n; i++) {
		ws[i].id = i;
		ws[i].kept.resize(KEPT);
		if (pthread_create(&ws[i].thread, nullptr, work, &ws[i])) {
			perror("pthread_create");
			return 2;
		}
	}
	printf("pid %d ready\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	stop = true;
	for (i = 0; i < n; i++) {
		pthread_join(ws[i].thread, nullptr);
		rounds += ws[i].rounds;
		caught += ws[i].caught;
		failed += verify(ws[i]);
	}
	printf("workers %lu rounds %lu caught %lu failed %lu\n", n, rounds, caught, failed);
	return failed || caught != 2 * rounds || !rounds;
}
