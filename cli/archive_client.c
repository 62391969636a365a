// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libcurl's easy interface, one handle per request (one request per command).  Redirects
 * are not followed: the Worker never redirects, and what does (a Cloudflare Access login
 * page, an http -> https hop) is better named to the user than chased with the token.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "archive_client.h"
#include "log.h"
#include "opt.h"

#define NS_PER_MS		1000000ULL
#define NS_PER_S		1000000000ULL
#define DEFAULT_CONNECT_TIMEOUT	(10 * NS_PER_S)
#define DEFAULT_TIMEOUT		(60 * NS_PER_S)
#define DEFAULT_RETRIES		2
#define MAX_RETRIES		10
/* the first pause between attempts; each next one doubles */
#define BACKOFF_FIRST_MS	1000
/* of a server's error text quoted in a message */
#define SERVER_TEXT_MAX		300

void archive_conn__init(struct archive_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->connect_timeout_ns = DEFAULT_CONNECT_TIMEOUT;
	c->timeout_ns = DEFAULT_TIMEOUT;
	c->retries = DEFAULT_RETRIES;
}

void archive_conn__free(struct archive_conn *c)
{
	free(c->endpoint_buf);
	c->endpoint_buf = NULL;
}

const struct opt_spec archive_opt_specs[] = {
	OPT_ARG("endpoint", ARCHIVE_OPT_ENDPOINT, "URL",
		 "the archive's base URL (env CULPERT_ARCHIVE)"),
	OPT_ARG("token", ARCHIVE_OPT_TOKEN, "TOKEN",
		 "bearer token (env CULPERT_TOKEN; prefer the variable:\n"
		 "a command line is visible to other users in ps)"),
	OPT_ARG("project", ARCHIVE_OPT_PROJECT, "NAME",
		 "scope within a shared archive, e.g. owner/repo\n"
		 "(env CULPERT_PROJECT; default: none)"),
	/* one line for the pair */
	OPT_ARG("cf-access-client-id", ARCHIVE_OPT_CF_ID, "ID, --cf-access-client-secret SECRET",
		 "\nCloudflare Access service token (env\n"
		 "CF_ACCESS_CLIENT_ID, CF_ACCESS_CLIENT_SECRET)"),
	OPT_ARG("cf-access-client-secret", ARCHIVE_OPT_CF_SECRET, "SECRET", NULL),
	OPT_NUM("connect-timeout", ARCHIVE_OPT_CONNECT_TIMEOUT, "D", NS_PER_MS, 0,
		 "per attempt, to connect (default 10s)"),
	OPT_NUM("timeout", ARCHIVE_OPT_TIMEOUT, "D", NS_PER_MS, 0,
		 "per attempt, the whole exchange (default 60s)"),
	OPT_NUM("retries", ARCHIVE_OPT_RETRIES, "N", 0, MAX_RETRIES,
		 "more attempts after a 5xx, 429 or network failure,\n"
		 "1s, 2s, 4s ... apart (default 2, at most 10)"),
	OPT_FLAG("verbose", 'v',
		 "each request and answer; -vv curl's trace, the\n"
		 "token and the Access secret redacted"),
	OPT_END,
};

int archive_conn__option(struct archive_conn *c, int id, const char *arg)
{
	const struct opt_spec *const tables[] = { archive_opt_specs, NULL };
	const struct opt_spec *s = opt_spec_find(tables, id);
	uint64_t v;

	switch (id) {
	case ARCHIVE_OPT_ENDPOINT:
		c->endpoint = arg;
		return 1;
	case ARCHIVE_OPT_TOKEN:
		c->token = arg;
		return 1;
	case ARCHIVE_OPT_PROJECT:
		c->project = arg;
		return 1;
	case ARCHIVE_OPT_CF_ID:
		c->cf_id = arg;
		return 1;
	case ARCHIVE_OPT_CF_SECRET:
		c->cf_secret = arg;
		return 1;
	case ARCHIVE_OPT_CONNECT_TIMEOUT:
		return opt_duration("--connect-timeout", arg, s->min, &c->connect_timeout_ns) ?: 1;
	case ARCHIVE_OPT_TIMEOUT:
		return opt_duration("--timeout", arg, s->min, &c->timeout_ns) ?: 1;
	case ARCHIVE_OPT_RETRIES:
		if (opt_spec_count(s, arg, &v))
			return -EINVAL;
		c->retries = (unsigned int)v;
		return 1;
	}
	return 0;
}

