/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * culpert span probes for C (C11) and C++ (C++17), header-only.
 *
 * A span is a named region of a thread's execution (a request, a parse
 * step).  culpert-bpf attributes every sampled allocation to the innermost
 * span open on the allocating thread.  The probes are USDT probes
 * (provider "culpert"), each behind a semaphore: while no profiler is
 * attached a probe site costs one load and one predictable branch, and
 * none of its arguments are evaluated.
 *
 *   culpert:span_enter(u64 span_id, u64 parent_id, const char *name, u64 name_len)
 *   culpert:span_exit(u64 span_id)
 *
 * parent_id 0 means "the span currently open on this thread, if any".  The
 * name need not be NUL-terminated; at most 127 bytes are kept, read when
 * the span is entered.  Span ids must be non-zero; culpert_span_next_id()
 * hands out process-unique ones.
 *
 * C:
 *     void handle(struct req *r)
 *     {
 *             CULPERT_SPAN_SCOPE("handle_request");   // exits when the block ends
 *             ...
 *     }
 *     uint64_t id = culpert_span_enter("parse", 0);   // explicit form
 *     ...
 *     culpert_span_exit(id);
 *
 * C++:
 *     culpert::Span span("handle_request");
 *
 * Needs <sys/sdt.h> (Debian: systemtap-sdt-dev).
 */
#ifndef CULPERT_SPAN_H
#define CULPERT_SPAN_H

#include <stdint.h>
#include <string.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The kernel increments a semaphore while a profiler is attached to its
 * probe.  Weak, hidden definitions: every translation unit may include
 * this header, the linker keeps one per executable or shared library,
 * which is what the probe notes of that object point at.
 */
#define CULPERT__SEMAPHORE(name)                                                       \
	__attribute__((weak, used, section(".probes"), visibility("hidden")))         \
	volatile unsigned short culpert_##name##_semaphore

CULPERT__SEMAPHORE(span_enter);
CULPERT__SEMAPHORE(span_exit);

/* process-wide source of span ids */
__attribute__((weak)) uint64_t culpert_span_counter;

/* true while a profiler listens to span probes */
#define CULPERT_SPAN_ENABLED() __builtin_expect(culpert_span_enter_semaphore != 0, 0)

/* fire the probes directly; arguments are evaluated only while a profiler listens */
#define CULPERT_SPAN_ENTER(id, parent_id, name, name_len)                              \
	do {                                                                           \
		if (__builtin_expect(culpert_span_enter_semaphore != 0, 0))            \
			STAP_PROBE4(culpert, span_enter, (uint64_t)(id),               \
				    (uint64_t)(parent_id), (const char *)(name),       \
				    (uint64_t)(name_len));                             \
	} while (0)

#define CULPERT_SPAN_EXIT(id)                                                          \
	do {                                                                           \
		if (__builtin_expect(culpert_span_exit_semaphore != 0, 0))             \
			STAP_PROBE1(culpert, span_exit, (uint64_t)(id));               \
	} while (0)

static inline uint64_t culpert_span_next_id(void)
{
	return __atomic_add_fetch(&culpert_span_counter, 1, __ATOMIC_RELAXED);
}

/*
 * Open a span named by a string of len bytes; returns its id, or 0 when
 * no profiler listens (exiting id 0 is a no-op).
 */
static inline uint64_t culpert_span_enter_n(const char *name, uint64_t len, uint64_t parent_id)
{
	uint64_t id;

	if (!CULPERT_SPAN_ENABLED())
		return 0;
	id = culpert_span_next_id();
	STAP_PROBE4(culpert, span_enter, id, parent_id, name, len);
	return id;
}

static inline uint64_t culpert_span_enter(const char *name, uint64_t parent_id)
{
	if (!CULPERT_SPAN_ENABLED())
		return 0;
	return culpert_span_enter_n(name, strlen(name), parent_id);
}

static inline void culpert_span_exit(uint64_t id)
{
	if (id)
		CULPERT_SPAN_EXIT(id);
}

/* C scope guard: the span ends when the enclosing block does */
struct culpert_span {
	uint64_t id;
};

static inline void culpert__span_scope_end(struct culpert_span *s)
{
	culpert_span_exit(s->id);
}

#define CULPERT__CAT2(a, b) a##b
#define CULPERT__CAT(a, b) CULPERT__CAT2(a, b)
#define CULPERT_SPAN_SCOPE(name)                                                       \
	struct culpert_span CULPERT__CAT(culpert__span_, __LINE__)                     \
		__attribute__((cleanup(culpert__span_scope_end), unused)) =            \
		{ culpert_span_enter((name), 0) }

#ifdef __cplusplus
} /* extern "C" */

#include <string_view>

namespace culpert {

/* RAII span: open for the lifetime of the object */
class Span {
public:
	explicit Span(std::string_view name, uint64_t parent_id = 0)
		: id_(culpert_span_enter_n(name.data(), name.size(), parent_id))
	{
	}
	~Span() { culpert_span_exit(id_); }
	Span(const Span &) = delete;
	Span &operator=(const Span &) = delete;
	uint64_t id() const { return id_; }

private:
	uint64_t id_;
};

} /* namespace culpert */
#endif /* __cplusplus */

#endif /* CULPERT_SPAN_H */
