// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

#include "clock.h"
#include "http.h"
#include "json.h"
#include "log.h"

/* the statuses counted one by one; anything else lands in the last slot */
static const unsigned int status_slots[HTTP_STATUS_SLOTS] = {
	200, 400, 401, 403, 404, 405, 409, 413, 431, 500, 503, 0,
};

/*
 * Where a connection is: waiting for a request's head (from its accept,
 * or from the end of its previous response), in a handler (no deadline:
 * ?seconds= waits), or sending the response.
 */
enum conn_phase { PHASE_HEAD, PHASE_HANDLER, PHASE_SEND };

struct conn_slot {
	bool used, evicted;
	enum conn_phase phase;
	int fd;
	struct sockaddr_storage addr;
	int64_t since_ns;		/* CLOCK_MONOTONIC: the phase's start */
	int64_t deadline_ns;		/* the phase's end at the latest (0: none) */
};

/* responses are sent at this rate at least, beyond the timeout: a slow reader is cut */
#define MIN_SEND_BYTES_PER_S	(64 * 1024)
/* MHD's own limit, above ours: evicted connections still count there until they close */
#define MHD_SLACK		64
/* connections kept from long handlers (?seconds=, a queue of scrapes): /healthz gets in */
#define HEALTH_RESERVE		8
/* the reaper's period */
#define REAP_NS			(200 * 1000000LL)

struct http_server {
	struct MHD_Daemon *mhd;
	struct http_opts o;
	size_t n_routes;
	size_t token_len;
	unsigned int port;
	int fd;
	struct http_counts counts;	/* updated with atomics: one thread per connection */
	pthread_mutex_t conn_lock;	/* conns; held around every shutdown() of their fds */
	struct conn_slot *conns;	/* max_connections + MHD_SLACK of them */
	size_t cap_conns;
	pthread_t reaper;
	pthread_cond_t reap_cond;
	bool reaper_started, stopping;
};

unsigned int http_status_of_slot(int i)
{
	return status_slots[i];
}

static int slot_of(unsigned int status)
{
	int i;

	for (i = 0; i < HTTP_STATUS_SLOTS - 1; i++)
		if (status_slots[i] == status)
			return i;
	return HTTP_STATUS_SLOTS - 1;
}

static bool v4_loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

static int listen_v4(const char *host, long port, struct http_listen *out)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&out->addr;

	if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
		return -EINVAL;
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	out->len = sizeof(*in);
	out->loopback = v4_loopback(&in->sin_addr);
	return 0;
}

static int listen_v6(const char *host, long port, struct http_listen *out)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->addr;

	if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
		return -EINVAL;
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	out->len = sizeof(*in6);
	out->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
			(IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
			 in6->sin6_addr.s6_addr[12] == 127);
	return 0;
}

int http_parse_listen(const char *s, struct http_listen *out)
{
	bool v6 = s[0] == '[';
	const char *colon = v6 ? strstr(s, "]:") : strrchr(s, ':'), *h = s + v6;
	char host[64], *end;
	long port;

	memset(out, 0, sizeof(*out));
	if (!colon || colon == h || (size_t)(colon - h) >= sizeof(host))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - h), h);
	colon += v6;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 0 || port > 65535)
		return -EINVAL;
	return v6 ? listen_v6(host, port, out) : listen_v4(host, port, out);
}

bool http_token_equal(const char *given, size_t given_len, const char *secret, size_t len)
{
	volatile unsigned char diff = given_len != len;
	size_t i;

	/* every byte of the secret is looked at whatever the client sent */
	for (i = 0; i < len; i++)
		diff |= (unsigned char)(secret[i] ^ (i < given_len ? given[i] : 0));
	return !diff;
}

const char *http_query(const struct http_request *r, const char *key)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

void http_json_error(struct http_reply *out, unsigned int status, const char *msg)
{
	struct json j;
	FILE *f;

	out->status = status;
	out->content_type = "application/json";
	f = open_memstream(&out->body, &out->len);
	if (!f)
		return;
	json_init(&j, f);
	json_begin(&j, '{');
	json_key(&j, "error");
	json_str(&j, msg);
	json_end(&j, '}');
	fclose(f);
}