/* an option given on the command line wins, even empty; an empty variable is unset */
const char *archive_flag_or_env(const char *flag, const char *var)
{
	const char *e;

	if (flag)
		return flag;
	e = getenv(var);
	return e && e[0] ? e : NULL;
}

/* header values go on one line: nothing a server could read as another header */
static bool header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s == 0x7f)
			return false;
	return true;
}

static bool loopback_host(const char *host)
{
	return !strncmp(host, "127.", 4) || !strcasecmp(host, "localhost") ||
	       !strcmp(host, "[::1]") || !strcmp(host, "::1");
}

/* an http(s) URL with a host, no query or fragment; warns when the token would go in clear */
static int check_endpoint(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *query = NULL, *frag = NULL;
	int ret = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0))
		pr_error("invalid archive endpoint '%s': want a URL such as "
			 "https://culpert-archive.example.workers.dev (--endpoint, CULPERT_ARCHIVE)\n",
			 url);
	else if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))
		pr_error("invalid archive endpoint '%s': want an https:// (or http://) URL\n", url);
	else if (!curl_url_get(u, CURLUPART_QUERY, &query, 0) ||
		 !curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0))
		pr_error("invalid archive endpoint '%s': want the Worker's base URL, without "
			 "'?' or '#'\n", url);
	else
		ret = 0;
	if (!ret && !strcasecmp(scheme, "http") && !loopback_host(host))
		pr_warn("%s is plain http: the token crosses the network "
			"unencrypted; use https\n", host);
	curl_free(scheme);
	curl_free(host);
	curl_free(query);
	curl_free(frag);
	curl_url_cleanup(u);
	return ret;
}

static int finish_credentials(struct archive_conn *c)
{
	c->token = archive_flag_or_env(c->token, "CULPERT_TOKEN");
	if (!c->token || !c->token[0]) {
		pr_error("no archive token: set CULPERT_TOKEN (or pass --token) to the Worker's "
			 "ARCHIVE_TOKEN secret\n");
		return -EINVAL;
	}
	if (!header_safe(c->token)) {
		pr_error("the archive token holds spaces or control characters: check "
			 "CULPERT_TOKEN / --token (a stray newline from a secrets file?)\n");
		return -EINVAL;
	}
	c->cf_id = archive_flag_or_env(c->cf_id, "CF_ACCESS_CLIENT_ID");
	c->cf_secret = archive_flag_or_env(c->cf_secret, "CF_ACCESS_CLIENT_SECRET");
	if (!c->cf_id != !c->cf_secret) {
		pr_error("Cloudflare Access needs both the client id and the client secret: pass "
			 "--cf-access-client-id and --cf-access-client-secret (or set "
			 "CF_ACCESS_CLIENT_ID and CF_ACCESS_CLIENT_SECRET)\n");
		return -EINVAL;
	}
	if (c->cf_id && (!header_safe(c->cf_id) || !header_safe(c->cf_secret))) {
		pr_error("the Cloudflare Access client id or secret holds spaces or control "
			 "characters: check them\n");
		return -EINVAL;
	}
	return 0;
}

