// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <fnmatch.h>
#include <string.h>

#include "machinery.h"

/*
 * Glob patterns over demangled names.  Prefixes of whole families rather
 * than symbol lists: allocators grow internal helpers with every release,
 * and a helper missing here would become everybody's top callsite.
 */
static const char *const patterns[] = {
	/* glibc/musl and their internals */
	"malloc", "calloc", "realloc", "reallocarray", "free", "cfree", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size", "__libc_*",
	"_int_malloc", "_int_realloc", "_int_memalign", "_int_free", "sysmalloc", "tcache_*",
	"__malloc_*", "_mid_memalign", "__posix_memalign", "strdup", "strndup", "__strdup",
	"__strndup",
	/* jemalloc, plain and prefixed (je_, _rjem_), and its internals */
	"je_*", "_rjem_*", "mallocx", "rallocx", "xallocx", "sdallocx", "dallocx", "nallocx",
	"imalloc*", "iralloc*", "arena_malloc*", "tcache_alloc*",
	/* mimalloc */
	"mi_*", "_mi_*", "mi_heap_*",
	/* tcmalloc */
	"tc_*", "tcmalloc::*", "(anonymous namespace)::do_*alloc*", "do_malloc*", "do_calloc",
	"do_memalign*", "TCMallocInternal*",
	/* C++ */
	"operator new*", "operator delete*", "_Znw*", "_Zna*", "_Zdl*", "_Zda*",
	"std::__new_allocator<*", "__gnu_cxx::new_allocator<*",
	"std::allocator<*", "std::allocator_traits<*", "std::_Vector_base<*",
	"std::vector<*>::_M_realloc_insert*", "std::vector<*>::_M_realloc_append*",
	"std::vector<*>::_M_default_append*", "std::vector<*>::_M_fill_insert*",
	"std::vector<*>::_M_range_insert*", "std::vector<*>::reserve*",
	"std::vector<*>::emplace_back*", "std::vector<*>::push_back*",
	"std::__cxx11::basic_string<*>::_M_create*", "std::__cxx11::basic_string<*>::_M_mutate*",
	"std::__cxx11::basic_string<*>::reserve*", "std::__cxx11::basic_string<*>::_M_construct*",
	"std::__cxx11::basic_string<*>::_M_append*", "std::__cxx11::basic_string<*>::_M_replace*",
	"std::basic_string<*>::_M_create*", "std::basic_string<*>::_M_mutate*",
	"std::_Hashtable_alloc<*", "std::__detail::_Hashtable_alloc<*",
	"std::_Hashtable<*>::_M_rehash*", "std::_Hashtable<*>::_M_allocate_buckets*",
	"std::_Rb_tree<*>::_M_get_node*", "std::_Rb_tree<*>::_M_create_node*",
	"std::_Deque_base<*", "std::deque<*>::_M_reserve_map_at_back*",
	"std::deque<*>::_M_push_back_aux*",
	"std::_Function_base::_Base_manager<*>::_M_init_functor*",
	"std::make_shared<*", "std::__shared_count<*>::__shared_count*",
	"std::__allocate_shared<*", "std::_Sp_counted_ptr_inplace<*",
	/* Rust: the global allocator shims, alloc::, RawVec growth */
	"__rust_alloc*", "__rust_realloc", "__rust_dealloc", "__rdl_*", "__rg_*",
	"alloc::alloc::*", "alloc::raw_vec::*", "<alloc::raw_vec::*",
	"alloc::vec::Vec<*>::reserve*",
	"alloc::vec::Vec<*>::push*", "alloc::vec::Vec<*>::with_capacity*",
	"alloc::string::String::reserve*", "alloc::string::String::push*",
	"alloc::boxed::Box<*>::new*", "std::alloc::*", "<std::alloc::System as *",
	"<alloc::alloc::Global as *", "hashbrown::raw::*::reserve_rehash*",
	"hashbrown::raw::*::resize*", "hashbrown::raw::alloc::*",
	/* Go runtime */
	"runtime.mallocgc", "runtime.newobject", "runtime.newarray", "runtime.makeslice*",
	"runtime.growslice", "runtime.makemap*", "runtime.mapassign*", "runtime.rawstring*",
	"runtime.rawbyteslice", "runtime.rawruneslice", "runtime.concatstring*",
	"runtime.slicebytetostring", "runtime.stringtoslice*", "runtime.convT*",
	"runtime.malg", "runtime.makechan",
	NULL,
};

bool machinery__match(const char *name)
{
	const char *const *p;

	for (p = patterns; *p; p++)
		if (!fnmatch(*p, name, FNM_NOESCAPE))
			return true;
	return false;
}
