/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The memory picture of every live target for /metrics (docs/agent.md,
 * "/metrics"), kept rendered: a thread of its own reads each target's
 * /proc files and allocator state once every PICTURES_REFRESH_NS while
 * /metrics is scraped, so a scrape writes what is kept and costs its bytes,
 * not a read of every target.  A target without a picture, or with one
 * older than PICTURES_MAX_AGE_NS (the first scrape, a new target, a scrape
 * after a pause), is read by the scrape itself.
 */
#ifndef CULPERT_PICTURES_H
#define CULPERT_PICTURES_H

#include <stdint.h>
#include <stdio.h>

#include "targets.h"

#define PICTURES_REFRESH_NS	(10 * 1000000000ULL)
#define PICTURES_MAX_AGE_NS	(2 * PICTURES_REFRESH_NS)
/* no scrape for this long: the thread stops reading until the next one */
#define PICTURES_IDLE_NS	(120 * 1000000000ULL)

struct pictures;

/* the thread started; NULL and errno on failure.  t must outlive it */
struct pictures *pictures__new(struct targets *t);
/* stops the thread (between two targets) and frees every picture */
void pictures__free(struct pictures *p);
/* the pictures of the live targets of v, in v's order, as one exposition; 0 or -errno */
int pictures__write(struct pictures *p, FILE *f, const struct agent_target *v, size_t n);

#endif /* CULPERT_PICTURES_H */
