// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "log.h"

/*
 * Why permitted-only file capabilities (+p) rather than +ep: for a file with
 * the effective bit the kernel refuses execve() with EPERM when the bounding
 * set lacks any of the file's capabilities ("capability-dumb" binaries), so a
 * container started without, say, CAP_BPF would fail in the runtime with
 * "operation not permitted" and nothing naming the capability.  Without the
 * bit, execve() grants what the bounding set allows, this makes it effective,
 * and the preflight then names whatever is missing.  Kubernetes gives a
 * non-root container's process no ambient capabilities, so the file's are the
 * only way to have any; Podman's ambient ones are cleared by the same execve().
 */
int caps__raise_permitted(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	int i, raise = 0;

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	for (i = 0; i < 2; i++) {
		raise |= data[i].permitted & ~data[i].effective;
		data[i].effective = data[i].permitted;
	}
	if (!raise)
		return 0;
	if (syscall(SYS_capset, &hdr, data)) {
		int err = -errno;

		pr_debug("capset: cannot raise the permitted capabilities: %s\n", strerror(-err));
		return err;
	}
	pr_debug("raised the permitted capabilities to effective\n");
	return 0;
}
