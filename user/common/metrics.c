// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metrics.c - the Prometheus text exposition writer and its HTTP server on
 * libmicrohttpd (see metrics.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "errmsg.h"
#include "metrics.h"
#include "opts.h"
#include "rocemeter/report.h"
#include "version.h"

int rm_metrics_name_ok(const char *name)
{
	const char *p = name;

	if (!p || !*p || (*p >= '0' && *p <= '9'))
		return 0;
	for (; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == ':'))
			return 0;
	return 1;
}

/* The exposition format's escapes: '\\' and newline always, '"' in label values. */
static void escaped(FILE *f, const char *s, int quote)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (quote && *s == '"')
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

void rm_metrics_family(FILE *f, const char *name, enum rm_metric_type type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	escaped(f, help, 0);
	fprintf(f, "\n# TYPE %s %s\n", name, type == RM_METRIC_COUNTER ? "counter" : "gauge");
}

void rm_metrics_sample(FILE *f, const char *name, const struct rm_metric_label *labels, size_t n, uint64_t value)
{
	int first = 1;

	fputs(name, f);
	for (size_t i = 0; i < n; i++) {
		if (!labels[i].value || !labels[i].value[0])
			continue; /* an empty label is no label (Prometheus: the same series) */
		fprintf(f, "%s%s=\"", first ? "{" : ",", labels[i].name);
		escaped(f, labels[i].value, 1);
		fputc('"', f);
		first = 0;
	}
	if (!first)
		fputc('}', f);
	fprintf(f, " %llu\n", (unsigned long long)value);
}

void rm_metrics_rows(FILE *f, const struct rm_metric_row *rows, size_t n, const void *values,
		     const struct rm_metric_label *base, size_t nbase)
{
	struct rm_metric_label labels[8];
	size_t nl = nbase < 7 ? nbase : 7;

	memcpy(labels, base, nl * sizeof(*labels));
	for (size_t i = 0; i < n; i++) {
		const struct rm_metric_row *r = &rows[i];
		uint64_t v;

		if (i == 0 || strcmp(rows[i - 1].metric, r->metric))
			rm_metrics_family(f, r->metric, r->type, r->help);
		memcpy(&v, (const uint8_t *)values + r->offset, sizeof(v));
		if (r->label) {
			labels[nl].name = r->label;
			labels[nl].value = r->label_value;
		}
		rm_metrics_sample(f, r->metric, labels, nl + (r->label ? 1 : 0), v);
	}
}

void rm_metrics_seq_totals(FILE *f, const char *prefix, const char *help_suffix, const struct rm_seq_totals *t,
			   size_t n, const struct rm_metric_label *labels, size_t nlabels)
{
	char name[128], help[256];

	if (nlabels > 8)
		nlabels = 8;
#define SEQ_TOTAL_FAMILY_(member, metric, row_help)                            \
	snprintf(name, sizeof(name), "rocemeter_%s_" metric "_total", prefix); \
	snprintf(help, sizeof(help), "%s%s", row_help, help_suffix);           \
	rm_metrics_family(f, name, RM_METRIC_COUNTER, help);                   \
	for (size_t i = 0; i < n; i++)                                         \
		rm_metrics_sample(f, name, labels + i * nlabels, nlabels, t[i].member);
	RM_SEQ_TOTALS(SEQ_TOTAL_FAMILY_)
#undef SEQ_TOTAL_FAMILY_
}

void rm_metrics_build_info(FILE *f)
{
	const struct rm_metric_label l = { "version", RM_VERSION };

	rm_metrics_family(f, "rocemeter_build_info", RM_METRIC_GAUGE, "the rocemeter binary: its version (always 1)");
	rm_metrics_sample(f, "rocemeter_build_info", &l, 1, 1);
}

int rm_metrics_parse_listen(const char *name, const char *text, char *host, size_t hostlen, unsigned int *port,
			    char *err, size_t errlen)
{
	const char *colon = NULL, *h = text;
	size_t hl = 0;
	uint64_t p;

	if (text && text[0] == '[') {
		const char *end = strchr(text, ']');

		if (end && end[1] == ':') {
			h = text + 1;
			hl = (size_t)(end - h);
			colon = end + 1;
		}
	} else if (text) {
		colon = strrchr(text, ':');
		hl = colon ? (size_t)(colon - text) : 0;
		if (colon && memchr(text, ':', hl))
			colon = NULL; /* an IPv6 address needs its brackets */
	}
	if (!colon || hl >= hostlen || rm_parse_uint(colon + 1, 0, 65535, &p)) {
		rm_errf(err, errlen, "%s: '%s' is not ADDR:PORT, [IPV6]:PORT or :PORT", name, text ? text : "");
		return -EINVAL;
	}
	memcpy(host, h, hl);
	host[hl] = 0;
	*port = (unsigned int)p;
	return 0;
}

