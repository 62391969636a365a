// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Option tables: getopt and the --help lines from one table. */
#include <errno.h>
#include <getopt.h>

#include "opt.h"
#include "test.h"

enum { K_RATE = 256, K_FLAG, K_KUBE };

static const struct opt_spec first[] = {
	OPT_ARG("pid", 'p', "PID", "process to profile"),
	OPT_MORE("pid", "self", "more words on --pid"),
	OPT_END,
};

static const struct opt_spec second[] = {
	OPT_NUM("rate", K_RATE, "BYTES", 1, 1024, "mean bytes\nbetween samples"),
	OPT_FLAG("a-very-long-flag-name", K_FLAG, "one space"),
	OPT_OPTIONAL("kube", K_KUBE, "URL", "optional value"),
	OPT_NUM("hidden", 'x', "N", 0, 0, NULL),
	OPT_END,
};

static const struct opt_spec *const tables[] = { first, second, NULL };

static void test_help(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!ASSERT_OK_PTR(f, "open_memstream"))
		return;
	opt_spec_help(f, tables, 6, 20);
	fclose(f);
	ASSERT_STREQ(buf,
		     "  -p, --pid PID     process to profile\n"
		     "      --pid self    more words on --pid\n"
		     "      --rate BYTES  mean bytes\n"
		     "                    between samples\n"
		     "      --a-very-long-flag-name one space\n"
		     "      --kube[=URL]  optional value\n", "help lines");
	free(buf);
}

static void test_next(void)
{
	char *argv[] = { "cmd", "-p", "7", "--rate", "64", "--kube", "-x", "3", "--pid", "self",
			 NULL };
	int argc = 10, c, seen = 0;

	optind = 1;
	opt_set_command("culpert", "test");
	while ((c = opt_spec_next(argc, argv, tables)) != -1) {
		if (c == 'p')
			seen |= 1;
		else if (c == K_RATE && !strcmp(optarg, "64"))
			seen |= 2;
		else if (c == K_KUBE && !optarg)
			seen |= 4;
		else if (c == 'x' && !strcmp(optarg, "3"))
			seen |= 8;
		else
			seen |= 16;
	}
	/* the second --pid takes "self" as its value: a help line is no option */
	ASSERT_EQ(seen, 1 | 2 | 4 | 8, "options seen");
	ASSERT_EQ(optind, argc, "all consumed");
	ASSERT_TRUE(opt_spec_find(tables, K_RATE) == &second[0], "find");
	ASSERT_TRUE(!opt_spec_find(tables, 0) || opt_spec_find(tables, 0)->key == 0,
		    "help lines have key 0");
}

static void test_range(void)
{
	uint64_t v = 0;

	ASSERT_TRUE(!opt_spec_size(&second[0], "1KiB", &v) && v == 1024, "in range");
	ASSERT_EQ(opt_spec_size(&second[0], "2KiB", &v), -EINVAL, "above the table's max");
	ASSERT_EQ(opt_spec_count(&second[0], "0", &v), -EINVAL, "below the table's min");
}

int main(void)
{
	test_group = "unit/opt";
	RUN_TEST(test_help);
	RUN_TEST(test_next);
	RUN_TEST(test_range);
	return TEST_EXIT();
}
