// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "readfile.h"
#include "remotemem.h"

/* VmSwap of /proc/PID/status is not 0 (or cannot be read) */
static bool has_swapped(pid_t pid)
{
	char path[64], *text, *p;
	bool swapped = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file_at(AT_FDCWD, path, &text, NULL))
		return true;
	/* no VmSwap line: a kernel without swap */
	p = strstr(text, "\nVmSwap:");
	if (p)
		swapped = strtoull(p + 8, NULL, 10) != 0;
	free(text);
	return swapped;
}

int remotemem__open(struct remotemem *r, pid_t pid)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	err = procmaps__read(pid, &r->maps);
	if (err)
		return err == -ENOENT ? -ESRCH : err;
	r->cache = calloc(REMOTEMEM_CACHE_PAGES, sizeof(*r->cache));
	if (!r->cache) {
		procmaps__free(&r->maps);
		return -ENOMEM;
	}
	r->no_snapshot = has_swapped(pid);
	return 0;
}

int remotemem__reread_maps(struct remotemem *r)
{
	struct procmaps maps;
	int err = procmaps__read(r->pid, &maps);

	if (err)
		return err == -ENOENT ? -ESRCH : err;
	procmaps__free(&r->maps);
	r->maps = maps;
	return 0;
}

void remotemem__close(struct remotemem *r)
{
	procmaps__free(&r->maps);
	free(r->cache);
	free(r->snap);
	r->cache = NULL;
	r->snap = NULL;
}

void remotemem__drop_cache(struct remotemem *r)
{
	size_t i;

	for (i = 0; i < REMOTEMEM_CACHE_PAGES; i++)
		r->cache[i].addr = 0;
	r->snap_len = 0;
}

static const struct procmap *mapping_of(const struct remotemem *r, uint64_t addr, size_t len)
{
	const struct procmap *m;

	if (!len || addr + len < addr)
		return NULL;
	m = procmaps__find(&r->maps, addr);
	return m && m->readable && addr + len <= m->end ? m : NULL;
}

bool remotemem__mapped(const struct remotemem *r, uint64_t addr, size_t len)
{
	return mapping_of(r, addr, len) != NULL;
}

bool remotemem__is_heap(const struct remotemem *r, uint64_t addr, size_t len)
{
	const struct procmap *m = mapping_of(r, addr, len);

	if (!m || !m->writable)
		return false;
	return !m->path[0] || !strcmp(m->path, "[heap]") || !strncmp(m->path, "[anon:", 6);
}

int remotemem__read(struct remotemem *r, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!remotemem__mapped(r, addr, len))
		return -EFAULT;
	r->syscalls++;
	n = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : errno == EPERM ? -EPERM : -EFAULT;
	/* a partial read: the mapping went away under us */
	return (size_t)n == len ? 0 : -EFAULT;
}

int remotemem__snapshot(struct remotemem *r, uint64_t addr, size_t len)
{
	unsigned char *p;
	int err;

	r->snap_len = 0;
	if (r->no_snapshot)
		return -EPERM;
	if (len > REMOTEMEM_SNAPSHOT_MAX)
		return -E2BIG;
	if (len > r->snap_cap) {
		p = realloc(r->snap, len);
		if (!p)
			return -ENOMEM;
		r->snap = p;
		r->snap_cap = len;
	}
	err = remotemem__read(r, addr, r->snap, len);
	if (err)
		return err;
	r->snap_addr = addr;
	r->snap_len = len;
	return 0;
}

static int cached_page(struct remotemem *r, uint64_t page, const unsigned char **data)
{
	struct remotemem_page *p = &r->cache[(page / REMOTEMEM_PAGE) % REMOTEMEM_CACHE_PAGES];
	int err;

	if (p->addr != page) {
		p->addr = 0;
		err = remotemem__read(r, page, p->data, REMOTEMEM_PAGE);
		if (err)
			return err;
		p->addr = page;
	}
	*data = p->data;
	return 0;
}

int remotemem__read_cached(struct remotemem *r, uint64_t addr, void *buf, size_t len)
{
	unsigned char *out = buf;
	const unsigned char *data;
	int err;

	if (len > REMOTEMEM_PAGE)
		return -EINVAL;
	if (!remotemem__mapped(r, addr, len))
		return -EFAULT;
	if (r->snap_len && addr >= r->snap_addr && addr - r->snap_addr + len <= r->snap_len) {
		memcpy(buf, r->snap + (addr - r->snap_addr), len);
		return 0;
	}
	while (len) {
		uint64_t page = addr & ~(uint64_t)(REMOTEMEM_PAGE - 1);
		size_t off = (size_t)(addr - page), n = REMOTEMEM_PAGE - off;

		if (n > len)
			n = len;
		err = cached_page(r, page, &data);
		if (err)
			return err;
		memcpy(out, data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}