int archive_conn__finish(struct archive_conn *c)
{
	const char *ep = archive_flag_or_env(c->endpoint, "CULPERT_ARCHIVE");
	size_t n;

	if (!ep || !ep[0]) {
		pr_error("no archive endpoint: pass --endpoint URL or set CULPERT_ARCHIVE (the "
			 "Worker's URL, e.g. https://culpert-archive.example.workers.dev)\n");
		return -EINVAL;
	}
	c->endpoint_buf = strdup(ep);
	if (!c->endpoint_buf)
		return -ENOMEM;
	/* ".../" + "/v1/..." would be a different path to the Worker */
	n = strlen(c->endpoint_buf);
	while (n && c->endpoint_buf[n - 1] == '/')
		c->endpoint_buf[--n] = '\0';
	c->endpoint = c->endpoint_buf;
	if (check_endpoint(c->endpoint))
		return -EINVAL;
	c->project = archive_flag_or_env(c->project, "CULPERT_PROJECT");
	if (c->project && !c->project[0])
		c->project = NULL;
	return finish_credentials(c);
}

char *archive_path(const char *what, const char *branch, const char *project)
{
	char *w = curl_easy_escape(NULL, what, 0);
	char *b = branch ? curl_easy_escape(NULL, branch, 0) : NULL;
	char *p = project ? curl_easy_escape(NULL, project, 0) : NULL;
	char *out = NULL;

	if (w && (b || !branch) && (p || !project) &&
	    asprintf(&out, "/v1/profiles/%s%s%s%s%s", w, b ? "?branch=" : "", b ? b : "",
		     p ? (b ? "&project=" : "?project=") : "", p ? p : "") < 0)
		out = NULL;
	curl_free(w);
	curl_free(b);
	curl_free(p);
	return out;
}

bool archive_sha_ok(const char *sha)
{
	size_t n = strspn(sha, "0123456789abcdefABCDEF");

	return !sha[n] && n >= 7 && n <= 64;
}

/* --- one exchange ---------------------------------------------------------------------- */

struct xfer {
	struct archive_reply *r;
	size_t max;
	bool too_big;
	size_t cap;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	struct archive_reply *r = x->r;
	size_t n = size * nmemb;

