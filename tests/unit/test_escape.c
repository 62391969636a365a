// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The escaping rule of each output format (lib/escape.c, lib/json.c), and tree paths. */
#include <stdlib.h>

#include "escape.h"
#include "json.h"
#include "test.h"
#include "treepath.h"

static void test_utf8(void)
{
	uint32_t cp = 0;

	ASSERT_EQ(utf8_decode("a", &cp), 1, "ASCII");
	ASSERT_TRUE(utf8_decode("\xc3\xa9", &cp) == 2 && cp == 0xe9, "U+00E9");
	ASSERT_TRUE(utf8_decode("\xe4\xb8\xad", &cp) == 3 && cp == 0x4e2d, "U+4E2D");
	ASSERT_TRUE(utf8_decode("\xf0\x9f\x98\x80", &cp) == 4 && cp == 0x1f600, "U+1F600");
	ASSERT_EQ(utf8_decode("\xe9", &cp), 0, "a lone 0xE9");
	ASSERT_EQ(utf8_decode("\xed\xa0\x80", &cp), 0, "a surrogate");
	ASSERT_EQ(utf8_decode("\xc0\xaf", &cp), 0, "overlong 2 bytes");
	ASSERT_EQ(utf8_decode("\xe0\x80\xaf", &cp), 0, "overlong 3 bytes");
	ASSERT_EQ(utf8_decode("\xf0\x80\x80\xaf", &cp), 0, "overlong 4 bytes");
	ASSERT_EQ(utf8_decode("\xf4\x90\x80\x80", &cp), 0, "past U+10FFFF");
	ASSERT_EQ(utf8_decode("\xe2\x82", &cp), 0, "truncated");
}

static void test_text(void)
{
	char b[256];

	ASSERT_STREQ(esc_text(b, sizeof(b), "ev\x1b[2Jx"), "ev\\x1b[2Jx", "ESC");
	ASSERT_STREQ(esc_text(b, sizeof(b), "a\x07\x08\r\n\t\x7f"), "a\\x07\\x08\\r\\n\\t\\x7f",
		     "BEL BS CR LF TAB DEL");
	ASSERT_STREQ(esc_text(b, sizeof(b), "caf\xe9"), "caf\\xe9", "invalid UTF-8");
	ASSERT_STREQ(esc_text(b, sizeof(b), "\xed\xa0\x80"), "\\xed\\xa0\\x80", "surrogate");
	ASSERT_STREQ(esc_text(b, sizeof(b), "c1 \xc2\x9b"), "c1 \\u009b", "C1 CSI");
	ASSERT_STREQ(esc_text(b, sizeof(b), "\xe2\x80\xae" "evil"), "\\u202eevil", "bidi override");
	ASSERT_STREQ(esc_text(b, sizeof(b), "caf\xc3\xa9 a;b|c`d\\e"), "caf\xc3\xa9 a;b|c`d\\e",
		     "the rest is kept");
	/* a cut never splits an escape */
	ASSERT_STREQ(esc_text(b, 6, "ab\x1b" "cd"), "ab", "cut before an escape");
	ASSERT_STREQ(esc_folded(b, sizeof(b), "a;b\nc"), "a:b\\nc", "folded");
}

static const char *to_str(void (*fn)(const char *, FILE *), const char *s, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	fn(s, f);
	fclose(f);
	return buf;
}

static void md_table(const char *s, FILE *f)
{
	esc_md_code(s, true, f);
}

static void md_line(const char *s, FILE *f)
{
	esc_md_code(s, false, f);
}

static void json(const char *s, FILE *f)
{
	json_put_str(f, s);
}

