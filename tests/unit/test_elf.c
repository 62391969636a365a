// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ELF objects (build IDs, symbols, segments) and /proc/PID/maps parsing, on fixtures. */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>

#include "elfobj.h"
#include "procmaps.h"
#include "test.h"

#define FIXTURE_BUILD_ID "00112233445566778899aabbccddeeff01234567"

static const char *fixture(const char *name)
{
	static char path[4096];
	const char *out = getenv("OUTPUT");

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s", out ? out : ".output", name);
	return path;
}

static void test_build_ids(void)
{
	struct elfobj *o = elfobj__open(fixture("elf_buildid"));

	if (!ASSERT_OK_PTR(o, "open fixture"))
		return;
	ASSERT_STREQ(elfobj__build_id(o), FIXTURE_BUILD_ID, "explicit build id");
	ASSERT_EQ(elfobj__type(o), ET_DYN, "PIE executable");
	elfobj__free(o);
	o = elfobj__open(fixture("elf_stripped"));
	if (ASSERT_OK_PTR(o, "open stripped")) {
		ASSERT_STREQ(elfobj__build_id(o), FIXTURE_BUILD_ID, "stripping keeps the note");
		ASSERT_TRUE(!elfobj__has_symtab(o), "no .symtab after strip");
		/* -rdynamic: the functions stay in .dynsym */
		ASSERT_TRUE(elfobj__sym_by_name(o, "fixture_alpha") != NULL, ".dynsym still there");
		elfobj__free(o);
	}
	o = elfobj__open(fixture("elf_nobuildid"));
	if (ASSERT_OK_PTR(o, "open no-build-id")) {
		ASSERT_STREQ(elfobj__build_id(o), "", "no build id is empty");
		elfobj__free(o);
	}
}

static void test_symbols(void)
{
	struct elfobj *o = elfobj__open(fixture("elf_buildid"));
	const struct elf_symbol *a, *b;
	uint64_t off, vaddr;

	if (!ASSERT_OK_PTR(o, "open fixture"))
		return;
	ASSERT_TRUE(elfobj__has_symtab(o), ".symtab present");
	a = elfobj__sym_by_name(o, "fixture_alpha");
	if (!ASSERT_OK_PTR(a, "fixture_alpha"))
		goto out;
	ASSERT_TRUE(a->size > 0, "sized");
	b = elfobj__sym_by_addr(o, a->value + a->size - 1);
	ASSERT_TRUE(b && !strcmp(b->name, "fixture_alpha"), "address inside -> function");
	ASSERT_TRUE(elfobj__sym_by_name(o, "no_such_function") == NULL, "absent name");
	ASSERT_EQ(elfobj__vaddr_to_offset(o, a->value, &off), 0, "vaddr -> offset");
	ASSERT_EQ(elfobj__offset_to_vaddr(o, off, &vaddr), 0, "offset -> vaddr");
	ASSERT_EQ(vaddr, a->value, "round trip");
out:
	elfobj__free(o);
}

/*
 * Trimmed, an object read rather than mapped answers as before: its
 * symbols and sections are read again (under ASan: nothing of the old
 * handle is used after it went).
 */
static void test_trim(void)
{
	struct elfobj *o = elfobj__open_unmapped(fixture("elf_stripped"));
	const struct elf_symbol *a;
	uint64_t value, size;
	size_t n, n_again;
	int round;

	if (!ASSERT_OK_PTR(o, "open unmapped"))
		return;
	a = elfobj__sym_by_name(o, "fixture_alpha");
	if (!ASSERT_OK_PTR(a, "fixture_alpha in .dynsym"))
		goto out;
	value = a->value;
	size = a->size;
	elfobj__symbols(o, &n);
	for (round = 0; round < 2; round++) {
		elfobj__trim(o);
		a = elfobj__sym_by_name(o, "fixture_alpha");
		if (!ASSERT_OK_PTR(a, "fixture_alpha after a trim"))
			goto out;
		ASSERT_EQ(a->value, value, "same address");
		ASSERT_EQ(a->size, size, "same size");
		ASSERT_TRUE(elfobj__sym_by_addr(o, value + size - 1) == a, "by address");
		elfobj__symbols(o, &n_again);
		ASSERT_EQ(n_again, n, "every symbol again");
		ASSERT_STREQ(elfobj__build_id(o), FIXTURE_BUILD_ID, "build ID kept");
		ASSERT_TRUE(elfobj__mentions_any(o, (const char *const[]){ "fixture_alpha" }, 1),
			    "sections read again through the new handle");
	}
	/* trimming before any use, and a NULL object, are no-ops */
	elfobj__trim(o);
	elfobj__trim(o);
	elfobj__trim(NULL);
	ASSERT_TRUE(elfobj__sym_by_name(o, "fixture_alpha") != NULL, "after trims in a row");
out:
	elfobj__free(o);
}

static void test_not_elf(void)
{
	struct elfobj *o = elfobj__open("/proc/self/status");

	ASSERT_TRUE(o == NULL && errno == ENOEXEC, "a text file is not an ELF object");
	o = elfobj__open("/nonexistent/file");
	ASSERT_TRUE(o == NULL && errno == ENOENT, "missing file");
}

static void test_procmaps(void)
{
	const char *text =
		"55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234   /usr/bin/my app\n"
		"55d0c0a01000-55d0c0a05000 r-xp 00001000 08:01 1234   /usr/bin/my app\n"
		"55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0      [heap]\n"
		"7f0000000000-7f0000010000 r-xp 00002000 08:01 99     /tmp/lib.so (deleted)\n"
		"7f0000010000-7f0000020000 rw-p 00000000 00:00 0 \n"
		"7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0      [vdso]\n";
	struct procmaps m;
	const struct procmap *p;

	if (!ASSERT_EQ(procmaps__parse(text, &m), 0, "parse"))
		return;
	ASSERT_EQ(m.n, 6, "entries");
	p = procmaps__find(&m, 0x55d0c0a02345);
	ASSERT_TRUE(p && p->executable && p->offset == 0x1000, "find text");
	ASSERT_STREQ(p ? p->path : NULL, "/usr/bin/my app", "path with a space");
	ASSERT_TRUE(procmap__is_file(p), "file-backed");
	ASSERT_TRUE(procmaps__find(&m, 0x55d0c0a05000) == NULL, "end is exclusive");
	p = procmaps__find(&m, 0x55d0c1000010);
	ASSERT_TRUE(p && !procmap__is_file(p) && p->writable, "[heap] is not a file");
	ASSERT_STREQ(m.v[3].path, "/tmp/lib.so (deleted)", "deleted file");
	ASSERT_STREQ(m.v[4].path, "", "anonymous");
	ASSERT_TRUE(!procmap__is_file(&m.v[5]), "[vdso]");
	procmaps__free(&m);
	ASSERT_TRUE(procmaps__parse("not a maps line\n", &m) < 0, "junk refused");
}

int main(void)
{
	test_group = "unit/elf";
	RUN_TEST(test_build_ids);
	RUN_TEST(test_symbols);
	RUN_TEST(test_trim);
	RUN_TEST(test_not_elf);
	RUN_TEST(test_procmaps);
	return TEST_EXIT();
}
