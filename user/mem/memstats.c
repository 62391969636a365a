// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "memcg.h"
#include "memstats.h"
#include "procmaps.h"
#include "readfile.h"

static const struct mem_field rollup_fields[] = {
	{ "Rss", "rss_bytes", MEM_UNIT_KB, "Resident set size (smaps_rollup Rss)." },
	{ "Pss", "pss_bytes", MEM_UNIT_KB, "Proportional set size: shared pages divided among their users." },
	{ "Pss_Dirty", "pss_dirty_bytes", MEM_UNIT_KB, "Proportional set size of dirty pages." },
	{ "Pss_Anon", "pss_anon_bytes", MEM_UNIT_KB, "Proportional set size of anonymous pages." },
	{ "Pss_File", "pss_file_bytes", MEM_UNIT_KB, "Proportional set size of file pages." },
	{ "Pss_Shmem", "pss_shmem_bytes", MEM_UNIT_KB, "Proportional set size of shared memory pages." },
	{ "Shared_Clean", "shared_clean_bytes", MEM_UNIT_KB, "Clean pages also mapped by other processes." },
	{ "Shared_Dirty", "shared_dirty_bytes", MEM_UNIT_KB, "Dirty pages also mapped by other processes." },
	{ "Private_Clean", "private_clean_bytes", MEM_UNIT_KB, "Clean pages mapped by this process only." },
	{ "Private_Dirty", "private_dirty_bytes", MEM_UNIT_KB, "Dirty pages mapped by this process only." },
	{ "Referenced", "referenced_bytes", MEM_UNIT_KB, "Pages marked referenced (accessed recently)." },
	{ "Anonymous", "anonymous_bytes", MEM_UNIT_KB, "Resident anonymous pages (heap, stacks, anonymous mmap, copy-on-write)." },
	{ "KSM", "ksm_bytes", MEM_UNIT_KB, "Pages merged by KSM." },
	{ "LazyFree", "lazy_free_bytes", MEM_UNIT_KB, "Pages released with MADV_FREE, not yet reclaimed." },
	{ "AnonHugePages", "anon_huge_pages_bytes", MEM_UNIT_KB, "Anonymous memory in transparent huge pages." },
	{ "ShmemPmdMapped", "shmem_pmd_mapped_bytes", MEM_UNIT_KB, "Shared memory mapped with huge pages." },
	{ "FilePmdMapped", "file_pmd_mapped_bytes", MEM_UNIT_KB, "File pages mapped with huge pages." },
	{ "Shared_Hugetlb", "shared_hugetlb_bytes", MEM_UNIT_KB, "Shared hugetlbfs pages." },
	{ "Private_Hugetlb", "private_hugetlb_bytes", MEM_UNIT_KB, "Private hugetlbfs pages." },
	{ "Swap", "swap_bytes", MEM_UNIT_KB, "Anonymous memory swapped out." },
	{ "SwapPss", "swap_pss_bytes", MEM_UNIT_KB, "Proportional share of swapped out memory." },
	{ "Locked", "locked_bytes", MEM_UNIT_KB, "Pages locked in memory (mlock)." },
};

static const struct mem_field status_fields[] = {
	{ "VmPeak", "vm_peak_bytes", MEM_UNIT_KB, "Peak virtual memory size (status VmPeak)." },
	{ "VmSize", "vm_size_bytes", MEM_UNIT_KB, "Virtual memory size (status VmSize)." },
	{ "VmHWM", "vm_hwm_bytes", MEM_UNIT_KB, "Peak resident set size (status VmHWM)." },
	{ "VmRSS", "vm_rss_bytes", MEM_UNIT_KB, "Resident set size (status VmRSS)." },
	{ "RssAnon", "rss_anon_bytes", MEM_UNIT_KB, "Resident anonymous memory (status RssAnon)." },
	{ "RssFile", "rss_file_bytes", MEM_UNIT_KB, "Resident file mappings (status RssFile)." },
	{ "RssShmem", "rss_shmem_bytes", MEM_UNIT_KB, "Resident shared memory (status RssShmem)." },
	{ "VmData", "vm_data_bytes", MEM_UNIT_KB, "Size of private data mappings (status VmData)." },
	{ "VmStk", "vm_stack_bytes", MEM_UNIT_KB, "Size of the main stack (status VmStk)." },
	{ "VmPTE", "vm_pte_bytes", MEM_UNIT_KB, "Page table size (status VmPTE)." },
	{ "VmSwap", "vm_swap_bytes", MEM_UNIT_KB, "Swapped out anonymous memory (status VmSwap)." },
	{ "Threads", "threads", MEM_UNIT_COUNT, "Number of threads." },
};

