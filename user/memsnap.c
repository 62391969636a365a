// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "memfmt.h"
#include "memsnap.h"
#include "memstats.h"
#include "session.h"

static int add_comment(void *ctx, const char *comment)
{
	return session__add_comment(ctx, comment);
}

int memsnap__add(struct session *s, const char *prefix, struct memstats *keep)
{
	struct memstats *m = malloc(sizeof(*m));
	char err[512];
	int ret;

	if (!m)
		return -ENOMEM;
	ret = memstats__read(session__pid(s), m, err, sizeof(err));
	if (ret)
		pr_warn("no %s memory picture in the profile: %s\n", prefix, err);
	else
		ret = memfmt_comments(m, prefix, add_comment, s);
	if (!ret && keep)
		memcpy(keep, m, sizeof(*m));
	free(m);
	return ret;
}
