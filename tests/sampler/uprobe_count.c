// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Count the hits of an object's USDT probes in a command, with no BPF and
 * no tracefs: one counting perf event of the kernel's uprobe PMU per probe
 * of PROVIDER in OBJECT, each with the probe's semaphore as its reference
 * counter, so the kernel raises the semaphore as a profiler's attach does.
 *
 *   uprobe_count OBJECT PROVIDER -- CMD [ARGS...]
 *
 * Runs CMD, then prints
 * "probe NAME hits N" per probe and exits with CMD's status.  Needs root.
 *
 * Only CMD's main thread is counted, though the semaphores are up for the
 * whole process: an inherited uprobe event is set up again in each new
 * task from the path pointer given here, which the kernel then reads in
 * the forking process, where it means nothing (fork fails with EFAULT).
 * A fork child keeps the raised semaphores it was copied with.
 */
#include <elf.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "perfuprobe.h"

#define MAX_PROBES 16

struct probe {
	char name[64];
	uint64_t pc_off, sema_off;
	int fd;
};

/* the file offset of link-time address `addr`, from the section that holds it */
static uint64_t file_offset(const Elf64_Ehdr *eh, uint64_t addr)
{
	const Elf64_Shdr *sh = (const void *)((const char *)eh + eh->e_shoff);
	int i;

	for (i = 0; i < eh->e_shnum; i++)
		if ((sh[i].sh_flags & SHF_ALLOC) && sh[i].sh_type != SHT_NOBITS &&
		    addr >= sh[i].sh_addr && addr < sh[i].sh_addr + sh[i].sh_size)
			return addr - sh[i].sh_addr + sh[i].sh_offset;
	return 0;
}

static int read_notes(const char *path, const char *provider, struct probe *pr)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const char *strtab;
	struct stat st;
	int fd, i, n = 0;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return -1;
	eh = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (eh == MAP_FAILED || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return -1;
	sh = (const void *)((const char *)eh + eh->e_shoff);
	strtab = (const char *)eh + sh[eh->e_shstrndx].sh_offset;
	for (i = 0; i < eh->e_shnum; i++) {
		const char *p = (const char *)eh + sh[i].sh_offset, *end = p + sh[i].sh_size;

		if (sh[i].sh_type != SHT_NOTE || strcmp(strtab + sh[i].sh_name, ".note.stapsdt"))
			continue;
		while (p + sizeof(Elf64_Nhdr) <= end && n < MAX_PROBES) {
			const Elf64_Nhdr *nh = (const void *)p;
			const char *desc = p + sizeof(*nh) + ((nh->n_namesz + 3) & ~3U);
			const uint64_t *addr = (const void *)desc;
			const char *prov = desc + 24, *name = prov + strlen(prov) + 1;

			if (nh->n_type == 3 && !strcmp(prov, provider)) {
				snprintf(pr[n].name, sizeof(pr[n].name), "%s", name);
				pr[n].pc_off = file_offset(eh, addr[0]);
				pr[n].sema_off = addr[2] ? file_offset(eh, addr[2]) : 0;
				n++;
			}
			p = desc + ((nh->n_descsz + 3) & ~3U);
		}
	}
	return n;
}

static int open_counter(int type, const char *path, const struct probe *p, pid_t pid)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (uint32_t)type;
	/* the uprobe PMU's format: ref_ctr_offset in config:32-63 */
	attr.config = p->sema_off << 32;
	attr.config1 = (uint64_t)(uintptr_t)path;
	attr.config2 = p->pc_off;
	attr.disabled = 1;
	attr.enable_on_exec = 1;
	return (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int main(int argc, char **argv)
{
	struct probe pr[MAX_PROBES];
	int go[2], type, n, i, status;
	char path[4096], c = 0;
	pid_t pid;

	if (argc < 5 || strcmp(argv[3], "--")) {
		fprintf(stderr, "usage: uprobe_count OBJECT PROVIDER -- CMD [ARGS...]\n");
		return 2;
	}
	if (!realpath(argv[1], path) || (n = read_notes(path, argv[2], pr)) <= 0) {
		fprintf(stderr, "uprobe_count: no %s probes in %s\n", argv[2], argv[1]);
		return 2;
	}
	type = perf_uprobe_pmu_type();
	if (type < 0 || pipe(go)) {
		fprintf(stderr, "uprobe_count: no uprobe PMU\n");
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		/* counting starts at the exec, once every counter is open */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[4], argv + 4);
		_exit(127);
	}
	close(go[0]);
	for (i = 0; i < n; i++) {
		pr[i].fd = open_counter(type, path, &pr[i], pid);
		if (pr[i].fd < 0) {
			perror("uprobe_count: perf_event_open");
			kill(pid, SIGKILL);
			return 2;
		}
	}
	if (write(go[1], &c, 1) != 1)
		return 2;
	close(go[1]);
	waitpid(pid, &status, 0);
	for (i = 0; i < n; i++) {
		uint64_t hits = 0;

		if (read(pr[i].fd, &hits, sizeof(hits)) != sizeof(hits))
			hits = ~0ULL;
		printf("probe %s hits %llu\n", pr[i].name, (unsigned long long)hits);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