	if (n > x->max - r->len) {
		x->too_big = true;
		return 0;	/* curl ends the transfer: CURLE_WRITE_ERROR */
	}
	if (r->len + n + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 64 * 1024;
		char *b;

		while (cap < r->len + n + 1)
			cap *= 2;
		b = realloc(r->body, cap);
		if (!b)
			return 0;
		r->body = b;
		x->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return n;
}

/* "Name: value" -> value, trimmed into out; false if the line is another header */
static bool header_value(const char *line, size_t n, const char *name, char *out, size_t outlen)
{
	size_t k = strlen(name), i;

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return false;
	for (i = k + 1; i < n && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	while (n > i && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	snprintf(out, outlen, "%.*s", (int)(n - i), line + i);
	return true;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *ud)
{
	struct archive_reply *r = ((struct xfer *)ud)->r;
	size_t n = size * nitems;
	char v[32];

	/* a status line starts another answer's headers (after a "100 Continue") */
	if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
		r->content_length = -1;
		r->sha[0] = r->location[0] = '\0';
	} else if (header_value(line, n, "content-length", v, sizeof(v))) {
		char *end;
		long long cl = strtoll(v, &end, 10);

		r->content_length = end != v && !*end && cl >= 0 ? cl : -1;
	} else if (!header_value(line, n, "x-culpert-sha", r->sha, sizeof(r->sha))) {
		header_value(line, n, "location", r->location, sizeof(r->location));
	}
	return n;
}

/* one line of curl's trace; a credential's value is replaced, whatever the header's case */
static void trace_line(const char *mark, const char *line, size_t n)
{
	static const char *const secret[] = { "authorization:", "cf-access-client-secret:" };
	size_t k;

	if (n && line[n - 1] == '\r')
		n--;
	if (!n)
		return;
	for (k = 0; k < sizeof(secret) / sizeof(secret[0]); k++) {
		size_t m = strlen(secret[k]);

		if (n >= m && !strncasecmp(line, secret[k], m)) {
			fprintf(stderr, "%s%.*s <redacted>\n", mark, (int)m, line);
			return;
		}
	}
	fprintf(stderr, "%s%.*s\n", mark, (int)n, line);
}

/* curl's trace at -vv: headers and notes, never bodies, never a credential */
static int on_trace(CURL *h, curl_infotype type, char *data, size_t size, void *ud)
{
	const char *mark = type == CURLINFO_HEADER_OUT ? "> " :
			   type == CURLINFO_HEADER_IN ? "< " :
			   type == CURLINFO_TEXT ? "* " : NULL;
	size_t i = 0;

	if (!mark)
		return 0;
	/* bounded by size: each line consumes at least its newline */
	while (i < size) {
		const char *nl = memchr(data + i, '\n', size - i);
		size_t n = nl ? (size_t)(nl - (data + i)) : size - i;

		trace_line(mark, data + i, n);
		i += n + 1;
	}
	return 0;
}

static int add_header(struct curl_slist **l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* a formatted header appended to *l (curl copies it); 0 or -ENOMEM */
static int add_header(struct curl_slist **l, const char *fmt, ...)
{
	struct curl_slist *t;
	va_list ap;
	char *h;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&h, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	t = curl_slist_append(*l, h);
	/* the token was in it: not left lying in freed memory */
	explicit_bzero(h, (size_t)n);
	free(h);
	if (!t)
		return -ENOMEM;
	*l = t;
	return 0;
}

static struct curl_slist *request_headers(const struct archive_conn *c, bool has_body)
{
	struct curl_slist *l = NULL;
	int ret = add_header(&l, "Authorization: Bearer %s", c->token);

	if (!ret && c->cf_id)
		ret = add_header(&l, "CF-Access-Client-Id: %s", c->cf_id) ?:
		      add_header(&l, "CF-Access-Client-Secret: %s", c->cf_secret);
	if (!ret && has_body)
		ret = add_header(&l, "Content-Type: application/octet-stream") ?:
		      /* no "Expect: 100-continue" round trip before a body the Worker reads at once */
		      add_header(&l, "Expect:");
	if (ret) {
		curl_slist_free_all(l);
		return NULL;
	}
	return l;
}

static void set_options(CURL *h, const struct archive_conn *c, const char *url,
			const void *body, size_t len, struct xfer *x, char *errbuf)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "culpert/" CULPERT_VERSION);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->connect_timeout_ns / NS_PER_MS));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->timeout_ns / NS_PER_MS));
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	/* a body makes it a POST, none a GET: the only two the archive takes */
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	}
	if (log_level >= LOG_DEBUG) {
		curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, on_trace);
		curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
	}
}

static void reply_reset(struct archive_reply *r, struct xfer *x)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
	r->content_length = -1;
	x->r = r;
	x->too_big = false;
	x->cap = 0;
}

/* worth another attempt: the network or the server may do better in a moment */
static bool transient(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return true;
	default:
		return false;
	}
}

static void sleep_ms(unsigned long ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* mask every copy of secret in s: a server may echo what it was sent */
static void mask(char *s, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	char *p;

	if (!n)
		return;
	/* bounded: each match is overwritten, and the search goes on after it */
	for (p = strstr(s, secret); p; p = strstr(p + n, secret))
		memset(p, '*', n);
}

/* the JSON string value starting after its opening quote, unescaped into out */
static void json_string_at(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && *s != '"' && o + 1 < len; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			out[o++] = *s == 'n' || *s == 't' || *s == 'r' ? ' ' : *s;
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
}

/*
 * The server's own words for a message: the "error" member of its JSON answer, else the
 * first line of the body; control characters blanked, at most SERVER_TEXT_MAX bytes, and
 * no credential in it.
 */
static void server_text(const struct archive_conn *c, const struct archive_reply *r, char *out,
			size_t len)
{
	const char *b = r->body ? r->body : "", *e = strstr(b, "\"error\"");
	size_t n = len < SERVER_TEXT_MAX ? len : SERVER_TEXT_MAX, i;

	if (e) {
		e += strlen("\"error\"");
		e += strspn(e, " \t");
		e += *e == ':';
		e += strspn(e, " \t");
	}
	if (e && *e == '"')
		json_string_at(e + 1, out, n);
	else
		snprintf(out, n, "%.*s", (int)strcspn(b, "\r\n"), b);
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] < ' ' || out[i] == 0x7f)
			out[i] = ' ';
	mask(out, c->token);
	mask(out, c->cf_secret);
}

