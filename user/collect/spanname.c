// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <unistd.h>
#include <linux/types.h>

#include "culpert.h"
#include "elfobj.h"
#include "objcache.h"
#include "procmaps.h"
#include "spanname.h"

/* whole reads only: a name cut short would be a wrong name */
static int read_at(int fd, uint64_t off, uint32_t len, char *buf)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

int span_name__read(int mem_fd, const struct procmaps *maps, struct objcache *objs,
		    uint64_t addr, uint32_t len, char *buf)
{
	const struct procmap *m;
	struct elfobj *obj;

	if (len > CULPERT_SPAN_NAME_MAX)
		return -EINVAL;
	if (mem_fd >= 0 && !read_at(mem_fd, addr, len, buf))
		return 0;
	/* the file behind the address: its bytes are the name as long as the mapping is private */
	m = procmaps__find(maps, addr);
	if (!m || !procmap__is_file(m) || m->writable || addr + len > m->end)
		return -ENOENT;
	obj = objcache__get(objs, m);
	if (!obj)
		return -ENOENT;
	return read_at(elfobj__fd(obj), m->offset + (addr - m->start), len, buf);
}
