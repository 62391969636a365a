/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * USDT probes through uprobe_multi links instead of libbpf's perf-event
 * uprobes: the kernel lets CAP_BPF + CAP_PERFMON create uprobe_multi
 * links, while perf-event uprobes need CAP_SYS_ADMIN since Linux 6.15
 * (commit ba677dbe77af, also in the stable kernels).  The BPF side is the
 * same BPF_USDT() program: this fills the __bpf_usdt_specs map of
 * <bpf/usdt.bpf.h> with each site's argument specification and gives the
 * spec id as the link's cookie, as libbpf's USDT manager does; the
 * semaphores go in the link's ref_ctr_offsets.
 */
#ifndef CULPERT_USDT_LINK_H
#define CULPERT_USDT_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_object;
struct bpf_program;
struct uprobe_set;

/*
 * The entries of one object's __bpf_usdt_specs map (BPF_USDT_MAX_SPEC_CNT,
 * 256 by default): one per attached site, given back when its link goes.
 * The agent attaches and detaches for as long as it runs (targets come
 * and go, duty cycling re-attaches otel_memory:alloc every period).
 */
#define USDT_SPEC_IDS_MAX 4096
struct usdt_spec_ids {
	unsigned char taken[USDT_SPEC_IDS_MAX];
};

/* the spec ids one set of links holds */
struct usdt_held {
	uint32_t *ids;
	size_t n, cap;
};

/* give every id of h back to pool, once h's links are gone; h's array is kept */
void usdt_held__release(struct usdt_held *h, struct usdt_spec_ids *pool);

struct usdt_link_opts {
	struct bpf_object *obj;		/* holds __bpf_usdt_specs */
	const struct bpf_program *prog;	/* a BPF_USDT() program, loaded for uprobe_multi */
	const char *path;		/* the object, as the kernel should open it */
	const char *provider, *name;
	pid_t pid;
	struct usdt_spec_ids *pool;	/* the object's spec ids */
	struct usdt_held *held;		/* ... the ones taken here are added to it */
};

/*
 * Can this build read the operands of USDT notes?  x86-64 only; elsewhere
 * span probes take libbpf's perf-event path (CAP_SYS_ADMIN on 6.15+).
 */
static inline int usdt_link__supported(void)
{
#if defined(__x86_64__)
	return 1;
#else
	return 0;
#endif
}

/*
 * Attach prog to every provider:name site of path.  0 (also when there is
 * none) or -errno with a user-facing reason in err.
 */
int usdt_link__attach(struct uprobe_set *set, const struct usdt_link_opts *o, char *err,
		      size_t errlen);

/* one argument "SIZE@OPERAND" of a note, as <bpf/usdt.bpf.h> reads it; 0 or -EINVAL */
struct usdt_arg_spec {
	uint64_t val_off;
	int arg_type;		/* enum __bpf_usdt_arg_type */
	short reg_off;
	_Bool arg_signed;
	char arg_bitshift;
};
int usdt_parse_arg(const char *s, size_t len, struct usdt_arg_spec *out);

#endif /* CULPERT_USDT_LINK_H */
