// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-kernel allocation sampler.
 *
 * Every allocator entry point gets a uprobe.  Each thread keeps a countdown
 * of bytes to its next sample (a Poisson process over allocated bytes);
 * only the allocation that crosses zero pays for a stack walk and a ring
 * buffer record, every other call costs a task-storage lookup and a
 * subtraction.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "culpert.h"
#include "state.bpf.h"
#include "spans.bpf.h"
#include "sampler.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int BPF_KPROBE(malloc_enter, __u64 size)
{
	return handle_alloc(ctx, size, CULPERT_FN_MALLOC);
}

SEC("uprobe")
int BPF_KPROBE(calloc_enter, __u64 nmemb, __u64 size)
{
	return handle_alloc(ctx, mul_or_zero(nmemb, size), CULPERT_FN_CALLOC);
}

SEC("uprobe")
int BPF_KPROBE(realloc_enter, void *ptr, __u64 size)
{
	return handle_alloc(ctx, size, CULPERT_FN_REALLOC);
}

SEC("uprobe")
int BPF_KPROBE(reallocarray_enter, void *ptr, __u64 nmemb, __u64 size)
{
	return handle_alloc(ctx, mul_or_zero(nmemb, size), CULPERT_FN_REALLOCARRAY);
}

SEC("uprobe")
int BPF_KPROBE(posix_memalign_enter, void **memptr, __u64 align, __u64 size)
{
	return handle_alloc(ctx, size, CULPERT_FN_POSIX_MEMALIGN);
}

SEC("uprobe")
int BPF_KPROBE(memalign_enter, __u64 align, __u64 size)
{
	return handle_alloc(ctx, size, CULPERT_FN_MEMALIGN);
}

SEC("uprobe")
int BPF_KPROBE(pvalloc_enter, __u64 size)
{
	return handle_alloc(ctx, round_up_page(size), CULPERT_FN_PVALLOC);
}

SEC("usdt")
int BPF_USDT(span_enter, __u64 id, __u64 parent_id, const char *name, __u64 name_len)
{
	return handle_span_enter(ctx, id, parent_id, name, name_len);
}

SEC("usdt")
int BPF_USDT(span_exit, __u64 id)
{
	return handle_span_exit(id);
}

/* --span-fn on kernels with uprobe sessions: one program sees both entry and return */
extern bool bpf_session_is_return(void) __ksym __weak;

SEC("uprobe")
int span_fn_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return())
		return handle_fn_span_return(ctx);
	handle_fn_span_enter(ctx);
	/* 0: run this program again when the function returns */
	return 0;
}

/* --span-fn elsewhere: an entry probe and a return probe */
SEC("uprobe")
int span_fn_enter(struct pt_regs *ctx)
{
	handle_fn_span_enter(ctx);
	return 0;
}

SEC("uretprobe")
int span_fn_exit(struct pt_regs *ctx)
{
	return handle_fn_span_return(ctx);
}
