// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memlimit.h"
#include "readfile.h"

/* a limit this high is "no limit" (v1 writes 2^63 rounded down to pages) */
#define NO_LIMIT (1ULL << 60)

static uint64_t read_u64(const char *path)
{
	char *text = NULL;
	uint64_t v = 0;
	size_t n;

	if (read_file_at(AT_FDCWD, path, &text, &n))
		return 0;
	v = strncmp(text, "max", 3) ? strtoull(text, NULL, 10) : NO_LIMIT;
	free(text);
	return v;
}

/* the value of key in a memory.stat; 0 if absent */
static uint64_t stat_value(const char *path, const char *key)
{
	size_t klen = strlen(key), n;
	char *text = NULL, *line;
	uint64_t v = 0;

	if (read_file_at(AT_FDCWD, path, &text, &n))
		return 0;
	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			v = strtoull(line + klen + 1, NULL, 10);
			break;
		}
	free(text);
	return v;
}

/*
 * The memory cgroup's directory of this process: the v1 memory line where
 * there is one (a hybrid host's v2 hierarchy has no memory controller),
 * else the v2 line.
 */
static bool cgroup_dir(char *dir, size_t len, bool *v2)
{
	char *text = NULL, *line, *nl, *path;
	bool found = false;
	size_t n;

	if (read_file_at(AT_FDCWD, "/proc/self/cgroup", &text, &n))
		return false;
	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		path = strchr(line, ':') ? strchr(strchr(line, ':') + 1, ':') : NULL;
		if (!path)
			continue;
		if (strstr(line, ":memory:")) {
			snprintf(dir, len, "/sys/fs/cgroup/memory%s", path + 1);
			*v2 = false;
			found = true;
			break;
		}
		if (!strncmp(line, "0::", 3)) {
			snprintf(dir, len, "/sys/fs/cgroup%s", path + 1);
			*v2 = true;
			found = true;
		}
	}
	free(text);
	return found;
}

static bool try_cgroup(struct memlimit *m, const char *dir, bool v2)
{
	char path[PATH_MAX + 32];
	uint64_t limit;

	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
	limit = read_u64(path);
	if (!limit || limit >= NO_LIMIT)
		return false;
	m->limit = limit;
	m->cgroup = true;
	snprintf(m->source, sizeof(m->source), "%s", path);
	snprintf(m->usage, sizeof(m->usage), "%s/%s", dir,
		 v2 ? "memory.current" : "memory.usage_in_bytes");
	snprintf(m->stat, sizeof(m->stat), "%s/memory.stat", dir);
	m->inactive = v2 ? "inactive_file" : "total_inactive_file";
	return true;
}

void memlimit__init(struct memlimit *m, uint64_t given)
{
	char dir[PATH_MAX];
	bool v2 = false;

	memset(m, 0, sizeof(*m));
	if (given) {
		m->limit = given;
		snprintf(m->source, sizeof(m->source), "--max-memory");
		return;
	}
	if (cgroup_dir(dir, sizeof(dir), &v2))
		try_cgroup(m, dir, v2);
}

uint64_t memlimit__usage(const struct memlimit *m)
{
	uint64_t usage, inactive;
	long pages, page = sysconf(_SC_PAGESIZE);
	FILE *f;

	if (!m->cgroup) {
		f = fopen("/proc/self/statm", "r");
		if (!f)
			return 0;
		if (fscanf(f, "%*s %ld", &pages) != 1)
			pages = 0;
		fclose(f);
		return (uint64_t)pages * (uint64_t)page;
	}
	usage = read_u64(m->usage);
	inactive = stat_value(m->stat, m->inactive);
	return usage > inactive ? usage - inactive : 0;
}