static void count(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static const struct http_route *route_of(const struct http_server *s, const char *path,
					 size_t *idx)
{
	size_t i;

	for (i = 0; i < s->n_routes; i++)
		if (!strcmp(s->o.routes[i].path, path)) {
			*idx = i;
			return &s->o.routes[i];
		}
	*idx = s->n_routes;
	return NULL;
}

/* "Bearer TOKEN", the scheme case-insensitive (RFC 9110 section 11.1) */
static bool authorized(const struct http_server *s, struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);

	if (!s->o.token)
		return true;
	if (!h || strncasecmp(h, "Bearer ", 7))
		return false;
	h += 7;
	h += strspn(h, " ");
	return http_token_equal(h, strlen(h), s->o.token, s->token_len);
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct http_reply *r,
				  bool challenge)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!r->body) {
		/* open_memstream() failed: no memory for even the error */
		r->status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r->len = 0;
	}
	resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(r->body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->content_type ? r->content_type : "text/plain; charset=utf-8");
	if (challenge)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"culpert-bpf\"");
	if (r->status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* the slot of a connection (its socket context), NULL if it has none */
static struct conn_slot *slot_of_conn(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void set_phase(struct http_server *s, struct conn_slot *c, enum conn_phase p,
		      int64_t deadline_ns)
{
	if (!c)
		return;
	pthread_mutex_lock(&s->conn_lock);
	c->phase = p;
	c->since_ns = (int64_t)clock_ns(CLOCK_MONOTONIC);
	c->deadline_ns = deadline_ns;
	pthread_mutex_unlock(&s->conn_lock);
}

/*
 * Connections in a handler cannot make room for a new one: past
 * max_connections - HEALTH_RESERVE of them, only open routes (/healthz)
 * are answered, so that a probe always finds a connection to evict.
 */
static bool busy(struct http_server *s, const struct conn_slot *self)
{
	size_t i, n = 0;

	pthread_mutex_lock(&s->conn_lock);
	for (i = 0; i < s->cap_conns; i++)
		n += &s->conns[i] != self && s->conns[i].used && !s->conns[i].evicted &&
		     s->conns[i].phase == PHASE_HANDLER;
	pthread_mutex_unlock(&s->conn_lock);
	return n >= s->o.max_connections - HEALTH_RESERVE;
}

/* a request that announces a body: none is wanted, and reading it is not worth the time */
static bool has_body(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (cl && strcmp(cl, "0")) ||
	       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/*
 * MHD calls this once the head is in, then once the body is (none): the
 * answer is queued on the second call, so that the connection stays open
 * for the next request (keep-alive; a response queued on the first call
 * makes MHD close it).  A request with a body is answered on the first,
 * and its connection closed.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	static int head_seen;
	struct http_server *s = cls;
	struct http_request req = { .path = url, .conn = conn };
	struct http_reply r = { 0 };
	const struct http_route *route;
	struct conn_slot *slot = slot_of_conn(conn);
	enum MHD_Result ret;
	size_t idx;
	bool challenge = false;

	if (!*con_cls) {
		*con_cls = &head_seen;
		set_phase(s, slot, PHASE_HANDLER, 0);
		if (!has_body(conn))
			return MHD_YES;
	} else if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	route = route_of(s, url, &idx);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		http_json_error(&r, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served");
	} else if (!(route && route->open) && !authorized(s, conn)) {
		count(&s->counts.auth_failures);
		challenge = true;
		http_json_error(&r, MHD_HTTP_UNAUTHORIZED, "missing or wrong bearer token: "
				"send 'Authorization: Bearer' and the content of the agent's "
				"--token-file");
	} else if (route && !route->open && busy(s, slot)) {
		http_json_error(&r, MHD_HTTP_SERVICE_UNAVAILABLE, "too many requests are being "
				"answered at once: try again");
	} else if (!route) {
		http_json_error(&r, MHD_HTTP_NOT_FOUND, "no such path: the agent serves "
				"/debug/pprof/allocs, /debug/pprof/heap, /metrics, /targets and "
				"/healthz");
	} else {
		route->fn(s->o.ctx, &req, &r);
	}
	count(&s->counts.requests[idx < 15 ? idx : 15][slot_of(r.status)]);
	/* the response goes out at MIN_SEND_BYTES_PER_S at least */
	set_phase(s, slot, PHASE_SEND,
		  (int64_t)clock_ns(CLOCK_MONOTONIC) + (int64_t)s->o.timeout_s * 1000000000LL +
			  (int64_t)(r.len / MIN_SEND_BYTES_PER_S) * 1000000000LL);
	ret = send_reply(conn, &r, challenge);
	return ret;
}

/* the response is out (or the request ended): the next head has timeout_s to come */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;

	set_phase(s, slot_of_conn(conn), PHASE_HEAD,
		  (int64_t)clock_ns(CLOCK_MONOTONIC) + (int64_t)s->o.timeout_s * 1000000000LL);
	*con_cls = NULL;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (b->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
	return false;
}

/* the connection is cut: its thread sees the end of its socket and closes it; conn_lock held */
static void evict(struct conn_slot *c)
{
	c->evicted = true;
	shutdown(c->fd, SHUT_RDWR);
}

/*
 * Admission, on MHD's listening thread: at most max_per_client from one
 * address; past max_connections in all, the connection longest in its
 * head (a slow or idle client) makes room, so that a prompt client (a
 * health probe) always gets in while the others are slow.
 */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct http_server *s = cls;
	struct conn_slot *oldest = NULL;
	size_t i, all = 0, mine = 0;
	enum MHD_Result ok = MHD_YES;

	(void)len;
	pthread_mutex_lock(&s->conn_lock);
	for (i = 0; i < s->cap_conns; i++) {
		struct conn_slot *c = &s->conns[i];

		if (!c->used || c->evicted)
			continue;
		all++;
		mine += same_addr(&c->addr, addr);
		if (c->phase == PHASE_HEAD && (!oldest || c->since_ns < oldest->since_ns))
			oldest = c;
	}
	if (mine >= s->o.max_per_client)
		ok = MHD_NO;
	else if (all >= s->o.max_connections && oldest)
		evict(oldest);
	else if (all >= s->o.max_connections)
		ok = MHD_NO;
	pthread_mutex_unlock(&s->conn_lock);
	return ok;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *s = cls;
	const union MHD_ConnectionInfo *fd, *ad;
	struct conn_slot *c = *socket_context;
	size_t i;

	pthread_mutex_lock(&s->conn_lock);
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		/* before MHD closes the fd: no shutdown() can reach another socket */
		if (c)
			c->used = false;
		*socket_context = NULL;
		pthread_mutex_unlock(&s->conn_lock);
		return;
	}
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	ad = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	for (i = 0; i < s->cap_conns && s->conns[i].used; i++)
		;
	if (fd && ad && i < s->cap_conns) {
		c = &s->conns[i];
		memset(c, 0, sizeof(*c));
		c->used = true;
		c->fd = fd->connect_fd;
		memcpy(&c->addr, ad->client_addr, ad->client_addr->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
		c->phase = PHASE_HEAD;
		c->since_ns = (int64_t)clock_ns(CLOCK_MONOTONIC);
		c->deadline_ns = c->since_ns + (int64_t)s->o.timeout_s * 1000000000LL;
		*socket_context = c;
	}
	pthread_mutex_unlock(&s->conn_lock);
}

/*
 * The deadlines, beside MHD's idle timeout: a client that trickles a byte
 * now and then is never idle, but its head (or its reading of the
 * response) takes too long.
 */
static void *reap(void *arg)
{
	struct http_server *s = arg;
	struct timespec until;
	int64_t now;
	size_t i;

	pthread_mutex_lock(&s->conn_lock);
	while (!s->stopping) {
		now = (int64_t)clock_ns(CLOCK_MONOTONIC);
		for (i = 0; i < s->cap_conns; i++) {
			struct conn_slot *c = &s->conns[i];

			if (c->used && !c->evicted && c->deadline_ns && now > c->deadline_ns)
				evict(c);
		}
		until = clock_deadline(CLOCK_MONOTONIC, REAP_NS);
		pthread_cond_timedwait(&s->reap_cond, &s->conn_lock, &until);
	}
	pthread_mutex_unlock(&s->conn_lock);
	return NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	pr_debug("http: %s%s", msg, msg[0] && msg[strlen(msg) - 1] == '\n' ? "" : "\n");
}

static int listen_socket(const struct http_listen *l, unsigned int *port)
{
	struct sockaddr_storage got;
	socklen_t gl = sizeof(got);
	int one = 1, fd, err;

	fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l->addr.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&l->addr, l->len) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&got, &gl)) {
		err = -errno;
		close(fd);
		return err;
	}
	*port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port :
					      ((struct sockaddr_in *)&got)->sin_port);
	return fd;
}

