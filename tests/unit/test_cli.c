// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cli/ modules: diff classification, allocator machinery, short names, aligned tables. */
#include <math.h>
#include <stdlib.h>

#include "diff_rows.h"
#include "empty.h"
#include "machinery.h"
#include "shorten.h"
#include "table.h"
#include "test.h"

#define MiB 1048576.0

static void test_classify_spec_order(void)
{
	struct diff_opts o = { .threshold_bytes = 4096, .threshold_pct = 5,
			       .min_span_bytes = 20 * 1048576 };
	static const struct {
		double before, after;
		enum diff_kind want;
		const char *reason;
	} cases[] = {
		/* diff's boundary table (docs/cli.md), --min-span-bytes 20MiB */
		{ 19, 19.5, KIND_QUIET, "min_span_bytes" },
		{ 19, 20, KIND_REGRESSION, NULL },
		{ 20, 19, KIND_IMPROVEMENT, NULL },	/* exactly -5%: the gate is >= */
		{ 0, 19, KIND_QUIET, "min_span_bytes" },
		{ 0, 20, KIND_NEW, NULL },
		{ 20, 0, KIND_GONE, NULL },
		{ 30, 31, KIND_QUIET, "threshold" },	/* 3.3% < 5% */
		{ 30, 30, KIND_QUIET, "threshold" },
	};
	const char *reason;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum diff_kind k = diff_classify(cases[i].before * MiB, cases[i].after * MiB, &o,
						 &reason);

		ASSERT_STREQ(diff_kind_name(k), diff_kind_name(cases[i].want), "kind");
		ASSERT_TRUE(cases[i].reason ? reason && !strcmp(reason, cases[i].reason) : !reason,
			    "quiet reason");
	}
	o.threshold_bytes = 2 * 1048576;
	ASSERT_EQ(diff_classify(19 * MiB, 20 * MiB, &o, &reason), KIND_QUIET,
		  "1 MiB < 2 MiB threshold");
	/* new/gone below the byte threshold are quiet, not new/gone */
	o.min_span_bytes = 0;
	ASSERT_EQ(diff_classify(0, 1 * MiB, &o, &reason), KIND_QUIET, "small new span");
	ASSERT_EQ(diff_classify(1 * MiB, 0, &o, &reason), KIND_QUIET, "small gone span");
}

static void test_classify_noise(void)
{
	/* rate 512 KiB, 100 -> 106 MiB: sigma = sqrt(524288 * 206 MiB) = 10.15 MiB, z = 0.59 */
	struct diff_opts o = { .threshold_bytes = 4096, .threshold_pct = 5, .rate = 524288 };
	const char *reason;

	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_REGRESSION, "no gate");
	o.min_confidence = 0.5;
	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_REGRESSION, "0.59 > 0.5");
	o.min_confidence = 0.6;
	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_QUIET, "0.59 < 0.6");
	ASSERT_STREQ(reason, "noise", "reason");
	/* rate 1 (every allocation): sigma = sqrt(1 B * 206 MiB) = 14.7 KB, far below 6 MiB */
	o.rate = 1;
	o.min_confidence = 3;
	ASSERT_EQ(diff_classify(100 * MiB, 106 * MiB, &o, &reason), KIND_REGRESSION, "rate 1");
}

static void test_machinery(void)
{
	static const char *const yes[] = {
		"malloc", "__libc_calloc", "je_mallocx", "_rjem_malloc", "mi_malloc_aligned",
		"tc_new", "operator new(unsigned long)", "_Znwm",
		"std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&)",
		"__rust_alloc", "alloc::raw_vec::finish_grow", "alloc::alloc::exchange_malloc",
		"runtime.mallocgc", "runtime.growslice",
	};
	static const char *const no[] = {
		"main", "parse_header", "std::vector<int>::size", "my_malloc_stats",
		"handle_request", "mallocate_pool", "alloc_abc", "runtime.main",
	};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ASSERT_TRUE(machinery__match(yes[i]), yes[i]);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ASSERT_TRUE(!machinery__match(no[i]), no[i]);
}

