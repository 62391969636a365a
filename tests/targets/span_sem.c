// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reports, twice a second, the span semaphores as the program itself sees
 * them and how often a span site evaluated its arguments:
 *   "sem ENTER EXIT evals N"
 * Unprofiled, both must stay 0: the site is one load and a branch.
 */
#include <stdio.h>
#include <unistd.h>

#include <culpert/span.h>

static unsigned long evals;

static const char *counted_name(void)
{
	evals++;
	return "tick";
}

int main(void)
{
	uint64_t id = 0;

	for (;;) {
		CULPERT_SPAN_ENTER(++id, 0, counted_name(), 4);
		CULPERT_SPAN_EXIT(id);
		printf("sem %u %u evals %lu\n", culpert_span_enter_semaphore,
		       culpert_span_exit_semaphore, evals);
		fflush(stdout);
		usleep(100000);
	}
}
