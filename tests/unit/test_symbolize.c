// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Symbolizer pieces without a process: display names (C++, Rust legacy and v0),
 * the search notes, and the symbolizer on the sym_cpp test target, whose
 * source is the ground truth for names and declaration lines.
 */
#include <limits.h>
#include <stdlib.h>

#include "debuginfo.h"
#include "demangle.h"
#include "elfobj.h"
#include "symbolize.h"
#include "test.h"

/* display names with parameters, as the symbolizer asks for them; want NULL: not mangled */
static void check_demangle(const char *mangled, const char *want)
{
	char *got = demangle(mangled, true);

	ASSERT_STREQ(got, want ? want : mangled, mangled);
	free(got);
}

static void test_demangle_cpp(void)
{
	check_demangle("_ZN4shop4PoolIcE4grabEm", "shop::Pool<char>::grab(unsigned long)");
	check_demangle("_Znwm", "operator new(unsigned long)");
	/* GCC clones keep their suffix: two copies of one function stay apart */
	check_demangle("_ZN4shop12handle_orderEi.constprop.0",
		       "shop::handle_order(int) [clone .constprop.0]");
}

static void test_demangle_rust(void)
{
	/* legacy: the hash goes */
	check_demangle("_ZN8sym_rust9warehouse5Shelf7reserve17h907844ba6428d78bE",
		       "sym_rust::warehouse::Shelf::reserve");
	check_demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE",
		       "std::rt::lang_start::{{closure}}");
	/* v0: the crate disambiguators go, generics stay */
	check_demangle("_RNvMNtCshWvohzxWpe1_8sym_rust9warehouseNtB2_5Shelf7reserve",
		       "<sym_rust::warehouse::Shelf>::reserve");
	check_demangle("_RINvNtCshWvohzxWpe1_8sym_rust9warehouse5stockmEB4_",
		       "sym_rust::warehouse::stock::<u32>");
}

static void test_demangle_plain(void)
{
	check_demangle("main", NULL);
	check_demangle("__libc_start_call_main", NULL);
	check_demangle("_Zgarbage", NULL);
}

static void test_search_notes_bounded(void)
{
	struct search_notes n = { 0 };
	int i;

	for (i = 0; i < 100; i++)
		search_notes__add(&n, "looked in /some/rather/long/directory/number/%d", i);
	ASSERT_TRUE(n.len < sizeof(n.buf), "notes stay inside their buffer");
	ASSERT_EQ(strlen(n.buf), n.len, "notes stay a string");
	ASSERT_TRUE(!strncmp(n.buf, "looked in /some/rather/long/directory/number/0; looked in",
			     57), "notes are joined with '; '");
}

/* the line of the source that holds `text`, 0 if none */
static int source_line(const char *path, const char *text)
{
	char buf[512];
	FILE *f = fopen(path, "r");
	int n = 0, found = 0;

	while (f && !found && fgets(buf, sizeof(buf), f)) {
		n++;
		if (strstr(buf, text))
			found = n;
	}
	if (f)
		fclose(f);
	return found;
}

static void test_symbolizer_function_start(void)
{
	struct symbolizer_opts so = { .sz = sizeof(so), .no_debuginfod = true };
	/* the targets are not rebuilt for a sanitizer run: TARGETS says where they are */
	const char *targets = getenv("TARGETS");
	const char *out = getenv("OUTPUT") ?: ".output";
	struct sym_frame f[SYM_MAX_FRAMES];
	const struct elf_symbol *sym;
	struct symbolizer *s = NULL;
	struct elfobj *obj = NULL;
	struct sym_object *o;
	char path[PATH_MAX];
	bool dwarf = false;
	int n;

	if (targets)
		snprintf(path, sizeof(path), "%s/sym_cpp", targets);
	else
		snprintf(path, sizeof(path), "%s/tests/targets/sym_cpp", out);
	obj = elfobj__open(path);
	s = symbolizer__new(&so);
	if (!ASSERT_OK_PTR(obj, path) || !ASSERT_OK_PTR(s, "symbolizer__new"))
		goto out;
	sym = elfobj__sym_by_name(obj, "_ZN4shop12handle_orderEi");
	o = symbolizer__object(s, elfobj__build_id(obj), path, NULL);
	if (!ASSERT_OK_PTR(sym, "handle_order symbol") || !ASSERT_OK_PTR(o, "object"))
		goto out;
	ASSERT_EQ(sym_object__level(o), SYM_LEVEL_DWARF, "found by build ID at its path, DWARF");
	ASSERT_STREQ(sym_object__why(o), "", "nothing missing");
	/* the same object again is the same cached object */
	ASSERT_TRUE(symbolizer__object(s, elfobj__build_id(obj), "/elsewhere", NULL) == o,
		    "one object per build ID");
	n = sym_object__frames(o, sym->value, f, SYM_MAX_FRAMES, &dwarf);
	if (!ASSERT_EQ(n, 1, "a function's first byte is in no inline frame"))
		goto out;
	ASSERT_TRUE(dwarf, "from DWARF");
	ASSERT_STREQ(f[0].name, "shop::handle_order(int)", "display name");
	ASSERT_STREQ(f[0].system_name, "_ZN4shop12handle_orderEi", "system name");
	ASSERT_TRUE(strstr(f[0].file, "/tests/targets/sym_cpp.cpp") &&
		    f[0].file[0] == '/', "absolute source path");
	ASSERT_EQ(f[0].start_line, source_line("tests/targets/sym_cpp.cpp",
					       "NOINLINE void handle_order(int n)"),
		  "start_line is the declaration");
out:
	symbolizer__free(s);
	elfobj__free(obj);
}

/* a path alone never identifies an object */
static void test_symbolizer_needs_build_id(void)
{
	struct symbolizer_opts so = { .sz = sizeof(so), .no_debuginfod = true };
	struct symbolizer *s = symbolizer__new(&so);
	struct sym_object *o;

	if (!ASSERT_OK_PTR(s, "symbolizer__new"))
		return;
	o = symbolizer__object(s, "", "/usr/lib/x86_64-linux-gnu/libc.so.6", NULL);
	if (ASSERT_OK_PTR(o, "object")) {
		ASSERT_EQ(sym_object__level(o), SYM_LEVEL_NONE, "nothing without a build ID");
		ASSERT_TRUE(strstr(sym_object__why(o), "no build ID") != NULL, "says why");
	}
	/* a build ID nothing on this machine has */
	o = symbolizer__object(s, "00112233445566778899aabbccddeeff00112233", "/nonexistent", NULL);
	if (ASSERT_OK_PTR(o, "object"))
		ASSERT_EQ(sym_object__level(o), SYM_LEVEL_NONE, "unknown build ID");
	symbolizer__free(s);
}

int main(void)
{
	test_group = "symbolize";
	RUN_TEST(test_demangle_cpp);
	RUN_TEST(test_demangle_rust);
	RUN_TEST(test_demangle_plain);
	RUN_TEST(test_search_notes_bounded);
	RUN_TEST(test_symbolizer_function_start);
	RUN_TEST(test_symbolizer_needs_build_id);
	return TEST_EXIT();
}
