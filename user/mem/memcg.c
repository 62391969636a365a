// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "container.h"
#include "memcg.h"
#include "readfile.h"

/* one file each; "max" means no limit (MEM_UNLIMITED).  working_set is derived. */
static const struct mem_field memory_fields[] = {
	{ "memory.current", "current_bytes", MEM_UNIT_BYTES, "Memory charged to the cgroup (memory.current)." },
	{ "memory.peak", "peak_bytes", MEM_UNIT_BYTES, "Highest memory.current seen (memory.peak)." },
	{ "memory.max", "max_bytes", MEM_UNIT_BYTES, "Hard limit (memory.max); +Inf when unlimited." },
	{ "memory.high", "high_bytes", MEM_UNIT_BYTES, "Throttling limit (memory.high); +Inf when unlimited." },
	{ "memory.swap.current", "swap_current_bytes", MEM_UNIT_BYTES, "Swap charged to the cgroup (memory.swap.current)." },
	{ NULL, "working_set_bytes", MEM_UNIT_BYTES, "memory.current minus inactive_file: what the kernel cannot easily reclaim." },
};

#define STAT_BYTES(k, h) { #k, #k "_bytes", MEM_UNIT_BYTES, h }
#define STAT_EVENTS(k, h) { #k, #k, MEM_UNIT_EVENTS, h }
static const struct mem_field stat_fields[] = {
	STAT_BYTES(anon, "Anonymous memory (memory.stat anon)."),
	STAT_BYTES(file, "Page cache (memory.stat file)."),
	STAT_BYTES(kernel, "Kernel memory (memory.stat kernel)."),
	STAT_BYTES(kernel_stack, "Kernel stacks (memory.stat kernel_stack)."),
	STAT_BYTES(pagetables, "Page tables (memory.stat pagetables)."),
	STAT_BYTES(sec_pagetables, "Secondary page tables (memory.stat sec_pagetables)."),
	STAT_BYTES(percpu, "Per-cpu kernel memory (memory.stat percpu)."),
	STAT_BYTES(sock, "Network buffers (memory.stat sock)."),
	STAT_BYTES(vmalloc, "vmalloc memory (memory.stat vmalloc)."),
	STAT_BYTES(shmem, "Shared memory and tmpfs (memory.stat shmem)."),
	STAT_BYTES(zswap, "Compressed swap cache (memory.stat zswap)."),
	STAT_BYTES(zswapped, "Memory swapped out to zswap (memory.stat zswapped)."),
	STAT_BYTES(file_mapped, "Page cache mapped into processes (memory.stat file_mapped)."),
	STAT_BYTES(file_dirty, "Dirty page cache (memory.stat file_dirty)."),
	STAT_BYTES(file_writeback, "Page cache under writeback (memory.stat file_writeback)."),
	STAT_BYTES(swapcached, "Swap cached in memory (memory.stat swapcached)."),
	STAT_BYTES(anon_thp, "Anonymous transparent huge pages (memory.stat anon_thp)."),
	STAT_BYTES(file_thp, "File transparent huge pages (memory.stat file_thp)."),
	STAT_BYTES(shmem_thp, "Shared memory transparent huge pages (memory.stat shmem_thp)."),
	STAT_BYTES(inactive_anon, "Inactive anonymous memory (memory.stat inactive_anon)."),
	STAT_BYTES(active_anon, "Active anonymous memory (memory.stat active_anon)."),
	STAT_BYTES(inactive_file, "Inactive page cache (memory.stat inactive_file)."),
	STAT_BYTES(active_file, "Active page cache (memory.stat active_file)."),
	STAT_BYTES(unevictable, "Unevictable memory (memory.stat unevictable)."),
	STAT_BYTES(slab_reclaimable, "Reclaimable slab (memory.stat slab_reclaimable)."),
	STAT_BYTES(slab_unreclaimable, "Unreclaimable slab (memory.stat slab_unreclaimable)."),
	STAT_BYTES(slab, "Slab memory (memory.stat slab)."),
	STAT_EVENTS(workingset_refault_anon, "Refaults of evicted anonymous pages."),
	STAT_EVENTS(workingset_refault_file, "Refaults of evicted file pages."),
	STAT_EVENTS(workingset_activate_anon, "Refaulted anonymous pages activated at once."),
	STAT_EVENTS(workingset_activate_file, "Refaulted file pages activated at once."),
	STAT_EVENTS(workingset_restore_anon, "Refaulted anonymous pages that were part of the working set."),
	STAT_EVENTS(workingset_restore_file, "Refaulted file pages that were part of the working set."),
	STAT_EVENTS(workingset_nodereclaim, "Shadow nodes reclaimed."),
	STAT_EVENTS(pgscan, "Pages scanned by reclaim."),
	STAT_EVENTS(pgsteal, "Pages reclaimed."),
	STAT_EVENTS(pgfault, "Page faults."),
	STAT_EVENTS(pgmajfault, "Major page faults."),
	STAT_EVENTS(pgrefill, "Pages scanned on the active list."),
	STAT_EVENTS(pgactivate, "Pages moved to the active list."),
	STAT_EVENTS(pgdeactivate, "Pages moved to the inactive list."),
	STAT_EVENTS(thp_fault_alloc, "Transparent huge pages allocated at fault."),
	STAT_EVENTS(thp_collapse_alloc, "Transparent huge pages allocated by collapsing."),
};

