// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <fnmatch.h>
#include <string.h>

#include "machinery.h"

/*
 * Glob patterns over demangled names.  Prefixes of whole families rather
 * than symbol lists: allocators grow internal helpers with every release,
 * and a helper missing here would become everybody's top callsite.
 */
static const char *const allocator_patterns[] = {
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
	/* C++ operator new and delete, demangled and raw */
	"operator new*", "operator delete*", "_Znw*", "_Zna*", "_Zdl*", "_Zda*",
	/* Rust's global allocator shims and System's implementation */
	"__rust_alloc*", "__rust_realloc", "__rust_dealloc", "__rdl_*", "__rg_*",
	"std::alloc::*", "<std::alloc::System as *", "std::sys::*::alloc::*",
	/* Go runtime: its own allocator, which never calls malloc */
	"runtime.mallocgc", "runtime.newobject", "runtime.newarray", "runtime.makeslice*",
	"runtime.growslice", "runtime.makemap*", "runtime.mapassign*", "runtime.rawstring*",
	"runtime.rawbyteslice", "runtime.rawruneslice", "runtime.concatstring*",
	"runtime.slicebytetostring", "runtime.stringtoslice*", "runtime.convT*",
	"runtime.malg", "runtime.makechan",
	NULL,
};

/*
 * Wrappers that only pass a request on to the allocator, in the programs
 * and libraries almost every C service is built on (docs/cli.md lists them).
 * Each is looked through to find the callsite, and named in the report.
 */
static const char *const wrapper_patterns[] = {
	/* redis */
	"zmalloc", "zmalloc_usable", "zcalloc", "zcalloc_usable", "zrealloc", "zrealloc_usable",
	"ztrymalloc*", "ztrycalloc*", "ztryrealloc*", "zmalloc_no_tcache", "zstrdup",
	/* nginx: the pool (ngx_palloc_small, _large and _block inside) and what it calls */
	"ngx_alloc", "ngx_calloc", "ngx_memalign", "ngx_palloc*", "ngx_pnalloc", "ngx_pcalloc",
	"ngx_pmemalign",
	/* postgres: palloc and the memory contexts behind it */
	"palloc", "palloc0", "palloc_extended", "palloc_aligned", "MemoryContextAlloc*",
	"repalloc*", "AllocSetAlloc*", "AllocSetRealloc", "GenerationAlloc*", "GenerationRealloc",
	"SlabAlloc*", "BumpAlloc*",
	/* sqlite */
	"sqlite3Malloc*", "sqlite3_malloc*", "sqlite3Realloc", "sqlite3_realloc*",
	"sqlite3MemMalloc", "sqlite3MemRealloc", "sqlite3DbMalloc*", "sqlite3DbRealloc*",
	"dbMallocRawFinish", "dbReallocFinish", "mallocWithAlarm", "sqlite3DbStrDup",
	"sqlite3DbStrNDup",
	/* glib (g_new and friends are macros over g_malloc_n and co.) */
	"g_malloc*", "g_malloc0*", "g_realloc*", "g_try_malloc*", "g_try_realloc*",
	"g_slice_alloc*", "g_strdup", "g_strndup", "g_memdup*",
	/* gnulib, binutils, gcc and friends */
	"xmalloc", "xcalloc", "xzalloc", "xrealloc", "xnmalloc", "xnrealloc", "x2realloc",
	"x2nrealloc", "xcharalloc", "xstrdup", "xstrndup", "xmemdup", "xreallocarray",
	"ximalloc", "xicalloc", "xizalloc", "xirealloc", "xireallocarray", "ximemdup*",
	/* CPython */
	"PyMem_*", "_PyMem_*", "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc",
	"_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc", "_PyObject_GC_Malloc",
	"_PyObject_GC_Calloc", "gc_alloc", "pymalloc_*",
	/* C++ allocators and container growth (libstdc++) */
	"std::__new_allocator<*", "__gnu_cxx::new_allocator<*",
	"std::allocator<*", "std::allocator_traits<*", "std::_Vector_base<*",
	"std::vector<*>::_M_realloc_insert*", "std::vector<*>::_M_realloc_append*",
	"std::vector<*>::_M_default_append*", "std::vector<*>::_M_fill_insert*",
	"std::vector<*>::_M_range_insert*", "std::vector<*>::reserve*",
	"std::vector<*>::emplace_back*", "std::vector<*>::push_back*",
	"std::__cxx11::basic_string<*>::_M_create*", "std::__cxx11::basic_string<*>::_M_mutate*",
	"std::__cxx11::basic_string<*>::reserve*", "std::__cxx11::basic_string<*>::_M_construct*",
	"std::__cxx11::basic_string<*>::_M_append*", "std::__cxx11::basic_string<*>::_M_replace*",
	"std::__cxx11::basic_string<*>::basic_string*", "std::__cxx11::basic_string<*>::append*",
	"std::__cxx11::basic_string<*>::push_back*", "std::__cxx11::basic_string<*>::operator+=*",
	"std::basic_string<*>::_M_create*", "std::basic_string<*>::_M_mutate*",
	"std::_Hashtable_alloc<*", "std::__detail::_Hashtable_alloc<*",
	"std::_Hashtable<*>::_M_rehash*", "std::_Hashtable<*>::_M_allocate_buckets*",
	"std::_Hashtable<*>::_Scoped_node::*", "std::_Hashtable<*>::_M_insert_unique_node*",
	"std::__detail::_Map_base<*>::operator[]*", "std::unordered_map<*>::operator[]*",
	"std::operator+<*",
	"std::_Rb_tree<*>::_M_get_node*", "std::_Rb_tree<*>::_M_create_node*",
	"std::_Deque_base<*", "std::deque<*>::_M_reserve_map_at_back*",
	"std::deque<*>::_M_push_back_aux*",
	"std::_Function_base::_Base_manager<*>::_M_init_functor*",
	"std::make_shared<*", "std::__shared_count<*>::__shared_count*",
	"std::__allocate_shared<*", "std::_Sp_counted_ptr_inplace<*",
	/* Rust: alloc::, RawVec growth, Vec/String/Box/HashMap growth */
	"alloc::alloc::*", "<alloc::alloc::Global as *", "alloc::raw_vec::*", "<alloc::raw_vec::*",
	"alloc::vec::Vec<*>::reserve*", "alloc::vec::Vec<*>::push*",
	"alloc::vec::Vec<*>::with_capacity*", "alloc::string::String::reserve*",
	"alloc::string::String::push*", "alloc::boxed::Box<*>::new*",
	"hashbrown::raw::*::reserve_rehash*", "hashbrown::raw::*::resize*",
	"hashbrown::raw::alloc::*",
	NULL,
};

