// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* culpert upload FILE: a commit's profile into the archive, later runs' baseline (deploy/archive). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive_client.h"
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "profile_bytes.h"

#define CMD "upload"
/* a receipt is a few hundred bytes */
#define RECEIPT_MAX (64 * 1024)

enum { OPT_SHA = 0x200, OPT_BRANCH };

static const struct opt_spec upload_specs[] = {
	OPT_ARG("commit-sha", OPT_SHA, "SHA",
		 "the commit, 7 to 64 hex digits (env GITHUB_SHA)"),
	OPT_ARG("branch", OPT_BRANCH, "NAME",
		 "the branch it is recorded under, which `pull\n"
		 "--latest-of` looks in (env GITHUB_REF_NAME)"),
	OPT_END,
};

static const struct opt_spec upload_help_spec[] = {
	OPT_FLAG("help", 'h', "this help"),
	OPT_END,
};

static const struct opt_spec *const upload_tables[] = {
	upload_specs, archive_opt_specs, upload_help_spec, NULL,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert upload FILE [options]\n"
		"\n"
		"Send a profile to the archive (deploy/archive) under its commit:\n"
		"POST {endpoint}/v1/profiles/{sha}?branch=B[&project=P], which answers 201 and\n"
		"a JSON receipt, printed on stdout.  FILE ('-': stdin) is decoded first: what is\n"
		"not a complete profile is not sent.  Uploading a sha again replaces it.\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, upload_tables, 2, 26);
	fprintf(f,
		"\n"
		"Exit status: 0 uploaded, 2 any error (one error: line says which and why).\n"
		"\n"
		"EXAMPLES:\n"
		"  export CULPERT_ARCHIVE=https://culpert-archive.example.workers.dev\n"
		"  export CULPERT_TOKEN=...          # the Worker's ARCHIVE_TOKEN secret\n"
		"  culpert upload prof.pb.gz --commit-sha \"$(git rev-parse HEAD)\" --branch main\n"
		"  culpert upload prof.pb.gz         # in GitHub Actions: GITHUB_SHA, GITHUB_REF_NAME\n"
		"  culpert upload prof.pb.gz --project acme/shop --branch main --commit-sha 0123abc\n");
}

struct upload_args {
	struct archive_conn conn;
	const char *file;
	const char *sha;
	const char *branch;
};

static int parse_args(int argc, char **argv, struct upload_args *a)
{
	int c, r;

	while ((c = opt_spec_next(argc, argv, upload_tables)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CMD_HELP;
		}
		if (c == OPT_SHA) {
			a->sha = optarg;
			continue;
		}
		if (c == OPT_BRANCH) {
			a->branch = optarg;
			continue;
		}
		r = archive_conn__option(&a->conn, c, optarg);
		if (r <= 0)
			return -EINVAL;	/* '?' was reported by opt_spec_next, a bad value by the parser */
	}
	return cli_one_file(argc, argv, &a->file);
}

/* the commit and branch, from the options or the CI's variables */
static int check_target(struct upload_args *a)
{
	a->sha = archive_flag_or_env(a->sha, "GITHUB_SHA");
	a->branch = archive_flag_or_env(a->branch, "GITHUB_REF_NAME");
	if (!a->sha || !a->sha[0]) {
		pr_error("no commit sha: pass --commit-sha SHA or set GITHUB_SHA "
			 "(e.g. --commit-sha \"$(git rev-parse HEAD)\")\n");
		return -EINVAL;
	}
	if (!archive_sha_ok(a->sha)) {
		pr_error("invalid commit sha '%s': want 7 to 64 hexadecimal digits, as git "
			 "rev-parse HEAD prints\n", a->sha);
		return -EINVAL;
	}
	if (!a->branch || !a->branch[0]) {
		pr_error("no branch: pass --branch NAME or set GITHUB_REF_NAME\n");
		return -EINVAL;
	}
	return 0;
}

/* the whole file, decoded once: a broken profile never becomes somebody's baseline */
static int load_profile(const char *file, char **buf, size_t *len)
{
	char err[256];
	int e = profile_bytes_read(file, ARCHIVE_MAX_PROFILE, buf, len);

	if (e == -EFBIG) {
		pr_error("%s: larger than %zu MiB, more than any archive takes: nothing uploaded\n",
			 file, ARCHIVE_MAX_PROFILE >> 20);
		return e;
	}
	if (e) {
		pr_error("%s: %s: nothing uploaded\n", file, strerror(-e));
		return e;
	}
	if (profile_bytes_check(*buf, *len, err, sizeof(err))) {
		pr_error("%s: %s: nothing uploaded (upload the .pb.gz that culpert-bpf wrote)\n",
			 file, err);
		free(*buf);
		return -EINVAL;
	}
	return 0;
}

/* the receipt's "size", when it has one, against what was sent */
static int check_receipt(const struct archive_reply *r, size_t sent)
{
	const char *s = r->body ? strstr(r->body, "\"size\":") : NULL;
	unsigned long long got;

	if (!s)
		return 0;
	got = strtoull(s + strlen("\"size\":"), NULL, 10);
	return got == sent ? 0 : -EIO;
}

static int send_profile(const struct upload_args *a, const char *buf, size_t len)
{
	struct archive_reply r;
	char why[768], *path = archive_path(a->sha, a->branch, a->conn.project);
	int e;

	if (!path) {
		pr_error("out of memory\n");
		return -ENOMEM;
	}
	e = archive_request(&a->conn, "POST", path, buf, len, RECEIPT_MAX, &r, why, sizeof(why));
	free(path);
	if (!e && r.status != 201) {
		archive_status_message(&a->conn, &r, why, sizeof(why));
		e = -EIO;
	} else if (!e && check_receipt(&r, len)) {
		snprintf(why, sizeof(why), "the receipt's size differs from the %zu bytes sent: "
			 "%.200s", len, r.body);
		e = -EIO;
	}
	if (e) {
		pr_error("upload of %s to %s failed: %s\n", a->file, a->conn.endpoint, why);
	} else {
		fwrite(r.body, 1, r.len, stdout);
		if (!r.len || r.body[r.len - 1] != '\n')
			putchar('\n');
	}
	archive_reply__free(&r);
	return e;
}

int cmd_upload(int argc, char **argv)
{
	struct upload_args a = { 0 };
	size_t len = 0;
	char *buf = NULL;
	int ret = CMD_ERROR, e;

	archive_conn__init(&a.conn);
	e = parse_args(argc, argv, &a);
	if (e) {
		ret = e == CMD_HELP ? CMD_OK : CMD_ERROR;
		goto out;
	}
	if (check_target(&a) || archive_conn__finish(&a.conn) || load_profile(a.file, &buf, &len))
		goto out;
	if (!send_profile(&a, buf, len))
		ret = CMD_OK;
	free(buf);
out:
	archive_conn__free(&a.conn);
	return ret;
}
