// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bpf_compat.h"
#include "kfeatures.h"
#include "log.h"
#include "perfuprobe.h"

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

/*
 * Is the bpf() system call refused outright?  A container runtime's default
 * seccomp profile (CRI-O's and Podman's, from containers/common) answers
 * EPERM to bpf() without CAP_SYS_ADMIN even when CAP_BPF is granted; every
 * probe below would then fail and read as a kernel without the feature.  An
 * array map is what any kernel with bpf() can create.
 */
static bool bpf_refused(void)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	fd = (int)syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EPERM;
}

/* "Seccomp: 2" in /proc/self/status: a filter is installed */
static bool under_seccomp_filter(void)
{
	char line[128];
	bool filtered = false;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			filtered = strtol(line + 8, NULL, 10) == 2;
	if (f)
		fclose(f);
	return filtered;
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
	f.uprobes = path_exists(UPROBE_PMU_TYPE);
	f.bpf_refused = bpf_refused();
	f.seccomp = under_seccomp_filter();
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

/* our effective capabilities; false when they cannot be read */
static bool read_caps(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };

	memset(data, 0, 2 * sizeof(*data));
	return syscall(SYS_capget, &hdr, data) == 0;
}

bool features__has_cap(int cap)
{
	struct __user_cap_data_struct data[2];

	return read_caps(data) && has_cap(data, cap);
}

/*
 * What loading and attaching need: CAP_BPF (the bpf() syscall while
 * unprivileged BPF is disabled) and CAP_PERFMON (tracing programs, uprobe
 * links, the mapping events); CAP_SYS_ADMIN stands for both.  Reading
 * another user's /proc/PID needs CAP_SYS_PTRACE too, but that is the
 * target's business: target__open() says so for the pid given.
 */
static int features__missing_caps(char *buf, size_t len)
{
	struct __user_cap_data_struct data[2];
	bool bpf, perfmon;

	if (!read_caps(data))
		return snprintf(buf, len, "its capabilities cannot be read") > 0;
	if (has_cap(data, CAP_SYS_ADMIN))
		return 0;
	bpf = has_cap(data, CAP_BPF);
	perfmon = has_cap(data, CAP_PERFMON);
	if (bpf && perfmon)
		return 0;
	snprintf(buf, len, "%s%s%s", bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
		 perfmon ? "" : "CAP_PERFMON");
	return 1;
}

bool features__perf_uprobes_need_admin(void)
{
	struct perf_event_attr a;
	int type, fd;

	if (features__has_cap(CAP_SYS_ADMIN) || (type = perf_uprobe_pmu_type()) < 0)
		return false;
	/*
	 * No uprobe is made: the kernel checks the capability before it looks
	 * at the path, which is NULL here.  EACCES is the capability (Linux
	 * 6.15+ and the stable kernels with commit ba677dbe77af), EINVAL the
	 * missing path (older kernels: CAP_PERFMON was enough).
	 */
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = (__u32)type;
	a.exclude_kernel = 1;
	fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd < 0 && errno == EACCES;
}

const char *features__blocker(void)
{
	static char msg[256];
	const struct kfeatures *f;
	char missing[64];

	if (features__missing_caps(missing, sizeof(missing))) {
		snprintf(msg, sizeof(msg), "culpert-bpf needs root, or CAP_BPF and CAP_PERFMON "
			 "(missing: %s; CAP_SYS_PTRACE too for other users' processes): run it "
			 "with sudo or grant them (README, Privileges)", missing);
		return msg;
	}
	f = features__get();
	if (f->bpf_refused && f->seccomp)
		return "the bpf() system call is refused (EPERM) although culpert-bpf has the "
		       "capabilities: its seccomp filter blocks it (a container runtime's default "
		       "profile may allow bpf() only with CAP_SYS_ADMIN): run it with a profile that "
		       "allows bpf and perf_event_open (docs/kubernetes.md, Seccomp)";
	if (f->bpf_refused)
		return "the bpf() system call is refused (EPERM) although culpert-bpf has the "
		       "capabilities: a security module (SELinux, AppArmor, lockdown) denies it; "
		       "allow bpf for culpert-bpf there";
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

const char *features__perf_uprobe_blocker(bool no_multi)
{
	if (!no_multi && features__get()->uprobe_multi)
		return NULL;
	if (!features__perf_uprobes_need_admin())
		return NULL;
	if (no_multi)
		return "--no-multi attaches perf-event uprobes, which this kernel allows only with "
		       "CAP_SYS_ADMIN (Linux 6.15+): drop --no-multi, or run as root or with "
		       "CAP_SYS_ADMIN";
	return "this kernel has no uprobe_multi links (Linux 6.6+), and its perf-event uprobes "
	       "need CAP_SYS_ADMIN: run as root or with CAP_SYS_ADMIN";
}
