// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "culpert.h"
#include "elfobj.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "unwind.h"
#include "vec.h"

#if defined(__aarch64__)
/* DWARF register numbers of AArch64 (AADWARF64 4.1): x19..x30 and sp, as struct culpert_regs */
enum {
	DWARF_X19 = 19,
	DWARF_FP = 29,		/* x29 */
	DWARF_SP = 31,
};

/*
 * A function's first instruction has no frame on arm64 (the return address
 * is in lr): the caller's CFA is the entry's sp, so the first step up may
 * keep sp.  Any later one must raise it.
 */
#define ENTRY_STEP_KEEPS_SP	true
#else
/* DWARF register numbers of x86-64 (psABI, figure 3.36): the ones struct culpert_regs carries */
enum {
	DWARF_RBX = 3,
	DWARF_FP = 6,		/* rbp */
	DWARF_SP = 7,		/* rsp */
	DWARF_R12 = 12,
	DWARF_RA = 16,		/* the return address column, i.e. rip */
};

#define ENTRY_STEP_KEEPS_SP	false
#endif

/* an object reported to libdwfl; the module's userdata is its index + 1 */
struct unwind_mod {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint64_t bias;		/* runtime address - ELF virtual address */
	/* the last mapping found to hold this object at this bias: checked without the ELF file */
	uint64_t seen_start, seen_offset;
};

/* the sample being unwound, seen by the libdwfl callbacks */
struct unwind_req {
	const struct procmaps *maps;
	const struct procmap *ip_map;
	const struct culpert_regs *regs;
	const unsigned char *stack;
	uint64_t sp, len;	/* the copy holds [sp, sp + len) */
	uint64_t stack_end;	/* end of the mapping sp points into */
	uint64_t *frames;
	size_t max, n;
	uint64_t last_sp;	/* stack pointer of frames[n - 1] */
	uint64_t last_bp;
	bool last_bp_known;
	bool beyond;		/* a read past the copy, inside the stack's mapping, was refused */
	bool stale;		/* a reported module no longer matches maps: start over */
	bool stopped;		/* the frame callback decided how the walk ends */
	enum unwind_stop stop;
};

struct unwinder {
	pid_t pid;
	struct objcache *objs;
	Dwfl *dwfl;
	bool attached;
	struct unwind_mod *mods;
	size_t n_mods, cap_mods;
	struct unwind_req *req;
	struct unwinder_stats stats;
};

static const char *const stop_names[UNWIND_STOP__MAX] = {
	[UNWIND_STOP_END] = "end",
	[UNWIND_STOP_TRUNCATED] = "truncated",
	[UNWIND_STOP_DEPTH] = "depth",
	[UNWIND_STOP_ERROR] = "error",
};

const char *unwind_stop_name(enum unwind_stop stop)
{
	return (unsigned int)stop < UNWIND_STOP__MAX ? stop_names[stop] : "?";
}

/* --- libdwfl callbacks ------------------------------------------------------------------- */

/* every module is reported with the fd of its objcache entry: nothing to look up by name */
static int find_no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	return -1;
}

/*
 * .eh_frame and the object's own .debug_frame only: no separate debug files
 * (the host's /usr/lib/debug is the wrong tree for a container) and no
 * debuginfod downloads in the middle of a capture.
 */
static int find_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_no_elf,
	.find_debuginfo = find_no_debuginfo,
};

/* threads are never enumerated: each unwind names its one thread */
static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	*thread_argp = arg;
	return true;
}

/*
 * Only the registers the sample carries: libdwfl tracks which ones are set,
 * so a CFI rule that needs another one fails instead of reading garbage.
 */
