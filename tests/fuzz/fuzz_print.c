// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness of every printer of culpert (`make fuzz`): the input, a
 * raw protobuf gzip'd into a file, goes through the commands themselves as a
 * user runs them -- report in every mode (tree, flat, --span, --no-span,
 * --inuse, --leaks, json, --skip with its wrappers line, --wide), diff in
 * every format (against itself and against a small fixed profile; by path,
 * name and callsite), info, flamegraph folded and SVG (--skip too).  Beyond
 * "no crash, no leak, no undefined behaviour", each run must keep the CLI's
 * contract: exit 0, 1 (diff) or 2; on 2 exactly one "error: " line on
 * stderr; the output valid UTF-8 without a control byte but the newline,
 * whatever bytes the profile's names hold.
 *
 * Reproduce a finding with FUZZ_STDERR=1 (stderr is otherwise captured to
 * check it; sanitizer reports always go to the real stderr).
 */
#include <getopt.h>
#include <sanitizer/common_interface_defs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "commands.h"
#include "escape.h"
#include "pprof.h"
#include "view.h"

#define MAX_OUT (64u << 20)

static int out_fd, err_fd, saved_out, saved_err;
static bool keep_stderr;
static char other[64];	/* a small profile with spans, to diff against */
static int other_fd = -1;

static void check(int cond, const char *what, const char *cmd)
{
	if (!cond) {
		dprintf(saved_err, "fuzz_print: %s: %s\n", cmd, what);
		abort();
	}
}

static int gzip_to_fd(const uint8_t *in, size_t len, int fd)
{
	gzFile z = gzdopen(dup(fd), "wb1");
	int ok;

	if (!z)
		return -1;
	ok = !len || gzwrite(z, in, (unsigned int)len) == (int)len;
	return gzclose(z) == Z_OK && ok ? 0 : -1;
}

/* a profile of the writer's, at the input's rate (diff refuses others): spans a and a;b */
static void make_other(int64_t rate)
{
	static const char *const names[] = { "alloc_objects", "alloc_space" };
	static const char *const units[] = { "count", "bytes" };
	struct pprof_writer_opts o = { .sz = sizeof(o), .n_sample_types = 2,
				       .sample_type_names = names, .sample_type_units = units,
				       .period_type = "space", .period_unit = "bytes",
				       .period = rate };
	struct pprof_writer *w = pprof_writer__new(&o);
	struct pprof_mapping_desc m = { .filename = "/bin/x", .memory_start = 0x1000,
					.memory_limit = 0x9000 };
	struct pprof_line l = { 0 };
	struct pprof_label lab;
	int64_t v[2] = { 1, 1 << 20 };
	uint64_t loc;
	void *gz = NULL;
	size_t gz_len = 0;

	if (other_fd < 0)
		other_fd = memfd_create("other", 0);
	check(other_fd >= 0 && !ftruncate(other_fd, 0), "memfd", "make_other");
	pprof_writer__add_mapping(w, &m);
	l.function_id = pprof_writer__add_function(w, "work", NULL, "w.c", 1);
	loc = pprof_writer__add_location(w, 1, 0x1010, &l, 1);
	lab = (struct pprof_label){ .key = pprof_writer__str(w, "span_path"),
				    .str = pprof_writer__str(w, "a;b") };
	pprof_writer__add_sample(w, &loc, 1, v, &lab, 1);
	lab.str = pprof_writer__str(w, "a");
	pprof_writer__add_sample(w, &loc, 1, v, &lab, 1);
	snprintf(other, sizeof(other), "/proc/self/fd/%d", other_fd);
	/* not pprof_writer__write(): it renames a temporary file into place */
	check(!pprof_encode_gzip(pprof_writer__profile(w), &gz, &gz_len) &&
	      pwrite(other_fd, gz, gz_len, 0) == (ssize_t)gz_len, "cannot write it", "make_other");
	free(gz);
	pprof_writer__free(w);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	keep_stderr = getenv("FUZZ_STDERR") != NULL;
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	/* reports of the sanitizers reach the terminal while stderr is captured */
	__sanitizer_set_report_fd((void *)(intptr_t)saved_err);
	out_fd = memfd_create("stdout", 0);
	err_fd = memfd_create("stderr", 0);
	/* inputs are small; so is what reading one may take */
	setenv("CULPERT_MAX_MEMORY", "64MiB", 1);
	return 0;
}

/* what fd holds, NUL-terminated, in a malloc'd buffer */
static char *slurp(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *buf;

	n = n > (off_t)MAX_OUT ? (off_t)MAX_OUT : n;
	buf = malloc((size_t)n + 1);
	check(buf && pread(fd, buf, (size_t)n, 0) == n, "cannot read the output back", "slurp");
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* valid UTF-8, and no control byte but '\n': nothing a terminal or a parser trips on */
static void check_text(const char *s, size_t len, const char *cmd)
{
	size_t i = 0;
	uint32_t cp;
	int n;

	while (i < len) {
		check(s[i] != '\0', "a NUL byte in the output", cmd);
		n = utf8_decode(s + i, &cp);
		check(n > 0, "the output is not valid UTF-8", cmd);
		check(cp == '\n' || (cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0)),
		      "a control character in the output", cmd);
		i += (size_t)n;
	}
}