/* keys are those of one smaps entry; "count" is ours */
static const struct mem_field kind_fields[] = {
	[MEM_KIND_F_COUNT] = { NULL, "count", MEM_UNIT_COUNT, "Number of mappings of this kind." },
	[MEM_KIND_F_SIZE] = { "Size", "size_bytes", MEM_UNIT_KB, "Virtual size of the mappings of this kind." },
	[MEM_KIND_F_RSS] = { "Rss", "rss_bytes", MEM_UNIT_KB, "Resident memory of the mappings of this kind." },
	[MEM_KIND_F_PSS] = { "Pss", "pss_bytes", MEM_UNIT_KB, "Proportional set size of the mappings of this kind." },
	[MEM_KIND_F_SWAP] = { "Swap", "swap_bytes", MEM_UNIT_KB, "Swapped out memory of the mappings of this kind." },
	[MEM_KIND_F_ANON_HUGE] = { "AnonHugePages", "anon_huge_pages_bytes", MEM_UNIT_KB, "Transparent huge pages in the mappings of this kind." },
};

const struct mem_section mem_rollup_section = MEM_SECTION(rollup_fields);
const struct mem_section mem_status_section = MEM_SECTION(status_fields);
const struct mem_section mem_kind_section = MEM_SECTION(kind_fields);

const char *const mem_kind_names[MEM_KIND__MAX] = {
	[MEM_KIND_HEAP] = "heap",
	[MEM_KIND_ANON] = "anon",
	[MEM_KIND_FILE] = "file",
	[MEM_KIND_STACK] = "stack",
	[MEM_KIND_SHMEM] = "shmem",
	[MEM_KIND_HUGE] = "huge",
	[MEM_KIND_OTHER] = "other",
};

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

enum mem_kind mem_classify(const char *path, const char *vmflags)
{
	if (mem_has_word(vmflags, "ht"))
		return MEM_KIND_HUGE;
	/* shmem/tmpfs behind a shared mapping; a shared mapping of a regular file is file */
	if (mem_has_word(vmflags, "sh") &&
	    (!*path || starts_with(path, "/dev/zero") || starts_with(path, "/memfd:") ||
	     starts_with(path, "/SYSV") || starts_with(path, "/dev/shm/")))
		return MEM_KIND_SHMEM;
	if (!strcmp(path, "[heap]"))
		return MEM_KIND_HEAP;
	if (!strcmp(path, "[stack]"))
		return MEM_KIND_STACK;
	if (!*path || starts_with(path, "[anon:") || starts_with(path, "[anon_shmem:"))
		return MEM_KIND_ANON;
	if (path[0] == '[')
		return MEM_KIND_OTHER;
	return MEM_KIND_FILE;
}

/* an smaps entry's header line: it starts with "start-end " in hex */
static bool is_header(const char *line)
{
	size_t n = strspn(line, "0123456789abcdef");

	return n && line[n] == '-';
}

/* the values of one entry, kept until the next header (VmFlags ends an entry, but may be absent) */
struct smaps_entry {
	bool open;
	char *path;
	char flags[256];
	struct mem_values v;
};

static void entry_close(struct smaps_entry *e, struct mem_values kinds[MEM_KIND__MAX])
{
	struct mem_values *k;
	size_t i;

	if (!e->open)
		return;
	k = &kinds[mem_classify(e->path, e->flags)];
	mem_set(k, MEM_KIND_F_COUNT, k->v[MEM_KIND_F_COUNT] + 1);
	for (i = 1; i < mem_kind_section.n; i++)
		if (mem_has(&e->v, (int)i))
			mem_set(k, (int)i, k->v[i] + e->v.v[i]);
	free(e->path);
	memset(e, 0, sizeof(*e));
}

