// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>

#include "allocstate.h"
#include "log.h"
#include "memfmt.h"
#include "memsnap.h"
#include "memstats.h"
#include "session.h"

struct memsnap {
	struct alloc_reader *ar;
};

struct memsnap *memsnap__new(void)
{
	/* no wait for the sampler's refresh: the listener stays until the end picture */
	struct alloc_reader_opts o = { .sz = sizeof(o) };
	struct memsnap *ms = calloc(1, sizeof(*ms));

	if (!ms)
		return NULL;
	ms->ar = alloc_reader__new(&o);
	if (!ms->ar) {
		free(ms);
		return NULL;
	}
	return ms;
}

void memsnap__free(struct memsnap *ms)
{
	if (!ms)
		return;
	alloc_reader__free(ms->ar);
	free(ms);
}

int memsnap__add(struct memsnap *ms, struct session *s, const char *prefix, struct memstats *keep)
{
	struct memstats *m = keep ?: malloc(sizeof(*m));
	char err[512];
	int ret;

	if (!m)
		return -ENOMEM;
	ret = memstats__read(session__pid(s), m, err, sizeof(err));
	if (ret)
		pr_warn("no %s memory picture in the profile: %s\n", prefix, err);
	else if (ms && alloc_reader__read(ms->ar, session__pid(s), &m->alloc) == -ENOMEM)
		ret = -ENOMEM;
	if (!ret)
		ret = memfmt_comments(m, prefix, session__add_comment_cb, s);
	if (m != keep)
		free(m);
	return ret;
}