struct http_server *http__start(const struct http_opts *o, char *err, size_t errlen)
{
	struct http_server *s = calloc(1, sizeof(*s));
	/*
	 * ITC: a connection thread that ends wakes the listening thread, which
	 * then forgets the connection at once; without it a client address's
	 * count stays up until the next accept, which the per-client limit
	 * refuses (seen after slow clients timed out).
	 */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			     MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;

	pthread_condattr_t ca;

	if (s) {
		s->cap_conns = o->max_connections + MHD_SLACK;
		s->conns = calloc(s->cap_conns, sizeof(*s->conns));
	}
	if (!s || !s->conns) {
		free(s);
		snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(ENOMEM));
		return NULL;
	}
	pthread_mutex_init(&s->conn_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->reap_cond, &ca);
	pthread_condattr_destroy(&ca);
	s->o = *o;
	s->token_len = o->token ? strlen(o->token) : 0;
	for (s->n_routes = 0; o->routes[s->n_routes].path && s->n_routes < 15; s->n_routes++)
		;
	s->fd = listen_socket(&o->listen, &s->port);
	if (s->fd < 0) {
		snprintf(err, errlen, "cannot listen there: %s; choose another "
			 "address or port", strerror(-s->fd));
		http__stop(s);
		return NULL;
	}
	/* the logger first: MHD's own would print what comes before it */
	/* the limits are on_accept()'s; MHD's own is a backstop above them */
	s->mhd = MHD_start_daemon(flags, 0, on_accept, s, on_request, s,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, s->fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)s->cap_conns,
				  MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->max_request_bytes,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_END);
	if (!s->mhd) {
		snprintf(err, errlen, "cannot start the HTTP server (libmicrohttpd): %s; run with "
			 "-vv for its reason", strerror(errno ? errno : EINVAL));
		close(s->fd);
		http__stop(s);
		return NULL;
	}
	if (pthread_create(&s->reaper, NULL, reap, s)) {
		snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(EAGAIN));
		http__stop(s);
		return NULL;
	}
	s->reaper_started = true;
	return s;
}