static void test_markdown(void)
{
	char b[256];

	ASSERT_STREQ(to_str(md_table, "a|b", b, sizeof(b)), "`a\\|b`", "pipe in a table");
	ASSERT_STREQ(to_str(md_line, "a|b", b, sizeof(b)), "`a|b`", "pipe outside one");
	ASSERT_STREQ(to_str(md_table, "a`b``c", b, sizeof(b)), "```a`b``c```", "fence");
	ASSERT_STREQ(to_str(md_table, "`x", b, sizeof(b)), "`` `x ``", "backtick at an end");
	ASSERT_STREQ(to_str(md_table, " x ", b, sizeof(b)), "`  x  `", "spaces at both ends");
	ASSERT_STREQ(to_str(md_table, "   ", b, sizeof(b)), "`   `", "all spaces");
	ASSERT_STREQ(to_str(md_table, "", b, sizeof(b)), "` `", "empty");
	ASSERT_STREQ(to_str(md_table, "a\rb\n<i>", b, sizeof(b)), "`a\\rb\\n<i>`",
		     "no line ending, HTML stays code");
	ASSERT_STREQ(esc_md_code_str(b, sizeof(b), "x|y", true), "`x\\|y`", "into a buffer");
}

static void test_xml(void)
{
	char b[256];

	ASSERT_STREQ(to_str(esc_xml_fputs, "<a href=\"x\">&'</a>", b, sizeof(b)),
		     "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;", "entities");
	ASSERT_STREQ(to_str(esc_xml_fputs, "caf\xe9\x01\xef\xbf\xbe", b, sizeof(b)),
		     "caf\\xe9\\x01\\ufffe", "forbidden characters");
}

static void test_json(void)
{
	char b[256];

	ASSERT_STREQ(to_str(json, "q\"b\\\n\t\x01\x7f", b, sizeof(b)),
		     "\"q\\\"b\\\\\\n\\t\\u0001\\u007f\"", "controls");
	ASSERT_STREQ(to_str(json, "caf\xe9 \xed\xa0\x80", b, sizeof(b)),
		     "\"caf\\ufffd \\ufffd\\ufffd\\ufffd\"", "invalid UTF-8 and a surrogate");
	ASSERT_STREQ(to_str(json, "\xc2\x85\xe2\x80\xa8\xc3\xa9", b, sizeof(b)),
		     "\"\\u0085\\u2028\xc3\xa9\"", "C1 and U+2028 escaped, the rest kept");
}

static void test_json_numbers(void)
{
	char b[256];
	FILE *f = fmemopen(b, sizeof(b), "w");
	struct json j;

	json_init(&j, f);
	json_begin(&j, '[');
	json_round(&j, 2.0 * 9223372036854775807.0);
	json_round(&j, -2.0 * 9223372036854775807.0);
	json_round(&j, NAN);
	json_round(&j, -0.2);
	json_end(&j, ']');
	fclose(f);
	ASSERT_STREQ(b, "[\n  9223372036854775807,\n  -9223372036854775808,\n  null,\n  0\n]\n",
		     "saturated, null, no -0");
}

/* a tree: 0 "a" <- 1 "b" <- 2 "c"; 3 "a!" (a root); 4 "ab" under 0 */
static const uint32_t parents[] = { TREEPATH_NONE, 0, 1, TREEPATH_NONE, 0 };
static const char *const names[] = { "a", "b", "c", "a!", "ab" };

static uint32_t t_parent(const void *ctx, uint32_t n)
{
	return parents[n];
}

static const char *t_name(const void *ctx, uint32_t n)
{
	return names[n];
}

static int sign(int x)
{
	return x < 0 ? -1 : x > 0;
}