/*
 * Wrappers only the wrapper family itself calls: their callers are its
 * static internals (nginx's ngx_palloc_large and ngx_palloc_block, which
 * ngx_palloc reaches by a tail call, so no frame of it is left), so an
 * unnamed frame calling one of them is taken for those internals.
 */
static const char *const inner_patterns[] = {
	"ngx_alloc", "ngx_calloc", "ngx_memalign",
	NULL,
};

static bool match_list(const char *const *p, const char *name)
{
	for (; *p; p++)
		if (!fnmatch(*p, name, FNM_NOESCAPE))
			return true;
	return false;
}

bool machinery__glob_any(const char *name, const char *const *globs, size_t n_globs)
{
	size_t i;

	for (i = 0; i < n_globs; i++)
		if (!fnmatch(globs[i], name, FNM_NOESCAPE))
			return true;
	return false;
}

/*
 * The name without the return type a demangled function template carries
 * ("std::string& std::vector<...>::emplace_back<...>(...)"): past the last
 * blank outside brackets before the parameter list, unless that blank
 * belongs to an operator ("operator new(unsigned long)").
 */
static const char *without_return_type(const char *name)
{
	const char *p, *start = name;
	int depth = 0;

	for (p = name; *p; p++) {
		if (*p == '<' || *p == '(' || *p == '[' || *p == '{') {
			if (*p == '(' && !depth)
				break;
			depth++;
		} else if ((*p == '>' || *p == ')' || *p == ']' || *p == '}') && depth) {
			depth--;
		} else if (*p == ' ' && !depth && (p - name < 8 || strncmp(p - 8, "operator", 8))) {
			start = p + 1;
		}
	}
	return start;
}

static enum machinery_kind classify(const char *name, const char *const *skip, size_t n_skip)
{
	if (match_list(allocator_patterns, name))
		return MACHINERY_ALLOCATOR;
	if (match_list(wrapper_patterns, name) || machinery__glob_any(name, skip, n_skip))
		return MACHINERY_WRAPPER;
	return MACHINERY_NONE;
}

enum machinery_kind machinery__classify(const char *name, const char *const *skip, size_t n_skip)
{
	enum machinery_kind k;
	const char *bare;

	if (!name[0])
		return MACHINERY_NONE;
	k = classify(name, skip, n_skip);
	bare = without_return_type(name);
	return k == MACHINERY_NONE && bare != name ? classify(bare, skip, n_skip) : k;
}

bool machinery__inner(const char *name)
{
	return name[0] && match_list(inner_patterns, name);
}

bool machinery__match(const char *name)
{
	return machinery__classify(name, NULL, 0) != MACHINERY_NONE;
}