#if defined(__aarch64__)
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct culpert_regs *r = ((struct unwinder *)arg)->req->regs;
	Dwarf_Word x19_sp[13];

	/* x19..x28, x29 (fp), x30 (lr: the return address at entry), sp: consecutive numbers */
	memcpy(x19_sp, r->x19_28, sizeof(r->x19_28));
	x19_sp[10] = r->fp;
	x19_sp[11] = r->lr;
	x19_sp[12] = r->sp;
	if (!dwfl_thread_state_registers(thread, DWARF_X19, 13, x19_sp))
		return false;
	dwfl_thread_state_register_pc(thread, r->ip);
	return true;
}
#else
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct culpert_regs *r = ((struct unwinder *)arg)->req->regs;
	Dwarf_Word bx = r->bx, bp_sp[2] = { r->bp, r->sp }, ip = r->ip;
	Dwarf_Word r12_15[4] = { r->r12, r->r13, r->r14, r->r15 };

	/* rip as a register too: PLT stubs compute their CFA from it */
	if (!dwfl_thread_state_registers(thread, DWARF_RBX, 1, &bx) ||
	    !dwfl_thread_state_registers(thread, DWARF_FP, 2, bp_sp) ||
	    !dwfl_thread_state_registers(thread, DWARF_R12, 4, r12_15) ||
	    !dwfl_thread_state_registers(thread, DWARF_RA, 1, &ip))
		return false;
	dwfl_thread_state_register_pc(thread, r->ip);
	return true;
}
#endif

/*
 * Only the copy is readable: x86-64 and arm64 CFI dereference nothing but stack slots
 * (saved registers, signal frames), and the live process may be gone.
 */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwind_req *q = ((struct unwinder *)arg)->req;

	if (addr >= q->sp && q->len >= sizeof(*result) &&
	    addr - q->sp <= q->len - sizeof(*result)) {
		memcpy(result, q->stack + (addr - q->sp), sizeof(*result));
		return true;
	}
	/* the stack goes on where the copy stopped: truncated, not broken */
	if (addr >= q->sp && addr < q->stack_end)
		q->beyond = true;
	return false;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* --- modules ----------------------------------------------------------------------------- */

static int dwfl_start(struct unwinder *u)
{
	u->dwfl = dwfl_begin(&dwfl_callbacks);
	u->attached = false;
	u->n_mods = 0;
	return u->dwfl ? 0 : -ENOMEM;
}

/* forget every module: an address now belongs to another object than the one reported */
static int dwfl_restart(struct unwinder *u)
{
	dwfl_end(u->dwfl);
	u->stats.resets++;
	pr_debug("unwind: the target's mappings changed, reloading its objects\n");
	return dwfl_start(u);
}

static int report_module(struct unwinder *u, const struct procmap *m, struct elfobj *obj,
			 uint64_t bias)
{
	Dwfl_Module *mod;
	void **userdata;
	int fd;

	if (vec_reserve(&u->mods, &u->cap_mods, u->n_mods + 1, sizeof(*u->mods)))
		return -ENOMEM;
	/* libdwfl owns (and closes) the fd it is given; the objcache keeps its own */
	fd = fcntl(elfobj__fd(obj), F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	dwfl_report_begin_add(u->dwfl);
	mod = dwfl_report_elf(u->dwfl, m->path, elfobj__path(obj), fd, bias, true);
	dwfl_report_end(u->dwfl, NULL, NULL);
	if (!mod) {
		pr_debug("unwind: cannot load %s: %s\n", m->path, dwfl_errmsg(-1));
		close(fd);
		return -ENOENT;
	}
	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = (void *)(uintptr_t)(u->n_mods + 1);
	u->mods[u->n_mods++] = (struct unwind_mod){
		.inode = m->inode,
		.dev_major = m->dev_major,
		.dev_minor = m->dev_minor,
		.bias = bias,
		.seen_start = m->start,
		.seen_offset = m->offset,
	};
	u->stats.modules++;
	return 0;
}

static bool same_file(const struct unwind_mod *um, const struct procmap *m)
{
	return um->inode == m->inode && um->dev_major == m->dev_major &&
	       um->dev_minor == m->dev_minor;
}

/*
 * Make sure the object mapped at addr (in mapping m) is known to libdwfl
 * before it has to step through addr.  0, -ESTALE when another object than
 * the one reported is mapped there now, -ENOENT when there is no object
 * (anonymous code, an unreadable file).
 */
static int ensure_module(struct unwinder *u, const struct procmap *m, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, addr);
	struct unwind_mod *um = NULL;
	struct elfobj *obj;
	void **userdata;
	uint64_t vaddr;
	size_t idx;

	if (mod) {
		dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
		idx = (uintptr_t)*userdata;
		um = idx && idx <= u->n_mods ? &u->mods[idx - 1] : NULL;
		if (!um)
			return -ESTALE;
		/* the common case, once per frame: the mapping it was last seen in */
		if (um->seen_start == m->start && um->seen_offset == m->offset && same_file(um, m))
			return 0;
	}
	/* NULL for mappings without a file too */
	obj = objcache__get(u->objs, m);
	if (!obj || elfobj__offset_to_vaddr(obj, addr - m->start + m->offset, &vaddr))
		return mod ? -ESTALE : -ENOENT;
	if (!mod)
		return report_module(u, m, obj, addr - vaddr);
	if (!same_file(um, m) || um->bias != addr - vaddr)
		return -ESTALE;
	um->seen_start = m->start;
	um->seen_offset = m->offset;
	return 0;
}

