/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The client of the profile archive (deploy/archive) that `culpert upload` and
 * `culpert pull` share: the connection options and their environment variables, one HTTP
 * exchange with bounded retries, and the one-line message of each way it can fail.
 *
 * The token never reaches the output: it is sent only as an Authorization header, curl's
 * trace (-vv) prints that header redacted, and server text quoted in a message has any copy
 * of it masked.
 */
#ifndef CULPERT_ARCHIVE_CLIENT_H
#define CULPERT_ARCHIVE_CLIENT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opt.h"

/* the largest profile sent or accepted; the Worker's own limit is 32 MiB by default */
#define ARCHIVE_MAX_PROFILE	((size_t)1 << 30)

/* option ids of the shared long options (no short forms), above any character */
enum archive_opt_id {
	ARCHIVE_OPT_ENDPOINT = 0x100,
	ARCHIVE_OPT_TOKEN,
	ARCHIVE_OPT_PROJECT,
	ARCHIVE_OPT_CF_ID,
	ARCHIVE_OPT_CF_SECRET,
	ARCHIVE_OPT_CONNECT_TIMEOUT,
	ARCHIVE_OPT_TIMEOUT,
	ARCHIVE_OPT_RETRIES,
};

/*
 * The shared options' table (lib/opt.h), -v included, for a command's list
 * of tables between its own options and its -h
 */
extern const struct opt_spec archive_opt_specs[];

struct archive_conn {
	const char *endpoint;		/* without trailing '/' once archive_conn__finish ran */
	const char *token;
	const char *project;		/* NULL: the default scope */
	const char *cf_id;		/* both or neither */
	const char *cf_secret;
	uint64_t connect_timeout_ns;
	uint64_t timeout_ns;
	unsigned int retries;
	char *endpoint_buf;		/* owned copy of the endpoint, trimmed */
};

/* the answer of one exchange: status and body; headers the commands use */
struct archive_reply {
	long status;
	char *body;			/* NUL-terminated (not counted in len) */
	size_t len;
	int64_t content_length;		/* -1: none announced */
	char sha[72];			/* X-Culpert-Sha, "" if none */
	char location[512];		/* Location of a redirect, "" if none */
	unsigned int attempts;		/* how many were made */
};

/* defaults (timeouts, retries); nothing set yet */
void archive_conn__init(struct archive_conn *c);
/*
 * An option of archive_opt_specs: 1 if it was one (and valid), 0 if the id is not one of
 * them, -EINVAL after printing the error of a bad value.
 */
int archive_conn__option(struct archive_conn *c, int id, const char *arg);
/*
 * After the options: the environment fills what they left unset (an empty variable counts
 * as unset), then the endpoint and credentials are checked.  0, or -EINVAL with the error
 * printed.
 */
int archive_conn__finish(struct archive_conn *c);
void archive_conn__free(struct archive_conn *c);

/*
 * METHOD endpoint + path (path starts with "/v1/..."; query values already escaped), with
 * body (NULL for none).  Retries 5xx, 429 and network failures.  0 once a status line came
 * back (any status: the caller judges it), or -errno with err holding the reason.  A body
 * over max_body bytes is refused (-EFBIG).  Free the reply with archive_reply__free.
 */
int archive_request(const struct archive_conn *c, const char *method, const char *path,
		    const void *body, size_t len, size_t max_body, struct archive_reply *r,
		    char *err, size_t errlen);
void archive_reply__free(struct archive_reply *r);

/*
 * A status the command did not expect, as the reason of its error line: "the archive
 * rejected the token (HTTP 401: bearer token rejected): check ...", with what to do.
 */
void archive_status_message(const struct archive_conn *c, const struct archive_reply *r,
			    char *buf, size_t len);

/* whether a 404 says the profile is missing, not that the endpoint is wrong */
bool archive_missing_profile(const struct archive_conn *c, const struct archive_reply *r);

/* the option if given (even empty), else the variable unless it is empty, else NULL */
const char *archive_flag_or_env(const char *flag, const char *var);

/*
 * "/v1/profiles/{what}[?branch=B][&project=P]", the values %-escaped; what is a sha or
 * "latest", branch and project may be NULL.  NULL on ENOMEM; free() it.
 */
char *archive_path(const char *what, const char *branch, const char *project);
/* a commit sha as the archive takes it: 7 to 64 hex digits */
bool archive_sha_ok(const char *sha);

#endif /* CULPERT_ARCHIVE_CLIENT_H */
