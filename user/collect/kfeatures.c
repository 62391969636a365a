// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bpf_compat.h"
#include "kfeatures.h"
#include "log.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool path_exists(const char *p)
{
	return access(p, F_OK) == 0;
}

/*
 * Does the kernel know this uprobe link type?  Load "return 0" with the
 * attach type, then ask for a link on "/": a kernel that knows the type
 * rejects the directory with EBADF, one that does not rejects the type
 * itself with EINVAL (libbpf probes uprobe_multi the same way).
 */
static bool probe_uprobe_link(__u32 attach_type)
{
	struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },	/* r0 = 0 */
		{ .code = 0x95 },				/* exit */
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach_type);
	struct culpert_uprobe_multi_attr attr;
	unsigned long offset = 0;
	int prog_fd, link_fd, err;

	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "culpert_probe", "GPL", insns, 2, &opts);
	if (prog_fd < 0)
		return false;
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)prog_fd;
	attr.attach_type = attach_type;
	attr.path = (__u64)(unsigned long)"/";
	attr.offsets = (__u64)(unsigned long)&offset;
	attr.cnt = 1;
	link_fd = (int)syscall(__NR_bpf, CULPERT_BPF_LINK_CREATE, &attr, sizeof(attr));
	err = link_fd < 0 ? errno : 0;
	if (link_fd >= 0)
		close(link_fd);
	close(prog_fd);
	return link_fd < 0 && err == EBADF;
}

/* a kernel type in the running kernel's BTF: a feature that came with it */
static bool kernel_has_struct(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool found;

	if (!btf)
		return false;
	found = btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT) >= 0;
	btf__free(btf);
	return found;
}

static bool has_helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, NULL) == 1;
}

const struct kfeatures *features__get(void)
{
	static struct kfeatures f;
	static bool done;
	struct utsname u;

	if (done)
		return &f;
	done = true;
	if (uname(&u) == 0)
		snprintf(f.release, sizeof(f.release), "%s", u.release);
	f.btf = path_exists("/sys/kernel/btf/vmlinux");
	f.uprobes = path_exists("/sys/bus/event_source/devices/uprobe/type");
	f.ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	f.uprobe_multi = probe_uprobe_link(CULPERT_BPF_TRACE_UPROBE_MULTI);
	f.uprobe_session = f.uprobe_multi && probe_uprobe_link(CULPERT_BPF_TRACE_UPROBE_SESSION);
	f.task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	f.bpf_loop = has_helper(BPF_FUNC_loop);
	f.find_vma = has_helper(BPF_FUNC_find_vma);
	f.hash_no_prealloc = f.btf && kernel_has_struct("bpf_mem_alloc");
	pr_debug("kernel %s: btf=%d uprobes=%d ringbuf=%d uprobe_multi=%d uprobe_session=%d "
		 "task_storage=%d bpf_loop=%d find_vma=%d hash_no_prealloc=%d\n", f.release, f.btf,
		 f.uprobes, f.ringbuf, f.uprobe_multi, f.uprobe_session, f.task_storage, f.bpf_loop,
		 f.find_vma, f.hash_no_prealloc);
	return &f;
}

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1U << (cap % 32));
}

bool features__privileged(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (geteuid() == 0)
		return true;
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return (has_cap(data, CAP_SYS_ADMIN) ||
		(has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON))) &&
	       has_cap(data, CAP_SYS_PTRACE);
}

const char *features__blocker(void)
{
	const struct kfeatures *f;

	if (!features__privileged())
		return "culpert-bpf needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE): run it with sudo";
	f = features__get();
	if (!f->btf)
		return "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): culpert-bpf needs Linux 5.17+ built with CONFIG_DEBUG_INFO_BTF=y";
	if (!f->uprobes)
		return "this kernel has no uprobes (no uprobe PMU in /sys/bus/event_source/devices): it needs CONFIG_UPROBE_EVENTS=y";
	if (!f->ringbuf)
		return "this kernel has no BPF ring buffer: culpert-bpf needs Linux 5.17 or newer";
	if (!f->task_storage)
		return "this kernel has no BPF task storage: culpert-bpf needs Linux 5.17 or newer";
	if (!f->bpf_loop || !f->find_vma)
		return "this kernel lacks the bpf_loop()/bpf_find_vma() helpers: culpert-bpf needs Linux 5.17 or newer";
	return NULL;
}