/* the documented default list of wrappers (docs/cli.md), looked through and reported */
static void test_machinery_kinds(void)
{
	static const char *const wrappers[] = {
		"zmalloc", "zmalloc_usable", "ztrymalloc_usable", "ngx_alloc", "ngx_palloc",
		"ngx_pnalloc", "ngx_pcalloc", "sqlite3Malloc", "sqlite3MemMalloc",
		"sqlite3DbMallocRawNN", "g_malloc", "g_malloc0", "g_realloc", "g_malloc_n",
		"xmalloc", "xcalloc", "xrealloc", "xstrdup", "PyMem_Malloc", "PyMem_RawMalloc",
		"PyObject_Malloc", "_PyObject_Malloc",
		"alloc::alloc::Global::alloc_impl", "alloc::raw_vec::RawVec<T,A>::grow_one",
		"<alloc::raw_vec::RawVec<T,A>>::reserve_for_push",
		"std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&)",
		"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)",
		"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
		"__gnu_cxx::new_allocator<int>::allocate(unsigned long, void const*)",
		"std::allocator<char>::allocate(unsigned long)",
		/* a function template's demangled name begins with its return type */
		"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >& std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > >::emplace_back<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > >(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&)",
		"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string<std::allocator<char> >(char const*, std::allocator<char> const&)",
		/* a return type shorter than "operator" */
		"void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int&&)",
		"void std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)",
		"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::append(char const*, unsigned long)",
		"std::_Hashtable<int, std::pair<int const, int>, std::allocator<std::pair<int const, int> >, std::__detail::_Select1st, std::equal_to<int>, std::hash<int>, std::__detail::_Mod_range_hashing, std::__detail::_Default_ranged_hash, std::__detail::_Prime_rehash_policy, std::__detail::_Hashtable_traits<false, false, true> >::_Scoped_node::_Scoped_node<std::piecewise_construct_t const&, std::tuple<int const&>, std::tuple<> >(std::__detail::_Hashtable_alloc<std::allocator<std::__detail::_Hash_node<std::pair<int const, int>, false> > >*, std::piecewise_construct_t const&, std::tuple<int const&>&&, std::tuple<>&&)",
	};
	static const char *const allocators[] = {
		"malloc", "je_mallocx", "operator new(unsigned long)", "__rust_alloc",
		"__rdl_alloc", "runtime.mallocgc",
	};
	static const char *const skip[] = { "proj_*alloc", "arena_push" };
	size_t i;

	for (i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++)
		ASSERT_EQ(machinery__classify(wrappers[i], NULL, 0), MACHINERY_WRAPPER, wrappers[i]);
	for (i = 0; i < sizeof(allocators) / sizeof(allocators[0]); i++)
		ASSERT_EQ(machinery__classify(allocators[i], NULL, 0), MACHINERY_ALLOCATOR,
			  allocators[i]);
	ASSERT_EQ(machinery__classify("proj_alloc", NULL, 0), MACHINERY_NONE, "not by default");
	ASSERT_EQ(machinery__classify("proj_alloc", skip, 2), MACHINERY_WRAPPER, "--skip glob");
	ASSERT_EQ(machinery__classify("proj_realloc", skip, 2), MACHINERY_WRAPPER, "--skip glob *");
	ASSERT_EQ(machinery__classify("proj_allocate", skip, 2), MACHINERY_NONE, "whole name");
	ASSERT_EQ(machinery__classify("malloc", skip, 2), MACHINERY_ALLOCATOR, "the allocator first");
	ASSERT_EQ(machinery__classify("", skip, 2), MACHINERY_NONE, "no name");
	/* a parameter or a return type naming an allocator does not make a wrapper */
	ASSERT_EQ(machinery__classify("parse(std::allocator<char> const&)", NULL, 0), MACHINERY_NONE,
		  "a parameter");
	ASSERT_EQ(machinery__classify("std::vector<int>* make_list<int>(int)", NULL, 0),
		  MACHINERY_NONE, "a return type");
	ASSERT_EQ(machinery__classify("void fill_index<std::__cxx11::basic_string<char> >(std::unordered_map<int, int>&, int)", NULL, 0),
		  MACHINERY_NONE, "a template of the program's own");
}

static void test_shorten(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(int&&)",
		  "std::vector<…>::_M_realloc_insert<…>(…)" },
		{ "std::_Hashtable<std::__cxx11::basic_string<char>, std::pair<int const, int> >::_M_insert(std::pair<int const, int> const&, std::integral_constant<bool, true>)",
		  "std::_Hashtable<…>::_M_insert(…)" },
		{ "<alloc::alloc::Global as core::alloc::Allocator>::allocate",
		  "<alloc::alloc::Global as core::alloc::Allocator>::allocate" },
		{ "hashbrown::raw::RawTable<T,A>::reserve_rehash", "hashbrown::raw::RawTable<…>::reserve_rehash" },
		{ "(anonymous namespace)::parse(char const*)", "(anonymous namespace)::parse(…)" },
		{ "bool operator< <int>(foo const&, foo const&)", "bool operator< <…>(…)" },
		{ "app::{lambda(int)#1}::operator()(int) const", "app::{lambda(…)#1}::operator()(…) const" },
		{ "std::map<int, int>::operator->() const", "std::map<…>::operator->() const" },
		{ "operator new[](unsigned long)", "operator new[](…)" },
		{ "main", "main" },
		{ "f()", "f()" },
		{ "unbalanced<int", "unbalanced<int" },
	};
	char buf[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ASSERT_STREQ(shorten_name(cases[i].in, strlen(cases[i].in), buf, sizeof(buf)),
			     cases[i].out, cases[i].in);
	ASSERT_STREQ(shorten_name("abc(int) (x.c:1)", 8, buf, sizeof(buf)), "abc(…)",
		     "only the first n bytes");
	ASSERT_STREQ(shorten_name("abcdef", 6, buf, 4), "abc", "cut to the buffer");
}