static const struct mem_field events_fields[] = {
	STAT_EVENTS(low, "Times usage was reclaimed while under memory.low."),
	STAT_EVENTS(high, "Times the cgroup was throttled over memory.high."),
	STAT_EVENTS(max, "Times usage was about to exceed memory.max."),
	STAT_EVENTS(oom, "Times an allocation hit memory.max and reclaim failed."),
	STAT_EVENTS(oom_kill, "Processes of the cgroup killed by the OOM killer."),
	STAT_EVENTS(oom_group_kill, "Times the whole cgroup was OOM-killed."),
};

const struct mem_section memcg_memory_section = MEM_SECTION(memory_fields);
const struct mem_section memcg_stat_section = MEM_SECTION(stat_fields);
const struct mem_section memcg_events_section = MEM_SECTION(events_fields);

static bool is_octal(char c)
{
	return c >= '0' && c <= '7';
}

/* mountinfo escapes blanks and backslashes in paths as \ooo */
static void unescape(const char *s, size_t n, char *out, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 1 < len; i++) {
		if (s[i] == '\\' && i + 3 < n && is_octal(s[i + 1]) && is_octal(s[i + 2]) &&
		    is_octal(s[i + 3])) {
			out[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = 0;
}

/* the n-th blank-separated field of line: its start and length */
static const char *field(const char *line, int n, size_t *len)
{
	const char *p = line;

	for (; n > 0; n--) {
		p += strcspn(p, " \n");
		if (*p != ' ')
			return NULL;
		p++;
	}
	*len = strcspn(p, " \n");
	return p;
}

int memcg_parse_mountinfo(const char *text, char *mnt, size_t mntlen, char *root, size_t rootlen)
{
	const char *line, *sep, *f;
	size_t len;

	/* "36 25 0:30 / /sys/fs/cgroup rw,... shared:9 - cgroup2 cgroup2 rw" */
	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		sep = strstr(line, " - ");
		if (!sep || sep > line + strcspn(line, "\n") || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		f = field(line, 3, &len);
		if (!f)
			continue;
		unescape(f, len, root, rootlen);
		f = field(line, 4, &len);
		if (!f)
			continue;
		unescape(f, len, mnt, mntlen);
		return 0;
	}
	return -ENOENT;
}

int memcg_parse_proc_cgroup(const char *text, char *path, size_t len, bool *v1_memory)
{
	const char *line, *ctrl;
	size_t n;
	int ret = -ENOENT;

	*v1_memory = false;
	/* "hierarchy-id:controllers:path"; v2 is "0::path" */
	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		n = strcspn(line, "\n");
		if (!strncmp(line, "0::", 3)) {
			snprintf(path, len, "%.*s", (int)(n - 3), line + 3);
			ret = 0;
			continue;
		}
		ctrl = memchr(line, ':', n);
		if (!ctrl)
			continue;
		ctrl++;
		n = strcspn(ctrl, ":\n");
		for (const char *c = ctrl; c < ctrl + n; c += strcspn(c, ",:") + 1)
			if (!strncmp(c, "memory", 6) && (c[6] == ',' || c[6] == ':'))
				*v1_memory = true;
	}
	return ret;
}

int memcg_parse_pressure(const char *text, struct mem_pressure *p)
{
	const char *line;
	int which, got = 0;

	memset(p, 0, sizeof(*p));
	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		double a10, a60, a300;
		unsigned long long total;

		if (!strncmp(line, "some ", 5))
			which = 0;
		else if (!strncmp(line, "full ", 5))
			which = 1;
		else
			continue;
		if (sscanf(line + 5, "avg10=%lf avg60=%lf avg300=%lf total=%llu", &a10, &a60, &a300,
			   &total) != 4)
			return -EINVAL;
		p->avg[which][0] = a10;
		p->avg[which][1] = a60;
		p->avg[which][2] = a300;
		p->total_us[which] = total;
		got |= 1 << which;
	}
	if (!(got & 1))
		return -EINVAL;
	p->has_full = got & 2;
	p->present = true;
	return 0;
}

/* one number or "max"; false when the file is missing or holds something else */
static bool read_value(int dfd, const char *file, uint64_t *out)
{
	char *text, *end;
	bool ok = false;

	if (read_file_at(dfd, file, &text, NULL))
		return false;
	if (!strncmp(text, "max", 3) && (text[3] == '\n' || !text[3])) {
		*out = MEM_UNLIMITED;
		ok = true;
	} else if (isdigit((unsigned char)text[0])) {
		errno = 0;
		*out = strtoull(text, &end, 10);
		ok = !errno && (*end == '\n' || !*end);
	}
	free(text);
	return ok;
}

