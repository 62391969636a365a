// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mmapwatch.h"
#include "procmaps.h"

/*
 * Data pages per CPU.  A record is ~100 bytes and the path; the buffers
 * are read at every sample and every poll (100 ms), so 256 KiB holds the
 * mappings of ~10k dlopen calls a second; and 64 pages a CPU stay within
 * the perf_event_mlock_kb a user without CAP_IPC_LOCK may lock.
 */
#define DATA_PAGES 64

struct cpu_ring {
	int fd;
	struct perf_event_mmap_page *meta;
	const unsigned char *data;
	size_t size;			/* of data, a power of two */
};

struct mmapwatch {
	pid_t pid;
	struct cpu_ring *rings;
	int n;
	size_t page;
	uint64_t lost;
};

/* the fixed part of PERF_RECORD_MMAP2 without build IDs (include/uapi/linux/perf_event.h) */
struct mmap2_record {
	struct perf_event_header header;
	__u32 pid, tid;
	__u64 addr, len, pgoff;
	__u32 maj, min;
	__u64 ino, ino_generation;
	__u32 prot, flags;
	char filename[];
};

/* sample_id_all with PERF_SAMPLE_TID | PERF_SAMPLE_TIME: the tail of every record */
struct sample_id {
	__u32 pid, tid;
	__u64 time;
};

static int open_cpu(struct mmapwatch *w, int cpu)
{
	struct perf_event_attr a;
	struct cpu_ring *r = &w->rings[cpu];
	void *p;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	/* executable mappings only (mmap_data stays 0), with device and inode */
	a.mmap = 1;
	a.mmap2 = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	/* the clock of the BPF side's bpf_ktime_get_ns() */
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	/* a dummy event has no pid filter: per CPU, every process's mappings, ours kept */
	r->fd = (int)syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->size = DATA_PAGES * w->page;
	p = mmap(NULL, w->page + r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->meta = p;
	r->data = (const unsigned char *)p + w->page;
	return 0;
}

struct mmapwatch *mmapwatch__new(pid_t pid)
{
	struct mmapwatch *w = calloc(1, sizeof(*w));
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int i, err = 0;

	if (!w)
		return NULL;
	w->pid = pid;
	w->page = (size_t)sysconf(_SC_PAGESIZE);
	w->n = ncpu > 0 ? (int)ncpu : 1;
	w->rings = calloc((size_t)w->n, sizeof(*w->rings));
	if (!w->rings)
		err = -ENOMEM;
	for (i = 0; !err && i < w->n; i++)
		w->rings[i].fd = -1;
	/* a CPU that is not online cannot be opened: those that can are enough */
	for (i = 0; !err && i < w->n; i++) {
		int ret = open_cpu(w, i);

		if (ret && i == 0)
			err = ret;
	}
	if (err) {
		mmapwatch__free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

/* copy len bytes at ring offset off (wrapping) */
static void ring_copy(const struct cpu_ring *r, uint64_t off, void *dst, size_t len)
{
	size_t at = (size_t)(off & (r->size - 1)), first = r->size - at < len ? r->size - at : len;

	memcpy(dst, r->data + at, first);
	memcpy((unsigned char *)dst + first, r->data, len - first);
}

/* a record of our pid as a procmap; false for others and for what is no file */
static bool to_procmap(const struct mmapwatch *w, const unsigned char *rec, struct procmap *m,
		       uint64_t *ts)
{
	const struct mmap2_record *r = (const void *)rec;
	const struct sample_id *id = (const void *)(rec + r->header.size - sizeof(*id));
	size_t room = r->header.size - sizeof(*r) - sizeof(*id);

	if (r->header.size < sizeof(*r) + sizeof(*id) || (int)r->pid != (int)w->pid ||
	    (r->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || r->filename[0] != '/' ||
	    !memchr(r->filename, 0, room))
		return false;
	memset(m, 0, sizeof(*m));
	m->start = r->addr;
	m->end = r->addr + r->len;
	m->offset = r->pgoff;
	m->dev_major = r->maj;
	m->dev_minor = r->min;
	m->inode = r->ino;
	m->readable = r->prot & PROT_READ;
	m->writable = r->prot & PROT_WRITE;
	m->executable = r->prot & PROT_EXEC;
	m->path = (char *)r->filename;
	*ts = id->time;
	return m->executable;
}

static int read_ring(struct mmapwatch *w, struct cpu_ring *r, mmapwatch_fn cb, void *ctx)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;
	unsigned char buf[sizeof(struct mmap2_record) + 4096 + sizeof(struct sample_id)];
	struct perf_event_header h;
	struct procmap m;
	uint64_t ts;
	int ret = 0;

	while (!ret && tail + sizeof(h) <= head) {
		ring_copy(r, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			__u64 lost[2];

			ring_copy(r, tail + sizeof(h), lost, sizeof(lost));
			w->lost += lost[1];
		} else if (h.type == PERF_RECORD_MMAP2 && h.size <= sizeof(buf)) {
			ring_copy(r, tail, buf, h.size);
			if (to_procmap(w, buf, &m, &ts))
				ret = cb(ctx, &m, ts);
		}
		tail += h.size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}

int mmapwatch__read(struct mmapwatch *w, mmapwatch_fn cb, void *ctx)
{
	int i, ret = 0;

	for (i = 0; !ret && i < w->n; i++)
		if (w->rings[i].meta)
			ret = read_ring(w, &w->rings[i], cb, ctx);
	return ret;
}

uint64_t mmapwatch__lost(const struct mmapwatch *w)
{
	return w->lost;
}

void mmapwatch__free(struct mmapwatch *w)
{
	int i;

	if (!w)
		return;
	for (i = 0; w->rings && i < w->n; i++) {
		if (w->rings[i].meta)
			munmap(w->rings[i].meta, w->page + w->rings[i].size);
		if (w->rings[i].fd >= 0)
			close(w->rings[i].fd);
	}
	free(w->rings);
	free(w);
}