/* --- the walk ---------------------------------------------------------------------------- */

static int stop_walk(struct unwind_req *q, enum unwind_stop stop)
{
	q->stop = stop;
	q->stopped = true;
	return DWARF_CB_ABORT;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	struct unwind_req *q = u->req;
	const struct procmap *m = NULL;
	Dwarf_Addr pc;
	Dwarf_Word sp = q->sp, bp;
	bool initial = q->n == 0;
	int err;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return stop_walk(q, UNWIND_STOP_ERROR);
	if (!initial) {
		/* each caller's frame lies above its callee's; anything else is a loop */
		if (dwfl_frame_reg(state, DWARF_SP, &sp) || sp < q->last_sp ||
		    (sp == q->last_sp && !(ENTRY_STEP_KEEPS_SP && q->n == 1)))
			return stop_walk(q, UNWIND_STOP_ERROR);
		/* a return address points just past a call instruction */
		m = procmaps__find(q->maps, pc - 1);
		if (!m || !m->executable)
			return stop_walk(q, UNWIND_STOP_ERROR);
	}
	/* a valid frame that does not fit: the stack goes on */
	if (q->n == q->max)
		return stop_walk(q, UNWIND_STOP_DEPTH);
	q->frames[q->n++] = pc;
	q->last_sp = sp;
	q->last_bp_known = dwfl_frame_reg(state, DWARF_FP, &bp) == 0;
	q->last_bp = q->last_bp_known ? bp : 0;
	/* the probed object was loaded before the walk started */
	if (initial)
		return DWARF_CB_OK;
	/* libdwfl looks a caller up at its return address - 1, as we do */
	err = ensure_module(u, m, pc - 1);
	if (err == -ESTALE) {
		q->stale = true;
		return DWARF_CB_ABORT;
	}
	/* other errors: no CFI here; libdwfl may still step by frame pointer (JIT code) */
	return DWARF_CB_OK;
}

enum ra_rule {
	RA_NO_CFI,
	RA_DEFINED,
	RA_UNDEFINED,
};

/* what the CFI says about the return address of the frame at pc */
static enum ra_rule ra_rule(struct unwinder *u, uint64_t pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);
	Dwarf_Op ops_mem[3], *ops;
	Dwarf_Frame *frame;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias;
	size_t nops;
	int i, ra;
	bool undefined;

	for (i = 0; mod && i < 2; i++) {
		cfi = i == 0 ? dwfl_module_eh_cfi(mod, &bias) : dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame))
			continue;
		ra = dwarf_frame_info(frame, NULL, NULL, NULL);
		/* libdw: no ops and ops == ops_mem is "undefined"; ops == NULL is "same value" */
		undefined = ra >= 0 && !dwarf_frame_register(frame, ra, ops_mem, &ops, &nops) &&
			    !nops && ops == ops_mem;
		free(frame);
		return undefined ? RA_UNDEFINED : RA_DEFINED;
	}
	return RA_NO_CFI;
}

/*
 * libdwfl ends a walk the same way whether the return address is undefined
 * or could not be read, so look at the last frame again: its CFI (or, for
 * code without CFI, the psABI's rbp = 0 / AAPCS64's x29 = 0 in the outermost frame) tells a
 * real end from a stack cut short by the copy or a failure.
 */