void archive_status_message(const struct archive_conn *c, const struct archive_reply *r,
			    char *buf, size_t len)
{
	char said[SERVER_TEXT_MAX + 2] = "", tries[48] = "";
	const char *what, *todo;

	server_text(c, r, said + 2, sizeof(said) - 2);
	if (said[2])
		memcpy(said, ": ", 2);
	if (r->attempts > 1)
		snprintf(tries, sizeof(tries), " after %u attempts", r->attempts);
	if (r->status == 401 || r->status == 403) {
		what = "token rejected";
		todo = r->status == 401 ? "check CULPERT_TOKEN / --token against the Worker's "
			"ARCHIVE_TOKEN secret" : "check the token and, behind Cloudflare Access, "
			"--cf-access-client-id / --cf-access-client-secret";
	} else if (r->status == 413) {
		what = "the profile is too large for the archive";
		todo = "raise MAX_PROFILE_BYTES in the Worker's wrangler.toml, or profile less";
	} else if (r->status == 415) {
		what = "the archive refused the body as not gzip";
		todo = "upload the .pb.gz profile file as culpert-bpf wrote it";
	} else if (r->status == 400) {
		what = "the archive refused the request";
		todo = "check the commit sha, --branch and --project";
	} else if (archive_missing_profile(c, r)) {
		what = "not found";
		todo = "check the sha, branch and project; with --allow-missing this is exit 0 "
		       "(a first run has no baseline)";
	} else if (r->status == 404 || r->status == 405) {
		what = "the archive has no such endpoint";
		todo = "set --endpoint / CULPERT_ARCHIVE to the Worker's base URL, without a path";
	} else if (r->status >= 300 && r->status < 400) {
		snprintf(buf, len, "redirected to %s (HTTP %ld): use the final URL as --endpoint; "
			 "a Cloudflare Access login wants --cf-access-client-id and "
			 "--cf-access-client-secret", r->location[0] ? r->location : "elsewhere",
			 r->status);
		return;
	} else if (r->status == 429) {
		what = "the archive is rate limiting";
		todo = "try again later";
	} else if (r->status >= 500) {
		what = "the archive failed";
		todo = "try again later, or read the Worker's log (wrangler tail)";
	} else {
		what = "unexpected answer from the archive";
		todo = "check that --endpoint / CULPERT_ARCHIVE is a culpert archive";
	}
	snprintf(buf, len, "%s (HTTP %ld%s)%s: %s", what, r->status, said, tries, todo);
}

/* the Worker answers "no such endpoint" to a path outside its API */
bool archive_missing_profile(const struct archive_conn *c, const struct archive_reply *r)
{
	char said[SERVER_TEXT_MAX];

	if (r->status != 404)
		return false;
	server_text(c, r, said, sizeof(said));
	return strcmp(said, "no such endpoint") != 0;
}

