// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lib/sym/dwlayout.c against the compiler: the layout read from the DWARF
 * of tests/fixtures/layout_fixture.c is what offsetof and sizeof say for
 * the same header here; and elfobj__data_sym on its data and TLS symbols.
 */
#include <errno.h>
#include <gelf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "../fixtures/layout_fixture.h"
#include "dwlayout.h"
#include "elfobj.h"
#include "test.h"

static struct elfobj *obj;
static struct dwlayout *dl;

static const char *fixture(const char *name)
{
	static char path[4096];
	const char *out = getenv("OUTPUT");

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s", out ? out : ".output", name);
	return path;
}

/* field `path` of `type` is at `off`, `size` bytes, `count` elements of `elem` */
static void expect_field(Dwarf_Die *type, const char *path, uint64_t off, uint64_t size,
			 uint64_t count, uint64_t elem)
{
	struct dw_field f;
	char what[128];

	snprintf(what, sizeof(what), "%s found", path);
	if (!ASSERT_EQ(dw_type_field(type, path, &f), 0, what))
		return;
	snprintf(what, sizeof(what), "%s offset", path);
	ASSERT_EQ(f.offset, off, what);
	snprintf(what, sizeof(what), "%s size", path);
	ASSERT_EQ(f.size, size, what);
	snprintf(what, sizeof(what), "%s count", path);
	ASSERT_EQ(f.count, count, what);
	snprintf(what, sizeof(what), "%s element size", path);
	ASSERT_EQ(f.elem_size, elem, what);
}

static void test_members(void)
{
	Dwarf_Die t;
	uint64_t size;

	if (!ASSERT_EQ(dwlayout__var_type(dl, "lf_var", &t), 0, "variable lf_var"))
		return;
	ASSERT_EQ(dw_type_size(&t, &size), 0, "its type has a size");
	ASSERT_EQ(size, sizeof(struct lf_outer), "sizeof(struct lf_outer)");
	expect_field(&t, "c", offsetof(struct lf_outer, c), 1, 1, 1);
	expect_field(&t, "in", offsetof(struct lf_outer, in), sizeof(struct lf_inner), 1,
		     sizeof(struct lf_inner));
	/* a member of a member, through the typedef'd and the plain struct */
	expect_field(&t, "in.b", offsetof(struct lf_outer, in.b), sizeof(long), 1, sizeof(long));
	/* members of anonymous unions and structs are the outer struct's */
	expect_field(&t, "u64", offsetof(struct lf_outer, u64), 8, 1, 8);
	expect_field(&t, "u16", offsetof(struct lf_outer, u16), 2, 1, 2);
	expect_field(&t, "w", offsetof(struct lf_outer, w), sizeof(int), 1, sizeof(int));
	expect_field(&t, "arr", offsetof(struct lf_outer, arr), sizeof(lf_var.arr), 3,
		     sizeof(lf_inner_t));
	/* of an array: its element 0's member */
	expect_field(&t, "arr.b", offsetof(struct lf_outer, arr[0].b), sizeof(long), 1,
		     sizeof(long));
	expect_field(&t, "counts", offsetof(struct lf_outer, counts), sizeof(lf_var.counts), 10,
		     sizeof(unsigned short));
	expect_field(&t, "ptr", offsetof(struct lf_outer, ptr), sizeof(void *), 1,
		     sizeof(void *));
}

static void test_not_given(void)
{
	struct dw_field f;
	Dwarf_Die t;

	if (!ASSERT_EQ(dwlayout__var_type(dl, "lf_var", &t), 0, "variable lf_var"))
		return;
	ASSERT_EQ(dw_type_field(&t, "nope", &f), -ENOENT, "no such member");
	ASSERT_EQ(dw_type_field(&t, "c.x", &f), -ENOENT, "a member of a char");
	ASSERT_EQ(dw_type_field(&t, "bits", &f), -EINVAL, "a bit field has no byte layout");
	ASSERT_EQ(dw_type_field(&t, "flex", &f), -EINVAL, "a flexible array has no count");
	ASSERT_EQ(dwlayout__var_type(dl, "no_such_var", &t), -ENOENT, "no such variable");
	ASSERT_EQ(dwlayout__type(dl, "no_such_type", &t), -ENOENT, "no such type");
}

static void test_types_by_name(void)
{
	Dwarf_Die t;
	uint64_t size;

	/* a struct tag and a typedef of it: the same struct */
	if (ASSERT_EQ(dwlayout__type(dl, "lf_inner", &t), 0, "struct lf_inner")) {
		dw_type_size(&t, &size);
		ASSERT_EQ(size, sizeof(struct lf_inner), "its size");
		expect_field(&t, "b", offsetof(struct lf_inner, b), sizeof(long), 1, sizeof(long));
	}
	if (ASSERT_EQ(dwlayout__type(dl, "lf_inner_t", &t), 0, "typedef lf_inner_t")) {
		dw_type_size(&t, &size);
		ASSERT_EQ(size, sizeof(lf_inner_t), "peeled to the struct");
	}
}

static void test_data_symbols(void)
{
	struct elf_symbol s;

	if (ASSERT_EQ(elfobj__data_sym(obj, "lf_var", &s), 0, "data symbol lf_var")) {
		ASSERT_EQ(s.type, STT_OBJECT, "an object");
		ASSERT_EQ(s.size, sizeof(struct lf_outer), "of its size");
		ASSERT_TRUE(s.value != 0, "with an address");
	}
	if (ASSERT_EQ(elfobj__data_sym(obj, "lf_tls", &s), 0, "TLS symbol lf_tls"))
		ASSERT_EQ(s.type, STT_TLS, "thread-local");
	ASSERT_EQ(elfobj__data_sym(obj, "main", &s), -ENOENT, "a function is no data symbol");
	ASSERT_EQ(elfobj__data_sym(obj, "no_such_symbol", &s), -ENOENT, "no such symbol");
}

int main(void)
{
	test_group = "dwlayout";
	obj = elfobj__open(fixture("layout_fixture"));
	if (!obj || !(dl = dwlayout__new(elfobj__elf(obj)))) {
		printf("FAIL dwlayout/open: cannot read %s\n", fixture("layout_fixture"));
		return 1;
	}
	RUN_TEST(test_members);
	RUN_TEST(test_not_given);
	RUN_TEST(test_types_by_name);
	RUN_TEST(test_data_symbols);
	dwlayout__free(dl);
	elfobj__free(obj);
	return TEST_EXIT();
}