static void test_table(void)
{
	struct table *t = table__new("lr", (const char *const[]){ "NAME", "BYTES" });
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	table__add(t, (const char *const[]){ "  deep", "1.00 MiB" });
	table__add(t, (const char *const[]){ "σ", "12 B" });
	table__add(t, (const char *const[]){ "x", "" });
	table__print(t, f);
	fclose(f);
	ASSERT_STREQ(out, "NAME       BYTES\n  deep  1.00 MiB\nσ           12 B\nx\n",
		     "aligned by display width, no trailing blanks");
	free(out);
	table__free(t);
}

/* a cut column: its cells cut in the middle (start and end kept), widths in columns */
static void test_table_fit(void)
{
	struct table *t = table__new("lr", (const char *const[]){ "NAME", "BYTES" });
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	table__add(t, (const char *const[]){ "abcdefghijklmnopqrstuvwxyz0123456789 (σ.c:1)", "1 B" });
	table__add(t, (const char *const[]){ "short", "2 B" });
	table__fit(t, 0, 0, 30);
	f = open_memstream(&out, &len);
	table__print(t, f);
	fclose(f);
	ASSERT_STREQ(out, "NAME                            BYTES\n"
			  "abcdefghijklmnopqrs…89 (σ.c:1)    1 B\n"
			  "short                             2 B\n", "cut to 30 columns");
	free(out);
	out = NULL;
	/* a row limit: 24 columns for the name whatever the others leave */
	table__fit(t, 0, 20, 0);
	f = open_memstream(&out, &len);
	table__print(t, f);
	fclose(f);
	ASSERT_STREQ(out, "NAME                      BYTES\n"
			  "abcdefghijklmno… (σ.c:1)    1 B\n"
			  "short                       2 B\n", "the minimum width");
	free(out);
	table__free(t);
}

/* why a profile is empty, from the facts culpert-bpf records */
static void test_empty(void)
{
	struct empty_facts f = { .samples = 0, .have_calls = true, .calls = 0, .bytes = 0,
				 .rate = 524288, .duration_ns = 5000000000ULL, .pid = 42 };
	char buf[1024];

	ASSERT_TRUE(empty__explain(&f, buf, sizeof(buf)), "empty");
	ASSERT_TRUE(strstr(buf, "no allocator call was seen in 5.0s") &&
		    strstr(buf, "'culpert-bpf probes --pid 42'"), buf);
	/* 40 KiB at 512 KiB: 0.078 samples expected; 40960 / 100 = 409 -> --rate 256 */
	f.calls = 640;
	f.bytes = 40960;
	empty__explain(&f, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "640 allocator calls for 40.00 KiB in 5.0s: 0.078 samples expected "
			   "at "
			   "one per 512.00 KiB") && strstr(buf, "try --rate 256 "), buf);
	f.bytes = 10 << 20;	/* 10 MiB / 100 = 104857 -> 64KiB */
	empty__explain(&f, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "try --rate 64KiB "), buf);
	f.go = true;
	empty__explain(&f, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "written in Go") &&
		    strstr(buf, "(640 C allocator calls for 10.00 MiB"),
		    buf);
	f.go = false;
	/* 2 calls of 128 B: rate 1 samples both, not "about 100" */
	f.calls = 2;
	f.bytes = 256;
	empty__explain(&f, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "try --rate 1 (every call: 2 samples at this load)") &&
		    !strstr(buf, "about 100"), buf);
	/* a parent whose children serve: they are named, --children suggested, no rate hint */
	f.children = "43 (nginx), 44 (nginx)";
	empty__explain(&f, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "only 2 allocator calls for 256 B in 5.0s by pid 42 itself") &&
		    strstr(buf, "child processes 43 (nginx), 44 (nginx) were not profiled") &&
		    strstr(buf, "'culpert-bpf attach --pid 42 --children'") &&
		    !strstr(buf, "--rate 1"), buf);
	f.calls = 0;
	f.bytes = 0;
	empty__explain(&f, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "pid 42 itself did not allocate") && strstr(buf, "--children"), buf);
	f.children = NULL;
	f.have_calls = false;
	empty__explain(&f, buf, sizeof(buf));
	ASSERT_TRUE(strstr(buf, "does not say how many allocator calls"), buf);
	f.samples = 1;
	buf[0] = '\0';
	ASSERT_TRUE(!empty__explain(&f, buf, sizeof(buf)) && !buf[0], "a sample: nothing to say");
}

int main(void)
{
	test_group = "cli";
	RUN_TEST(test_classify_spec_order);
	RUN_TEST(test_classify_noise);
	RUN_TEST(test_machinery);
	RUN_TEST(test_machinery_kinds);
	RUN_TEST(test_shorten);
	RUN_TEST(test_table);
	RUN_TEST(test_table_fit);
	RUN_TEST(test_empty);
	return TEST_EXIT();
}