int mem_parse_smaps(const char *text, struct mem_values kinds[MEM_KIND__MAX])
{
	struct smaps_entry e = { 0 };
	const char *line;
	uint64_t seen = 0;
	size_t len;
	int ret, i;

	for (line = text; *line; line += len + (line[len] == '\n')) {
		struct procmap m;

		len = strcspn(line, "\n");
		if (!len)
			continue;
		if (!is_header(line)) {
			if (!strncmp(line, "VmFlags:", 8))
				snprintf(e.flags, sizeof(e.flags), "%.*s", (int)(len - 8), line + 8);
			else if (e.open)
				mem_parse_keyed_line(line, &mem_kind_section, &e.v);
			continue;
		}
		entry_close(&e, kinds);
		ret = procmaps__parse_line(line, len, &m);
		if (ret)
			return ret;
		e.open = true;
		e.path = m.path;
	}
	entry_close(&e, kinds);
	/* smaps was read: a kind without mappings has 0 of everything the kernel reports */
	for (i = 0; i < MEM_KIND__MAX; i++)
		seen |= kinds[i].present;
	for (i = 0; i < MEM_KIND__MAX; i++)
		kinds[i].present |= seen | 1ULL << MEM_KIND_F_COUNT;
	return 0;
}

/* "State:\tZ (zombie)": the process is gone, only its entry is left */
static bool status_dead(const char *status)
{
	const char *p = strstr(status, "\nState:");

	if (!p)
		return true;
	p += 7 + strspn(p + 7, " \t");
	return *p == 'Z' || *p == 'X';
}

static int proc_error(pid_t pid, const char *comm, const char *file, int err, char *msg,
		      size_t len)
{
	if (err == -ENOENT || err == -ESRCH)
		snprintf(msg, len, "pid %d%s%s%s has exited: its memory can no longer be read", (int)pid,
			 *comm ? " (" : "", comm, *comm ? ")" : "");
	else if (err == -EACCES || err == -EPERM)
		snprintf(msg, len, "cannot read /proc/%d/%s: %s; reading another user's process "
			 "needs root or CAP_SYS_PTRACE", (int)pid, file, strerror(-err));
	else
		snprintf(msg, len, "cannot read /proc/%d/%s: %s", (int)pid, file, strerror(-err));
	return err == -ENOENT ? -ESRCH : err;
}

/* the three /proc files of the process, through one directory fd */
static int read_proc(int dirfd, struct memstats *m, char *err, size_t errlen)
{
	/* status first: it tells a kernel thread, whose smaps cannot be opened */
	enum { STATUS, ROLLUP, SMAPS, N_FILES };
	static const char *const files[N_FILES] = { "status", "smaps_rollup", "smaps" };
	char *text[N_FILES] = { NULL, NULL, NULL };
	size_t len[N_FILES];
	int ret = 0, i;

	for (i = 0; i < N_FILES && !ret; i++) {
		ret = read_file_at(dirfd, files[i], &text[i], &len[i]);
		if (!ret && i == STATUS && strstr(text[i], "\nKthread:\t1")) {
			snprintf(err, errlen, "pid %d (%s) is a kernel thread: it has no user-space "
				 "memory", (int)m->pid, m->comm);
			ret = -EINVAL;
		} else if (ret) {
			ret = proc_error(m->pid, m->comm, files[i], ret, err, errlen);
		}
	}
	/* a process that exits mid-read leaves empty smaps and a status without Vm* lines */
	if (!ret && (!len[ROLLUP] || !len[SMAPS] || status_dead(text[STATUS])))
		ret = proc_error(m->pid, m->comm, "smaps", -ESRCH, err, errlen);
	if (!ret) {
		mem_parse_keyed(text[ROLLUP], &mem_rollup_section, &m->rollup);
		mem_parse_keyed(text[STATUS], &mem_status_section, &m->status);
		if (mem_parse_smaps(text[SMAPS], m->kinds)) {
			snprintf(err, errlen, "cannot parse /proc/%d/smaps: unexpected line", (int)m->pid);
			ret = -EINVAL;
		}
	}
	for (i = 0; i < N_FILES; i++)
		free(text[i]);
	return ret;
}

int memstats__read(pid_t pid, struct memstats *m, char *err, size_t errlen)
{
	char path[64], *comm;
	int dirfd, ret;

	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->time_ns = (int64_t)clock_ns(CLOCK_REALTIME);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	/* openat() through this fd fails with ESRCH once the process is gone, even if the pid is reused */
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		snprintf(err, errlen, "no process with pid %d (has it exited? check with 'ps -p %d')",
			 (int)pid, (int)pid);
		return -ESRCH;
	}
	if (!read_file_at(dirfd, "comm", &comm, NULL)) {
		snprintf(m->comm, sizeof(m->comm), "%.*s", (int)strcspn(comm, "\n"), comm);
		free(comm);
	}
	ret = read_proc(dirfd, m, err, errlen);
	if (!ret)
		memcg__read(dirfd, &m->cg);
	close(dirfd);
	return ret;
}
