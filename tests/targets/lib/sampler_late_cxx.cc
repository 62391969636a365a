// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// operator new/delete called from an object of its own, for sampler_late
// (tests/targets/sampler_late.c): its GOT slots are the ones taken over.
#include <cstddef>
#include <new>

extern "C" {

__attribute__((noinline)) void *late_cxx_new(std::size_t n)
{
	return ::operator new(n);
}

__attribute__((noinline)) void late_cxx_delete(void *p)
{
	::operator delete(p);
}

__attribute__((noinline)) void *late_cxx_new_array(std::size_t n)
{
	return ::operator new[](n);
}

__attribute__((noinline)) void late_cxx_delete_array(void *p)
{
	::operator delete[](p);
}

}
