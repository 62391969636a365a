// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork and exec while other threads allocate: four threads allocate,
 * grow and free checked blocks without pause while the main thread forks
 * CHILDREN times.  Each child allocates and frees checked blocks,
 * including blocks it inherited, and exits with the number of failed
 * checks; every fourth child execs `sh -c 'exit 0'` instead, which runs
 * under the same LD_PRELOAD.
 *
 *   sampler_fork [CHILDREN]
 *
 * Prints "children N ok M" and "checks N failed M" (failed counts the
 * children that did not exit 0, too).  The forked children exit through
 * exit(), so a sampler's exit line is written by each.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define KEPT 256

static volatile int stop;
static unsigned long checks, failed;
static unsigned char *kept[KEPT];

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* allocate, fill, grow, check, free; the number of failed checks */
static unsigned long churn(unsigned long n, unsigned int seed)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++) {
		size_t size = 16 + rand_r(&seed) % 20000;
		unsigned char *p = malloc(size), *q;

		if (!p) {
			bad++;
			continue;
		}
		memset(p, (int)(i & 0xff), size);
		q = realloc(p, size * 2);
		if (!q || !filled(q, size, (unsigned char)(i & 0xff)))
			bad++;
		free(q ? q : p);
	}
	return bad;
}

static void *worker(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	unsigned long bad = 0;

	while (!stop)
		bad += churn(100, seed++);
	return (void *)bad;
}

static int child(int i)
{
	unsigned long bad = churn(2000, (unsigned int)i);

	/* what the parent left is the child's to check and free */
	for (int k = 0; k < KEPT; k++) {
		if (!filled(kept[k], 100 + k, (unsigned char)k))
			bad++;
		free(kept[k]);
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	int children = argc > 1 ? atoi(argv[1]) : 40, ok = 0, status;
	pthread_t th[THREADS];
	void *bad;

	for (int k = 0; k < KEPT; k++) {
		kept[k] = malloc(100 + k);
		memset(kept[k], k, 100 + k);
	}
	for (uintptr_t t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(t + 1));
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			if (i % 4 == 3) {
				execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
				_exit(127);
			}
			/* exit, not _exit: the child's own sampler exit line is written */
			exit(child(i));
		}
		checks++;
		if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    !WEXITSTATUS(status))
			ok++;
		else
			failed++;
	}
	stop = 1;
	for (int t = 0; t < THREADS; t++) {
		pthread_join(th[t], &bad);
		checks++;
		failed += (unsigned long)bad != 0;
	}
	for (int k = 0; k < KEPT; k++) {
		checks++;
		failed += !filled(kept[k], 100 + k, (unsigned char)k);
		free(kept[k]);
	}
	printf("children %d ok %d\n", children, ok);
	printf("checks %lu failed %lu\n", checks, failed);
	return failed != 0;
}
