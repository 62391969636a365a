// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A glibc heap fragmented in known ways, for culpert-bpf's allocator
 * state (tests/bpf/test_allocator_state.sh):
 *
 *   main thread  20000 blocks of 200 B, every other one freed (the
 *                unsorted bin); 3 blocks of 1 MiB (mmapped); 5000 blocks
 *                of 48 B, every other one freed (a fastbin)
 *   N threads    each in an arena of its own: 4000 blocks of 1000 B, every
 *                other one freed; thread 0 2 mmapped blocks of 512 KiB;
 *                8000 blocks of 100 B, every other one freed (a fastbin)
 *
 * Every SIGUSR2 prints malloc_info() (glibc's own view, taken under each
 * arena's lock) to the output file, then "printed N" on stdout.
 *
 *   heap_frag OUT [idle|busy|storm] [THREADS]
 *
 * idle: nothing allocates after the set-up.  busy: each thread keeps
 * allocating and freeing a few small blocks (what its tcache holds), so the
 * arenas stay as they are while the program works.  storm: each thread
 * replaces random blocks of a working set of random sizes at full speed, so
 * the bins change all the time.  The first line is "pid N ready" once every
 * thread has set up (no SIGUSR1 needed), after "live BYTES": the usable size
 * (malloc_usable_size) of every block kept.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 8
#define STORM_SET 4096

enum mode { IDLE, BUSY, STORM };

static enum mode mode = IDLE;
static pthread_barrier_t set_up;
static volatile sig_atomic_t stop;
/* usable bytes of the blocks kept, as the allocator serving malloc counts them */
static size_t live_bytes;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_live(void *p)
{
	pthread_mutex_lock(&live_lock);
	live_bytes += malloc_usable_size(p);
	pthread_mutex_unlock(&live_lock);
}
/* the output's buffers: printing must not allocate in the heap it shows (nor consolidate it) */
static char out_buf[1 << 16], stdout_buf[4096];

/* n blocks of size bytes, every other one freed; the kept ones leaked on purpose */
static void fragment(size_t n, size_t size)
{
	void **v = calloc(n, sizeof(*v));
	size_t i;

	if (!v)
		abort();
	for (i = 0; i < n; i++) {
		v[i] = malloc(size);
		if (!v[i])
			abort();
		memset(v[i], 0x5a, size);
	}
	for (i = 0; i < n; i++)
		if (i % 2)
			count_live(v[i]);
		else
			free(v[i]);
	count_live(v);
	/* the array itself stays: freeing it would coalesce with the top or a free neighbour */
}

static void mmapped(int n, size_t size)
{
	int i;

	for (i = 0; i < n; i++) {
		char *p = malloc(size);

		if (!p)
			abort();
		p[0] = 1;
		count_live(p);
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* what a thread does after its set-up, until the program ends */
static void work(uint64_t seed)
{
	void *set[STORM_SET] = { 0 };
	void *few[4];
	int i;

	while (mode == BUSY && !stop) {
		for (i = 0; i < 4; i++)
			few[i] = malloc(16 + 16 * (size_t)i);
		for (i = 0; i < 4; i++)
			free(few[i]);
		usleep(100);
	}
	while (mode == STORM && !stop) {
		size_t k = xorshift(&seed) % STORM_SET;

		free(set[k]);
		set[k] = malloc(16 + xorshift(&seed) % 2000);
	}
	while (!stop)
		pause();
}

static void *thread_main(void *arg)
{
	int idx = (int)(intptr_t)arg;

	/* the fastbin-sized blocks last: a later large request would consolidate them */
	fragment(4000, 1000);
	if (idx == 0)
		mmapped(2, 512 << 10);
	fragment(8000, 100);
	pthread_barrier_wait(&set_up);
	work(0x9e3779b97f4a7c15ULL * (uint64_t)(idx + 1));
	return NULL;
}

static void print_info(FILE *f, int n)
{
	rewind(f);
	if (ftruncate(fileno(f), 0))
		perror("ftruncate");
	malloc_info(0, f);
	fflush(f);
	printf("printed %d\n", n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	int nthreads = 3, i, sig, printed = 0;
	sigset_t set;
	FILE *f;

	if (argc < 2) {
		fprintf(stderr, "usage: heap_frag OUT [idle|busy|storm] [THREADS]\n");
		return 2;
	}
	if (argc > 2)
		mode = !strcmp(argv[2], "busy") ? BUSY : !strcmp(argv[2], "storm") ? STORM : IDLE;
	if (argc > 3)
		nthreads = atoi(argv[3]);
	if (nthreads < 0 || nthreads > MAX_THREADS)
		nthreads = 3;
	/* opened and buffered before the heap is shaped: printing later allocates nothing */
	f = fopen(argv[1], "w");
	if (!f || setvbuf(f, out_buf, _IOFBF, sizeof(out_buf)) ||
	    setvbuf(stdout, stdout_buf, _IOLBF, sizeof(stdout_buf)))
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_barrier_init(&set_up, NULL, (unsigned)nthreads + 1);
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i))
			return 1;
	fragment(20000, 200);
	mmapped(3, 1 << 20);
	fragment(5000, 48);
	pthread_barrier_wait(&set_up);
	printf("live %zu\n", live_bytes);
	printf("pid %d ready\n", (int)getpid());
	for (;;) {
		if (sigwait(&set, &sig) || sig == SIGTERM)
			break;
		print_info(f, ++printed);
	}
	stop = 1;
	return 0;
}
