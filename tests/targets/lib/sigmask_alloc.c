// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * glibc's allocator with every signal blocked while it runs: an allocator
 * a signal handler may call whatever its thread was doing.  Preloaded
 * after libculpert-sampler.so (tests/bpf/test_sampler_lib.sh), it lets
 * tests/targets/sampler_signal's handler interrupt the sampler anywhere
 * but inside the allocator itself, which glibc's malloc does not survive.
 */
#include <signal.h>
#include <stddef.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t nmemb, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *p);

#define MASKED(expr)								\
	({									\
		sigset_t all_, old_;						\
		sigfillset(&all_);						\
		pthread_sigmask(SIG_SETMASK, &all_, &old_);			\
		__typeof__(expr) r_ = (expr);					\
		pthread_sigmask(SIG_SETMASK, &old_, NULL);			\
		r_;								\
	})

void *malloc(size_t size)
{
	return MASKED(__libc_malloc(size));
}

void *calloc(size_t nmemb, size_t size)
{
	return MASKED(__libc_calloc(nmemb, size));
}

void *realloc(void *p, size_t size)
{
	return MASKED(__libc_realloc(p, size));
}

static int freed(void *p)
{
	__libc_free(p);
	return 0;
}

void free(void *p)
{
	MASKED(freed(p));
}

int posix_memalign(void **out, size_t align, size_t size)
{
	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return 22;	/* EINVAL */
	*out = MASKED(__libc_memalign(align, size));
	return *out ? 0 : 12;	/* ENOMEM */
}

void *memalign(size_t align, size_t size)
{
	return MASKED(__libc_memalign(align, size));
}
