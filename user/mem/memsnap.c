// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "memfmt.h"
#include "memsnap.h"
#include "memstats.h"
#include "session.h"

int memsnap__add(struct session *s, const char *prefix, struct memstats *keep)
{
	struct memstats *m = keep ?: malloc(sizeof(*m));
	char err[512];
	int ret;

	if (!m)
		return -ENOMEM;
	ret = memstats__read(session__pid(s), m, err, sizeof(err));
	if (ret)
		pr_warn("no %s memory picture in the profile: %s\n", prefix, err);
	else
		ret = memfmt_comments(m, prefix, session__add_comment_cb, s);
	if (m != keep)
		free(m);
	return ret;
}