static void test_treepath(void)
{
	struct treepath_tree t = { NULL, t_parent, t_name };
	char b[64], pa[64], pb[64];
	uint32_t i, k;

	ASSERT_EQ(treepath_write(&t, 2, b, sizeof(b)), 5, "length");
	ASSERT_STREQ(b, "a;b;c", "path");
	ASSERT_EQ(treepath_write(&t, 2, b, 4), 5, "cut: the whole length");
	ASSERT_STREQ(b, "a;b", "cut");
	ASSERT_TRUE(treepath_is(&t, 2, "a;b;c") && !treepath_is(&t, 2, "b;c") &&
		    !treepath_is(&t, 1, "a;b;c") && !treepath_is(&t, 2, "xa;b;c"), "is");
	/* the order of the written paths, by strcmp, for every pair */
	for (i = 0; i < 5; i++) {
		for (k = 0; k < 5; k++) {
			treepath_write(&t, i, pa, sizeof(pa));
			treepath_write(&t, k, pb, sizeof(pb));
			ASSERT_EQ(sign(treepath_cmp(&t, i, k)), sign(strcmp(pa, pb)), pa);
		}
	}
}

/* with the separator: 0 "semi;colon" <- 1 "frame"; 2 "back\\slash"; 3 "semi" <- 4 "colon" */
static const uint32_t sparents[] = { TREEPATH_NONE, 0, TREEPATH_NONE, TREEPATH_NONE, 3 };
static const char *const snames[] = { "semi;colon", "frame", "back\\slash", "semi", "colon" };

static uint32_t s_parent(const void *ctx, uint32_t n)
{
	return sparents[n];
}

static const char *s_name(const void *ctx, uint32_t n)
{
	return snames[n];
}

static void test_treepath_escape(void)
{
	struct treepath_tree t = { NULL, s_parent, s_name };
	char b[64], pa[64], pb[64];
	const char *p = "semi\\;colon;frame";
	uint32_t i, k;
	size_t n;

	ASSERT_EQ(treepath_write(&t, 1, b, sizeof(b)), 17, "length, escapes included");
	ASSERT_STREQ(b, "semi\\;colon;frame", "a name's ';' escaped");
	treepath_write(&t, 2, b, sizeof(b));
	ASSERT_STREQ(b, "back\\\\slash", "a name's '\\' escaped");
	treepath_write(&t, 4, b, sizeof(b));
	ASSERT_STREQ(b, "semi;colon", "nesting is not escaped");
	ASSERT_TRUE(treepath_is(&t, 1, "semi\\;colon;frame") &&
		    !treepath_is(&t, 1, "semi;colon;frame") && treepath_is(&t, 4, "semi;colon") &&
		    !treepath_is(&t, 0, "semi;colon") &&
		    treepath_is(&t, 0, "semi\\;colon"), "is: escapes are part of the path");
	n = treepath_seg_len(p);
	ASSERT_EQ(n, 11, "the first name ends at the unescaped ';'");
	ASSERT_EQ(treepath_unescape(p, n, b, sizeof(b)), 10, "unescaped length");
	ASSERT_STREQ(b, "semi;colon", "unescaped");
	ASSERT_EQ(treepath_seg_len(p + n + 1), 5, "then frame");
	ASSERT_EQ(treepath_unescape("C:\\dir", 6, b, sizeof(b)), 6, "a lone '\\' is kept");
	ASSERT_STREQ(b, "C:\\dir", "kept");
	ASSERT_EQ(treepath_escape("a;b\\c", b, sizeof(b)), 7, "escape");
	ASSERT_STREQ(b, "a\\;b\\\\c", "escaped");
	for (i = 0; i < 5; i++) {
		for (k = 0; k < 5; k++) {
			treepath_write(&t, i, pa, sizeof(pa));
			treepath_write(&t, k, pb, sizeof(pb));
			ASSERT_EQ(sign(treepath_cmp(&t, i, k)), sign(strcmp(pa, pb)), pa);
		}
	}
}

int main(void)
{
	test_group = "unit/escape";
	RUN_TEST(test_utf8);
	RUN_TEST(test_text);
	RUN_TEST(test_markdown);
	RUN_TEST(test_xml);
	RUN_TEST(test_json);
	RUN_TEST(test_json_numbers);
	RUN_TEST(test_treepath);
	RUN_TEST(test_treepath_escape);
	return TEST_EXIT();
}
