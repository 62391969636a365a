/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's HTTP server (libmicrohttpd): a thread per connection behind
 * MHD's own listening thread, so a slow or broken client holds only its
 * thread; keep-alive; limits on connections (per client address, and in
 * all: past it the one longest in its request head makes room), on the
 * size of a request's head, on its time and on a response's (a minimum
 * rate); a reserve of connections for open routes; bearer-token authentication
 * compared in constant time; routing to handlers that fill a reply.
 * Counts requests by route and status, and failed authentications.
 */
#ifndef CULPERT_HTTP_H
#define CULPERT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct http_listen {
	struct sockaddr_storage addr;
	socklen_t len;
	bool loopback;		/* 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104 */
};

/* "ADDR:PORT" or "[ADDR6]:PORT", numeric; 0 or -EINVAL */
int http_parse_listen(const char *s, struct http_listen *out);

struct http_request {
	const char *path;
	void *conn;		/* the MHD connection, for http_query() */
};

/* a query parameter, NULL when absent */
const char *http_query(const struct http_request *r, const char *key);

struct http_reply {
	unsigned int status;
	const char *content_type;
	char *body;		/* malloc'd; the server frees it */
	size_t len;
};

typedef void (*http_handler)(void *ctx, const struct http_request *r, struct http_reply *out);

struct http_route {
	const char *path;
	http_handler fn;
	bool open;		/* answered without the token (/healthz: the kubelet's probes) */
};

struct http_opts {
	struct http_listen listen;
	const char *token;		/* NULL: no authentication (loopback only) */
	const struct http_route *routes;	/* ends with a NULL path */
	void *ctx;
	unsigned int max_connections;
	unsigned int max_per_client;
	/* a connection idle this long is closed, a request's head must be in by then */
	unsigned int timeout_s;
	size_t max_request_bytes;	/* request line and headers */
};

/* request counts for /metrics: by route (index into routes, n_routes for "other") and status */
#define HTTP_STATUS_SLOTS 12
struct http_counts {
	uint64_t requests[16][HTTP_STATUS_SLOTS];
	uint64_t auth_failures;
};
/* the status of slot i of http_counts.requests */
unsigned int http_status_of_slot(int i);

struct http_server;

/* listen and serve; NULL with a user-facing reason in err */
struct http_server *http__start(const struct http_opts *o, char *err, size_t errlen);
/* closes every connection and joins the server's threads */
void http__stop(struct http_server *s);
/* "ADDR:PORT" or "[ADDR6]:PORT" as bound */
void http__address(const struct http_server *s, char *buf, size_t len);
void http__counts(struct http_server *s, struct http_counts *out);

/* equal, in time that depends on the length of secret only; exposed for the unit tests */
bool http_token_equal(const char *given, size_t given_len, const char *secret, size_t len);

/* a reply with a JSON body { "error": msg }, and Content-Type application/json */
void http_json_error(struct http_reply *out, unsigned int status, const char *msg);

#endif /* CULPERT_HTTP_H */