struct rm_metrics_server {
	struct MHD_Daemon *mhd;
	int fd;
	unsigned int port;
	pthread_mutex_t lock;
	rm_metrics_render_fn render;
	void *arg;
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct rm_metrics_server *s = cls;
	struct MHD_Response *resp;
	unsigned int code = MHD_HTTP_OK;
	char *body = NULL;
	size_t len = 0;
	enum MHD_Result rc;
	FILE *f;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		body = strdup("only GET and HEAD\n");
	} else if (strcmp(url, "/metrics")) {
		code = MHD_HTTP_NOT_FOUND;
		body = strdup("rocemeter serves /metrics only\n");
	} else {
		f = open_memstream(&body, &len);
		if (f) {
			pthread_mutex_lock(&s->lock);
			s->render(s->arg, f);
			pthread_mutex_unlock(&s->lock);
			if (fclose(f)) {
				free(body);
				body = NULL;
			}
		}
	}
	if (!body)
		return MHD_NO; /* out of memory: the connection is closed */
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				code == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* A listening socket for host:port (host "" = every address). fd, or -errno with err. */
static int open_listener(const char *listen_text, const char *host, unsigned int port, char *err, size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	char serv[8];
	int fd = -1, one = 1, e = 0, rc;

	snprintf(serv, sizeof(serv), "%u", port);
	hints.ai_family = host[0] ? AF_UNSPEC : AF_INET6; /* every address: one dual-stack socket */
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, serv, &hints, &res);
	if (rc) {
		rm_errf(err, errlen, "metrics: cannot listen on %s: %s", listen_text, gai_strerror(rc));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6 && !host[0]) {
			int zero = 0;

			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		}
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 16) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		rm_errf(err, errlen, "metrics: cannot listen on %s: %s", listen_text, strerror(e ? e : EINVAL));
		return -(e ? e : EINVAL);
	}
	return fd;
}

struct rm_metrics_server *rm_metrics_start(const char *listen_text, rm_metrics_render_fn render, void *arg, char *err,
					   size_t errlen)
{
	struct rm_metrics_server *s;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256];
	sigset_t all, old;
	unsigned int port;

	if (rm_metrics_parse_listen("metrics", listen_text, host, sizeof(host), &port, err, errlen))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		rm_errf(err, errlen, "metrics: out of memory");
		return NULL;
	}
	s->render = render;
	s->arg = arg;
	pthread_mutex_init(&s->lock, NULL);
	s->fd = open_listener(listen_text, host, port, err, errlen);
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	if (getsockname(s->fd, (struct sockaddr *)&ss, &sl) == 0)
		s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
	/* One thread answers every scrape in turn: a scrape is small, and the
	 * render function runs under the owner's lock anyway. The thread polls
	 * every connection without blocking on any, so a client that sends its
	 * request slowly (or reads the answer slowly) delays nobody; the
	 * per-address limit and the idle timeout keep slow clients from taking
	 * every slot (docs/metrics.md "Slow clients"). It starts with every
	 * signal blocked: a SIGTERM taken by it would not interrupt the owner's
	 * wait, which must act on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC, 0, NULL, NULL, answer,
				  s, MHD_OPTION_LISTEN_SOCKET, s->fd, MHD_OPTION_CONNECTION_LIMIT,
				  RM_METRICS_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT, RM_METRICS_PER_ADDRESS,
				  MHD_OPTION_CONNECTION_TIMEOUT, RM_METRICS_CONNECTION_TIMEOUT_S, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->mhd) {
		rm_errf(err, errlen, "metrics: cannot start the HTTP server on %s", listen_text);
		close(s->fd);
		free(s);
		return NULL;
	}
	return s;
}

unsigned int rm_metrics_port(const struct rm_metrics_server *s)
{
	return s ? s->port : 0;
}

void rm_metrics_lock(struct rm_metrics_server *s)
{
	if (s)
		pthread_mutex_lock(&s->lock);
}

void rm_metrics_unlock(struct rm_metrics_server *s)
{
	if (s)
		pthread_mutex_unlock(&s->lock);
}

void rm_metrics_stop(struct rm_metrics_server *s)
{
	if (!s)
		return;
	/* Quiesced, MHD hands the listening socket back instead of closing it. */
	int fd = MHD_quiesce_daemon(s->mhd);

	MHD_stop_daemon(s->mhd);
	if (fd >= 0)
		close(fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
