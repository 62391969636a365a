// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "stack.h"

/* below this no code is mapped: a frame-pointer walk that read junk */
#define MIN_CODE_ADDR 4096

/*
 * frames[0] is the probed instruction inside the allocator; the caller's
 * return address is the word at the stack pointer (x86-64) or in lr
 * (arm64) (ret_addr), because at entry the allocator has not pushed a frame.  Kernels that recognise a
 * probe at a function's entry (6.x, "push %rbp" or endbr64 first) already
 * put it at frames[1]; older ones, and probes at other instructions, do not.
 */
bool event_complete(const struct culpert_alloc_event *e, size_t size)
{
	size_t need = sizeof(*e);

	if (size < need || e->span_depth > CULPERT_MAX_SPAN_DEPTH ||
	    e->nr_frames > CULPERT_MAX_FRAMES || e->stack_len > CULPERT_MAX_STACK_COPY)
		return false;
	need += e->span_depth * sizeof(struct culpert_span_frame);
	need += e->nr_frames > 0 ? (size_t)e->nr_frames * sizeof(__u64) : 0;
	need += e->stack_len;
	return size >= need;
}

size_t stack_from_event(const struct culpert_alloc_event *e, uint64_t *out, size_t max)
{
	const __u64 *frames = event_frames(e);
	size_t n = 0, i = 1, nr = e->nr_frames > 0 ? (size_t)e->nr_frames : 0;

	if (nr > CULPERT_MAX_FRAMES)
		nr = CULPERT_MAX_FRAMES;
	if (max && e->ret_addr >= MIN_CODE_ADDR && !(nr > 1 && frames[1] == e->ret_addr))
		out[n++] = e->ret_addr;
	for (; i < nr && n < max; i++) {
		/* a frame-pointer walk through code without frame pointers ends in junk */
		if (frames[i] < MIN_CODE_ADDR)
			break;
		out[n++] = frames[i];
	}
	return n;
}