/* fn as the command line `...` runs it; may_fail: exit 1 is allowed (diff found a regression) */
static void run(int (*fn)(int, char **), const char *cmd, int may_fail, ...)
{
	char *argv[16], *out, *err;
	size_t argc = 0, out_len, err_len;
	va_list ap;
	int rc;

	va_start(ap, may_fail);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	/* emptied and rewound: the duplicated descriptors share the offset */
	check(!ftruncate(out_fd, 0) && !ftruncate(err_fd, 0) && !lseek(out_fd, 0, SEEK_SET) &&
	      !lseek(err_fd, 0, SEEK_SET), "cannot empty the captured output", cmd);
	fflush(stdout);
	fflush(stderr);
	dup2(out_fd, STDOUT_FILENO);
	if (!keep_stderr)
		dup2(err_fd, STDERR_FILENO);
	optind = 0;
	rc = fn((int)argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	check(rc == 0 || rc == 2 || (may_fail && rc == 1), "an exit status outside the contract",
	      cmd);
	out = slurp(out_fd, &out_len);
	err = slurp(err_fd, &err_len);
	if (rc == 2 && !keep_stderr) {
		check(!strncmp(err, "error: ", 7), "exit 2 without an 'error: ' line", cmd);
		check(strchr(err, '\n') == err + err_len - 1, "more than one line on stderr", cmd);
	}
	check_text(out, out_len, cmd);
	free(out);
	free(err);
}

/* a span of the profile, for --span: the first that is not (no span); and its rate */
static int64_t first_span(const char *path, char *name, size_t len)
{
	struct view_opts vo = { .value = VIEW_ALLOC, .max_memory = 64 << 20 };
	char err[256];
	struct view *v = view__load(path, &vo, err, sizeof(err));
	int64_t rate = v ? v->rate : 0;
	size_t i;

	snprintf(name, len, "nosuchspan");
	for (i = 0; v && i < v->n_spans; i++) {
		if (!v->spans[i].no_span) {
			snprintf(name, len, "%s", v->spans[i].name);
			break;
		}
	}
	view__free(v);
	return rate;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", 0);
	char path[64], span[VIEW_SPAN_NAME_MAX + 1];

	check(fd >= 0 && !gzip_to_fd(data, size, fd), "memfd", "setup");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	make_other(first_span(path, span, sizeof(span)));

	run(cmd_report, "report", false, "report", path, NULL);
	run(cmd_report, "report --top 1", false, "report", path, "--top", "1", NULL);
	run(cmd_report, "report --flat", false, "report", path, "--flat", NULL);
	run(cmd_report, "report --span", false, "report", path, "--span", span, NULL);
	run(cmd_report, "report --no-span", false, "report", path, "--no-span", NULL);
	run(cmd_report, "report --inuse", false, "report", path, "--inuse", NULL);
	run(cmd_report, "report --leaks", false, "report", path, "--leaks", "--min-age", "1s",
	    NULL);
	/* --skip '*e*': wrappers found among the file's own names; the wrappers line */
	run(cmd_report, "report --no-span --skip", false, "report", path, "--no-span", "--skip",
	    "*e*", NULL);
	run(cmd_report, "report --span --skip --wide", false, "report", path, "--span", span,
	    "--skip", "*e*", "--wide", NULL);
	run(cmd_report, "report json", false, "report", path, "--format", "json", NULL);
	run(cmd_report, "report --flat json", false, "report", path, "--flat", "--format", "json",
	    NULL);
	run(cmd_report, "report --span json", false, "report", path, "--span", span, "--format",
	    "json", NULL);
	run(cmd_report, "report --leaks json", false, "report", path, "--leaks", "--format", "json",
	    NULL);
	run(cmd_report, "report --no-span --skip json", false, "report", path, "--no-span",
	    "--skip", "*e*", "--format", "json", NULL);
	run(cmd_info, "info", false, "info", path, NULL);
	run(cmd_diff, "diff", true, "diff", path, path, NULL);
	run(cmd_diff, "diff markdown", true, "diff", path, path, "--format", "markdown", NULL);
	run(cmd_diff, "diff json", true, "diff", path, path, "--format", "json", NULL);
	run(cmd_diff, "diff --tree", true, "diff", path, path, "--tree", NULL);
	run(cmd_diff, "diff --tree markdown", true, "diff", path, path, "--tree", "--format", "md",
	    NULL);
	/* against another profile: regressions, new and gone spans in every table */
	run(cmd_diff, "diff other", true, "diff", other, path, "--min-confidence", "1", NULL);
	run(cmd_diff, "diff other markdown", true, "diff", other, path, "--format", "markdown",
	    "--top", "2", NULL);
	run(cmd_diff, "diff other json", true, "diff", path, other, "--format", "json", NULL);
	run(cmd_diff, "diff other --tree", true, "diff", other, path, "--tree", "--top", "1", NULL);
	run(cmd_diff, "diff other --tree markdown", true, "diff", path, other, "--tree", "--format",
	    "markdown", NULL);
	run(cmd_diff, "diff other --by name json", true, "diff", path, other, "--by", "name",
	    "--format", "json", NULL);
	run(cmd_diff, "diff other --by callsite", true, "diff", other, path, "--by", "callsite",
	    "--skip", "*e*", NULL);
	run(cmd_diff, "diff --by callsite markdown", true, "diff", path, path, "--by", "callsite",
	    "--format", "markdown", NULL);
	run(cmd_diff, "diff other --by callsite json", true, "diff", path, other, "--by",
	    "callsite", "--wide", "--format", "json", NULL);
	run(cmd_flamegraph, "flamegraph", false, "flamegraph", path, NULL);
	run(cmd_flamegraph, "flamegraph --span", false, "flamegraph", path, "--span", span, NULL);
	run(cmd_flamegraph, "flamegraph svg", false, "flamegraph", path, "--format", "svg", NULL);
	run(cmd_flamegraph, "flamegraph --skip", false, "flamegraph", path, "--skip", "*e*", NULL);
	run(cmd_flamegraph, "flamegraph --skip svg", false, "flamegraph", path, "--skip", "*e*",
	    "--format", "svg", NULL);
	close(fd);
	return 0;
}
