// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * culpert pull --sha SHA | --latest-of BRANCH: a profile out of the archive, most often the
 * baseline a CI run diffs against (deploy/archive).  What arrives is checked whole before
 * anything is written: the announced length, then a full decode.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_client.h"
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "outfile.h"
#include "profile_bytes.h"

#define CMD "pull"

enum { OPT_SHA = 0x200, OPT_LATEST, OPT_MISSING };

static const struct opt_spec pull_specs[] = {
	OPT_ARG("sha", OPT_SHA, "SHA",
		 "the profile of that commit (7 to 64 hex digits)"),
	OPT_ARG("latest-of", OPT_LATEST, "BRANCH",
		 "the last profile uploaded on BRANCH"),
	OPT_ARG("output", 'o', "FILE",
		 "where to write it (default '-': stdout, not a terminal)"),
	OPT_FLAG("allow-missing", OPT_MISSING,
		 "no such profile (HTTP 404) is not an error: write\n"
		 "nothing, say so on stderr, exit 0 (a first CI run)"),
	OPT_END,
};

static const struct opt_spec pull_help_spec[] = {
	OPT_FLAG("help", 'h', "this help"),
	OPT_END,
};

static const struct opt_spec *const pull_tables[] = {
	pull_specs, archive_opt_specs, pull_help_spec, NULL,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert pull (--sha SHA | --latest-of BRANCH) [-o FILE] [options]\n"
		"\n"
		"Fetch a profile from the archive (deploy/archive): the one uploaded for a\n"
		"commit (GET {endpoint}/v1/profiles/{sha}), or the last one uploaded on a branch\n"
		"(GET {endpoint}/v1/profiles/latest?branch=B); --project P adds project=P.\n"
		"It is written only once it arrived whole and decodes as a profile, to FILE\n"
		"through a temporary file renamed over it, so FILE is never left half written\n"
		"(a device or FIFO is written through, a symbolic link followed).\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, pull_tables, 2, 26);
	fprintf(f,
		"\n"
		"Exit status: 0 written (or missing, with --allow-missing), 2 any error.\n"
		"\n"
		"EXAMPLES:\n"
		"  export CULPERT_ARCHIVE=https://culpert-archive.example.workers.dev\n"
		"  export CULPERT_TOKEN=...          # the Worker's ARCHIVE_TOKEN secret\n"
		"  culpert pull --latest-of main -o base.pb.gz --allow-missing\n"
		"  culpert pull --sha \"$(git rev-parse HEAD~1)\" -o prev.pb.gz\n"
		"  culpert pull --latest-of main | culpert report -\n");
}

struct pull_args {
	struct archive_conn conn;
	const char *sha;
	const char *branch;
	const char *out;
	bool allow_missing;
};

static int parse_args(int argc, char **argv, struct pull_args *a)
{
	int c;

	while ((c = opt_spec_next(argc, argv, pull_tables)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CMD_HELP;
		} else if (c == OPT_SHA) {
			a->sha = optarg;
		} else if (c == OPT_LATEST) {
			a->branch = optarg;
		} else if (c == OPT_MISSING) {
			a->allow_missing = true;
		} else if (c == 'o') {
			a->out = optarg;
		} else if (archive_conn__option(&a->conn, c, optarg) <= 0) {
			return -EINVAL;	/* '?' was reported by opt_spec_next, a bad value by the parser */
		}
	}
	if (opt_operands(argc, argv, 0, 0, "operand"))
		return -EINVAL;
	if (!a->sha == !a->branch)
		return opt_error("want one of --sha SHA or --latest-of BRANCH");
	if (a->sha && !archive_sha_ok(a->sha))
		return opt_error("invalid --sha '%s': want 7 to 64 hexadecimal digits", a->sha);
	if (a->branch && !a->branch[0])
		return opt_error("--latest-of wants a branch name");
	return 0;
}