void http__stop(struct http_server *s)
{
	if (!s)
		return;
	if (s->reaper_started) {
		pthread_mutex_lock(&s->conn_lock);
		s->stopping = true;
		pthread_cond_signal(&s->reap_cond);
		pthread_mutex_unlock(&s->conn_lock);
		pthread_join(s->reaper, NULL);
	}
	/* MHD closes the listening socket it was given */
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	pthread_mutex_destroy(&s->conn_lock);
	pthread_cond_destroy(&s->reap_cond);
	free(s->conns);
	free(s);
}

void http__address(const struct http_server *s, char *buf, size_t len)
{
	const struct sockaddr_storage *a = &s->o.listen.addr;
	char host[INET6_ADDRSTRLEN] = "?";
	bool v6 = a->ss_family == AF_INET6;

	inet_ntop(a->ss_family, v6 ? (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr :
		  (const void *)&((const struct sockaddr_in *)a)->sin_addr, host, sizeof(host));
	snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", host, s->port);
}

void http__counts(struct http_server *s, struct http_counts *out)
{
	size_t i, k;

	for (i = 0; i < 16; i++)
		for (k = 0; k < HTTP_STATUS_SLOTS; k++)
			out->requests[i][k] = __atomic_load_n(&s->counts.requests[i][k],
							      __ATOMIC_RELAXED);
	out->auth_failures = __atomic_load_n(&s->counts.auth_failures, __ATOMIC_RELAXED);
}