static void transport_message(CURL *h, CURLcode rc, const char *errbuf, const struct xfer *x,
			      unsigned int attempts, char *err, size_t errlen)
{
	const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
	char tries[48] = "";
	long os_errno = 0;

	if (attempts > 1)
		snprintf(tries, sizeof(tries), " after %u attempts", attempts);
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
		snprintf(err, errlen, "cannot resolve the archive's host (DNS: %s)%s: check "
			 "--endpoint / CULPERT_ARCHIVE", detail, tries);
		return;
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
		snprintf(err, errlen, "%s (%s)%s: is the archive up, and --endpoint / "
			 "CULPERT_ARCHIVE right?", os_errno == ECONNREFUSED ? "connection refused" :
			 "cannot connect", detail, tries);
		return;
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(err, errlen, "timed out (%s)%s: raise --timeout / --connect-timeout, or "
			 "check the archive", detail, tries);
		return;
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		snprintf(err, errlen, "the connection broke before the answer was complete (%s)%s: "
			 "try again, or check what stands between", detail, tries);
		return;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
		snprintf(err, errlen, "TLS failed (%s): check the archive's certificate and the "
			 "system's CA certificates (SSL_CERT_FILE)", detail);
		return;
	default:
		if (x->too_big)
			snprintf(err, errlen, "the answer is larger than %zu bytes: not a profile "
				 "this client takes", x->max);
		else
			snprintf(err, errlen, "%s (%s)%s", curl_easy_strerror(rc), detail, tries);
	}
}

static bool should_retry(CURLcode rc, long status, const struct xfer *x)
{
	if (rc != CURLE_OK)
		return transient(rc) && !x->too_big;
	return status >= 500 || status == 429;
}

/* the pause before another attempt, said once, on stderr even without -v */
static void retry_pause(const struct archive_conn *c, const struct archive_reply *r,
			CURLcode rc, const char *errbuf, unsigned int attempt, unsigned long ms)
{
	char why[SERVER_TEXT_MAX + 64];

	if (rc != CURLE_OK) {
		snprintf(why, sizeof(why), "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
	} else {
		char said[SERVER_TEXT_MAX];

		server_text(c, r, said, sizeof(said));
		snprintf(why, sizeof(why), "HTTP %ld%s%s", r->status, said[0] ? ": " : "", said);
	}
	pr_warn("attempt %u of %u failed (%s); trying again in %lus\n", attempt,
		c->retries + 1, why, ms / 1000);
	sleep_ms(ms);
}

int archive_request(const struct archive_conn *c, const char *method, const char *path,
		    const void *body, size_t len, size_t max_body, struct archive_reply *r,
		    char *err, size_t errlen)
{
	char errbuf[CURL_ERROR_SIZE];
	struct xfer x = { .r = r, .max = max_body };
	unsigned long pause = BACKOFF_FIRST_MS;
	struct curl_slist *hdrs = NULL;
	unsigned int attempt;
	CURLcode rc = CURLE_OK;
	char *url = NULL;
	CURL *h = NULL;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "libcurl failed to initialize");
		return -ENOMEM;
	}
	if (asprintf(&url, "%s%s", c->endpoint, path) < 0)
		url = NULL;
	h = curl_easy_init();
	hdrs = request_headers(c, body != NULL);
	if (!url || !h || !hdrs) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto cleanup;
	}
	set_options(h, c, url, body, len, &x, errbuf);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	/* bounded: at most c->retries + 1 attempts */
	for (attempt = 1;; attempt++) {
		reply_reset(r, &x);
		errbuf[0] = '\0';
		if (body)
			pr_info("culpert: %s %s, %zu bytes\n", method, url, len);
		else
			pr_info("culpert: %s %s\n", method, url);
		rc = curl_easy_perform(h);
		if (rc == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		if (attempt > c->retries || !should_retry(rc, r->status, &x))
			break;
		retry_pause(c, r, rc, errbuf, attempt, pause);
		pause *= 2;
	}
	r->attempts = attempt;
	if (rc != CURLE_OK) {
		transport_message(h, rc, errbuf, &x, attempt, err, errlen);
		ret = x.too_big ? -EFBIG : -EIO;
	} else {
		pr_info("culpert: HTTP %ld, %zu bytes\n", r->status, r->len);
	}
cleanup:
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	free(url);
	curl_global_cleanup();
	return ret;
}

void archive_reply__free(struct archive_reply *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}