static enum unwind_stop classify_end(struct unwinder *u, struct unwind_req *q)
{
	uint64_t last = q->frames[q->n - 1];
	enum ra_rule rule = ra_rule(u, q->n == 1 ? last : last - 1);

	if (rule == RA_UNDEFINED || (rule == RA_NO_CFI && q->last_bp_known && !q->last_bp))
		return UNWIND_STOP_END;
	if (q->beyond)
		return UNWIND_STOP_TRUNCATED;
	pr_debug("unwind: stopped after %zu frames at %#llx: %s\n", q->n,
		 (unsigned long long)last, dwfl_errmsg(-1));
	return UNWIND_STOP_ERROR;
}

/* one walk; 0 with q->stale set when the module set has to be rebuilt first */
static int walk(struct unwinder *u, struct unwind_req *q)
{
	int err;

	q->n = 0;
	q->beyond = q->stale = q->stopped = false;
	err = ensure_module(u, q->ip_map, q->regs->ip);
	if (err == -ESTALE) {
		q->stale = true;
		return 0;
	}
	if (err) {
		/* the probed object cannot be read: no CFI to take the first step with */
		q->frames[q->n++] = q->regs->ip;
		q->stop = UNWIND_STOP_ERROR;
		return 0;
	}
	if (!u->attached) {
		/*
		 * The architecture comes from the object just reported: left to
		 * itself libdwfl skips every module named "... (deleted)" (a
		 * library upgraded on disk, a memfd) and may find none.
		 */
		Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, q->regs->ip);
		Dwarf_Addr bias;
		Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;

		if (!dwfl_attach_state(u->dwfl, elf, u->pid, &thread_callbacks, u)) {
			pr_debug("unwind: dwfl_attach_state: %s\n", dwfl_errmsg(-1));
			return -EIO;
		}
		u->attached = true;
	}
	dwfl_getthread_frames(u->dwfl, u->pid, frame_cb, u);
	if (q->stale || q->stopped)
		return 0;
	if (!q->n) {
		pr_debug("unwind: no initial frame: %s\n", dwfl_errmsg(-1));
		return -EIO;
	}
	q->stop = classify_end(u, q);
	return 0;
}

int unwinder__unwind(struct unwinder *u, const struct procmaps *maps,
		     const struct culpert_regs *regs, const void *stack, size_t stack_len,
		     uint64_t *frames, size_t max, enum unwind_stop *stop)
{
	const struct procmap *sp_map;
	struct unwind_req q = {
		.maps = maps,
		.regs = regs,
		.stack = stack,
		.sp = regs ? regs->sp : 0,
		.len = stack_len,
		.frames = frames,
		.max = max,
	};
	int err;

	if (!u || !maps || !regs || (!stack && stack_len) || !frames || !max || !stop)
		return -EINVAL;
	q.ip_map = procmaps__find(maps, regs->ip);
	sp_map = procmaps__find(maps, regs->sp);
	if (!q.ip_map || !q.ip_map->executable || !sp_map)
		return -EFAULT;
	q.stack_end = sp_map->end;
	if (q.len > q.stack_end - q.sp)
		q.len = q.stack_end - q.sp;
	u->req = &q;
	err = walk(u, &q);
	/* one rebuild is enough: after it every module comes from these maps */
	if (!err && q.stale) {
		err = dwfl_restart(u);
		if (!err)
			err = walk(u, &q);
	}
	u->req = NULL;
	if (err)
		return err;
	if (q.stale) {
		frames[0] = regs->ip;
		q.n = 1;
		q.stop = UNWIND_STOP_ERROR;
	}
	*stop = q.stop;
	return (int)q.n;
}

/* --- lifetime ---------------------------------------------------------------------------- */

struct unwinder *unwinder__new(pid_t pid, struct objcache *objs)
{
	struct unwinder *u;

#if !defined(__x86_64__) && !defined(__aarch64__)
	/* struct culpert_regs and the register numbers above are x86-64's and arm64's */
	errno = EOPNOTSUPP;
	return NULL;
#endif
	if (!objs) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->pid = pid;
	u->objs = objs;
	if (dwfl_start(u)) {
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	return u;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl);
	free(u->mods);
	free(u);
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *st)
{
	*st = u->stats;
}