/* before asking the network: a place to write the answer to */
static int check_output(const struct pull_args *a)
{
	char err[PATH_MAX + 256];

	if (!strcmp(a->out, "-")) {
		if (isatty(STDOUT_FILENO)) {
			pr_error("not writing a binary profile to a terminal: pass -o FILE, or "
				 "redirect stdout\n");
			return -EINVAL;
		}
		return 0;
	}
	/* lib/outfile: a device or FIFO is written through, a symlink followed, a directory refused */
	if (outfile_check(a->out, err, sizeof(err))) {
		pr_error("cannot write %s: %s; nothing asked of the archive\n",
			 *a->out ? a->out : "\"\"", err);
		return -EINVAL;
	}
	return 0;
}

static void describe(const struct pull_args *a, char *buf, size_t len)
{
	if (a->sha)
		snprintf(buf, len, "the profile of %s", a->sha);
	else
		snprintf(buf, len, "the latest profile of branch %s", a->branch);
}

/* the body as it arrived against what the server announced, then as a profile */
static int check_body(const struct archive_reply *r, char *why, size_t len)
{
	char err[256];

	if (r->content_length >= 0 && (uint64_t)r->content_length != r->len) {
		snprintf(why, len, "the answer was cut short: %zu of the %lld bytes announced",
			 r->len, (long long)r->content_length);
		return -EIO;
	}
	if (profile_bytes_check(r->body, r->len, err, sizeof(err))) {
		snprintf(why, len, "what arrived (%zu bytes) is not a complete profile: %s", r->len,
			 err);
		return -EINVAL;
	}
	return 0;
}

/* 0 written, 1 missing and allowed, -errno with the error printed */
static int fetch(const struct pull_args *a)
{
	char what[320], why[768];
	struct archive_reply r;
	char *path = archive_path(a->sha ? a->sha : "latest", a->branch, a->conn.project);
	int e;

	describe(a, what, sizeof(what));
	if (!path) {
		pr_error("out of memory\n");
		return -ENOMEM;
	}
	e = archive_request(&a->conn, "GET", path, NULL, 0, ARCHIVE_MAX_PROFILE, &r, why,
			    sizeof(why));
	free(path);
	if (!e && archive_missing_profile(&a->conn, &r) && a->allow_missing) {
		fprintf(stderr, "culpert: %s is not in the archive (HTTP 404%s%s): nothing written "
			"(--allow-missing)\n", what, a->conn.project ? ", project " : "",
			a->conn.project ? a->conn.project : "");
		archive_reply__free(&r);
		return 1;
	}
	if (!e && r.status != 200) {
		archive_status_message(&a->conn, &r, why, sizeof(why));
		e = -EIO;
	}
	if (!e)
		e = check_body(&r, why, sizeof(why));
	if (e) {
		pr_error("pull of %s from %s failed: %s; nothing written\n", what, a->conn.endpoint,
			 why);
	} else {
		e = outfile_write(a->out, r.body, r.len, why, sizeof(why));
		if (e)
			pr_error("cannot write %s: %s\n", a->out, why);
		else
			pr_info("culpert: %s%s%s, %zu bytes, into %s\n", what,
				a->branch && r.sha[0] ? ", sha " : "", a->branch ? r.sha : "", r.len,
				a->out);
	}
	archive_reply__free(&r);
	return e;
}

int cmd_pull(int argc, char **argv)
{
	struct pull_args a = { .out = "-" };
	int ret = CMD_ERROR, e;

	archive_conn__init(&a.conn);
	e = parse_args(argc, argv, &a);
	if (e) {
		ret = e == CMD_HELP ? CMD_OK : CMD_ERROR;
		goto out;
	}
	if (check_output(&a) || archive_conn__finish(&a.conn))
		goto out;
	ret = fetch(&a) >= 0 ? CMD_OK : CMD_ERROR;
out:
	archive_conn__free(&a.conn);
	return ret;
}