static bool read_keyed(int dfd, const char *file, const struct mem_section *s,
		       struct mem_values *out)
{
	char *text;

	if (read_file_at(dfd, file, &text, NULL))
		return false;
	mem_parse_keyed(text, s, out);
	free(text);
	return true;
}

/* does the cgroup.controllers file of the cgroup list "memory"? */
static bool has_memory_controller(int dfd)
{
	char *text;
	bool found;

	if (read_file_at(dfd, "cgroup.controllers", &text, NULL))
		return false;
	found = mem_has_word(text, "memory");
	free(text);
	return found;
}

static void __attribute__((format(printf, 2, 3))) absent(struct mem_cgroup *cg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cg->absent, sizeof(cg->absent), fmt, ap);
	va_end(ap);
	cg->memory = false;
}

/* the cgroup's files, read through dfd (its directory); -1: none can be read */
static void read_cgroup(int dfd, const char *dir, const char *path, bool v1_memory,
			struct mem_cgroup *cg)
{
	const struct mem_section *s = &memcg_memory_section;
	uint64_t current, inactive;
	char *text;
	size_t i;

	/* pressure stall information is the cgroup core's: there with or without the memory controller */
	if (!read_file_at(dfd, "memory.pressure", &text, NULL)) {
		memcg_parse_pressure(text, &cg->pressure);
		free(text);
	}
	/* the root cgroup lists the controllers v2 has, so this also answers for it */
	if (!has_memory_controller(dfd)) {
		if (v1_memory)
			absent(cg, "the memory controller is on a cgroup v1 hierarchy here (hybrid "
			       "mode); cgroup v1 files are not read");
		else
			absent(cg, "the memory controller is not enabled for %s (it is not in the "
			       "parent's cgroup.subtree_control)", path);
		return;
	}
	if (!strcmp(path, "/")) {
		absent(cg, "the process is in the root cgroup, which has no memory.current, "
		       "memory.max or memory.events");
		return;
	}
	for (i = 0; i < s->n; i++) {
		uint64_t v;

		if (s->fields[i].key && read_value(dfd, s->fields[i].key, &v))
			mem_set(&cg->mem, (int)i, v);
	}
	if (!mem_get(s, &cg->mem, "current_bytes", &current)) {
		absent(cg, "cannot read %s/memory.current", dir);
		return;
	}
	read_keyed(dfd, "memory.stat", &memcg_stat_section, &cg->stat);
	read_keyed(dfd, "memory.events", &memcg_events_section, &cg->events);
	if (mem_get(&memcg_stat_section, &cg->stat, "inactive_file_bytes", &inactive))
		mem_set(&cg->mem, mem_section__index(s, "working_set_bytes"),
			current > inactive ? current - inactive : 0);
	cg->memory = true;
	cg->absent[0] = 0;
}

void memcg__read_dir(const char *dir, const char *path, bool v1_memory, struct mem_cgroup *cg)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	snprintf(cg->path, sizeof(cg->path), "%s", path);
	container_id_of_path(path, cg->container_id, sizeof(cg->container_id));
	read_cgroup(dfd, dir, path, v1_memory, cg);
	if (dfd >= 0)
		close(dfd);
}

/* where the cgroup called path is, under the v2 mount that shows cgroup `root` at mnt */
static int cgroup_dir(const char *mnt, const char *root, const char *path, char *out, size_t len)
{
	size_t rl = strlen(root);
	int n;

	if (strcmp(root, "/") && !strncmp(path, root, rl) && (path[rl] == '/' || !path[rl]))
		path += rl;
	n = snprintf(out, len, "%s%s", mnt, path);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void memcg__read(int procfd, struct mem_cgroup *cg)
{
	char *text = NULL, mnt[PATH_MAX], root[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];
	bool v1_memory = false;
	struct stat st;
	int ret;

	memset(cg, 0, sizeof(*cg));
	ret = read_file_at(procfd, "cgroup", &text, NULL);
	if (!ret)
		ret = memcg_parse_proc_cgroup(text, path, sizeof(path), &v1_memory);
	free(text);
	if (ret) {
		absent(cg, "the process is in no cgroup v2 cgroup (cgroup v1 only: not read)");
		return;
	}
	snprintf(cg->path, sizeof(cg->path), "%s", path);
	container_id_of_path(path, cg->container_id, sizeof(cg->container_id));
	text = NULL;
	ret = read_file_at(AT_FDCWD, "/proc/self/mountinfo", &text, NULL);
	if (!ret)
		ret = memcg_parse_mountinfo(text, mnt, sizeof(mnt), root, sizeof(root));
	free(text);
	if (ret) {
		absent(cg, "no cgroup v2 hierarchy is mounted here (cgroup v1 is not read)");
		return;
	}
	if (cgroup_dir(mnt, root, path, dir, sizeof(dir)) || stat(dir, &st)) {
		absent(cg, "its cgroup %s is not visible under %s (another cgroup namespace?)", path,
		       mnt);
		return;
	}
	memcg__read_dir(dir, path, v1_memory, cg);
}
