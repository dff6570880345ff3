// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * clickhouse.c - ClickHouse's HTTP interface through libcurl: URL and
 * credentials parsing, queries with a body of rows, the shipped schema
 * (docs/clickhouse/single.sql and cluster.sql, compiled in with .incbin so the files and the
 * binary cannot differ). docs/fleet.md.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clickhouse.h"
#include "common/store_syntax.h"

/* The DDL files, NUL-terminated (the build runs from the repository's root; mk/collect.mk: dependencies). */
__asm__(".section .rodata\n"
	".global rm_ch_single_sql\n"
	".type rm_ch_single_sql, @object\n"
	"rm_ch_single_sql:\n"
	".incbin \"docs/clickhouse/single.sql\"\n"
	".byte 0\n"
	".global rm_ch_cluster_sql\n"
	".type rm_ch_cluster_sql, @object\n"
	"rm_ch_cluster_sql:\n"
	".incbin \"docs/clickhouse/cluster.sql\"\n"
	".byte 0\n"
	".previous\n");

struct rm_ch {
	struct rm_ch_conf conf;
	CURL *curl;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

/* curl_global_init is not thread-safe: once, before any handle. */
static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int rm_ch_parse_url(const char *url, struct rm_ch_conf *c, char *err, size_t errlen)
{
	char why[700];
	int rc = rm_store_url_parse(url, c->base, sizeof(c->base), c->database, sizeof(c->database), why, sizeof(why));

	if (rc)
		snprintf(err, errlen, "store URL %s", why);
	return rc;
}

/* s without the spaces and tabs at both ends, in place. */
static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = 0;
	return s;
}

int rm_ch_load_credentials(const char *path, struct rm_ch_conf *c, char *err, size_t errlen)
{
	char line[512], user[sizeof(c->user)] = "", password[sizeof(c->password)] = "";
	int lineno = 0, rc = 0;
	struct stat sb;
	FILE *f = fopen(path, "re");

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	/* A secret others can read is no secret: refused before it is read, as OpenSSH refuses such a key. */
	if (fstat(fileno(f), &sb)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		fclose(f);
		return rc;
	}
	if (sb.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen,
			 "credentials file %s: permissions %04o are too open: it must be readable by its owner "
			 "only (chmod 600)",
			 path, (unsigned)(sb.st_mode & 07777));
		fclose(f);
		return -EPERM;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\r\n");
		char *eq, *key, *value;

		lineno++;
		if (line[len] == 0 && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line longer than %zu octets", path, lineno, sizeof(line) - 2);
			rc = -EINVAL;
			break;
		}
		line[len] = 0;
		key = trim(line);
		if (!key[0] || key[0] == '#')
			continue;
		eq = strchr(key, '=');
		if (eq) {
			*eq = 0;
			key = trim(key);
			value = trim(eq + 1);
		}
		if (eq && !strcmp(key, "user") && value[0] && !strpbrk(value, " \t") && strlen(value) < sizeof(user)) {
			snprintf(user, sizeof(user), "%s", value);
		} else if (eq && !strcmp(key, "password") && strlen(value) < sizeof(password)) {
			snprintf(password, sizeof(password), "%s", value);
		} else {
			snprintf(err, errlen,
				 "%s:%d: not 'user=NAME' or 'password=SECRET' (or the name has a space, or the value "
				 "is too long)",
				 path, lineno);
			rc = -EINVAL;
			break;
		}
	}
	fclose(f);
	if (!rc) {
		/* A password alone is ClickHouse's user "default" with that password (sent, not dropped). */
		snprintf(c->user, sizeof(c->user), "%s", user[0] || !password[0] ? user : RM_CH_DEFAULT_USER);
		snprintf(c->password, sizeof(c->password), "%s", password);
	}
	explicit_bzero(line, sizeof(line));
	explicit_bzero(password, sizeof(password));
	return rc;
}

void rm_ch_result_free(struct rm_ch_result *r)
{
	if (!r)
		return;
	free(r->data);
	r->data = NULL;
	r->len = 0;
}

struct rm_ch *rm_ch_open(const struct rm_ch_conf *c, char *err, size_t errlen)
{
	struct rm_ch *ch;

	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK) {
		snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(global_rc));
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch || !(ch->curl = curl_easy_init())) {
		free(ch);
		snprintf(err, errlen, "libcurl: out of memory");
		return NULL;
	}
	ch->conf = *c;
	return ch;
}

void rm_ch_close(struct rm_ch *ch)
{
	if (!ch)
		return;
	curl_easy_cleanup(ch->curl);
	explicit_bzero(ch->conf.password, sizeof(ch->conf.password));
	free(ch);
}

const struct rm_ch_conf *rm_ch_conf(const struct rm_ch *ch)
{
	return &ch->conf;
}

struct sink {
	char *data;
	size_t len, cap;
	int too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct sink *s = arg;
	size_t n = size * nmemb;

	if (s->len + n + 1 > RM_CH_MAX_RESULT) {
		s->too_big = 1;
		return 0;
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *d;

		while (cap < s->len + n + 1)
			cap *= 2;
		d = realloc(s->data, cap);
		if (!d)
			return 0;
		s->data = d;
		s->cap = cap;
	}
	memcpy(s->data + s->len, ptr, n);
	s->len += n;
	s->data[s->len] = 0;
	return n;
}

static int curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		return -ECONNRESET; /* a connection closed before an answer: a server stopping or starting */
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

int rm_ch_query(struct rm_ch *ch, const char *sql, const void *body, size_t len, const char *database,
		struct rm_ch_result *out, char *err, size_t errlen)
{
	const struct rm_ch_conf *c = &ch->conf;
	const char *db = database ? database : c->database;
	struct sink s = { 0 };
	char *url = NULL, *esc = NULL;
	size_t ulen = 0;
	FILE *u;
	CURLcode rc;
	long status = 0;
	int ret = 0;

	u = open_memstream(&url, &ulen);
	if (!u)
		return -ENOMEM;
	fputs(c->base, u);
	fputc('?', u);
	if (db && db[0])
		fprintf(u, "database=%s&", db);
	if (c->settings[0])
		fprintf(u, "%s&", c->settings);
	if (body) {
		esc = curl_easy_escape(ch->curl, sql, 0);
		if (!esc) {
			fclose(u);
			free(url);
			return -ENOMEM;
		}
		fprintf(u, "query=%s", esc);
		curl_free(esc);
	}
	if (fclose(u)) {
		free(url);
		return -ENOMEM;
	}
	curl_easy_reset(ch->curl); /* keeps the connection for the next request */
	curl_easy_setopt(ch->curl, CURLOPT_URL, url);
	curl_easy_setopt(ch->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(ch->curl, CURLOPT_POSTFIELDS, body ? body : (const void *)sql);
	curl_easy_setopt(ch->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : strlen(sql)));
	curl_easy_setopt(ch->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(ch->curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(ch->curl, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
	curl_easy_setopt(ch->curl, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(c->connect_timeout_ms ? c->connect_timeout_ms : RM_CH_CONNECT_TIMEOUT_MS));
	curl_easy_setopt(ch->curl, CURLOPT_TIMEOUT_MS, (long)(c->timeout_ms ? c->timeout_ms : RM_CH_TIMEOUT_MS));
	curl_easy_setopt(ch->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->user[0]) {
		curl_easy_setopt(ch->curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(ch->curl, CURLOPT_USERNAME, c->user);
		curl_easy_setopt(ch->curl, CURLOPT_PASSWORD, c->password);
	}
	if (c->ca_file[0])
		curl_easy_setopt(ch->curl, CURLOPT_CAINFO, c->ca_file);
	rc = curl_easy_perform(ch->curl);
	curl_easy_getinfo(ch->curl, CURLINFO_RESPONSE_CODE, &status);
	free(url);
	if (rc != CURLE_OK) {
		if (s.too_big)
			snprintf(err, errlen, "%s: result larger than %u octets", c->base, RM_CH_MAX_RESULT);
		else
			snprintf(err, errlen, "%s: %s", c->base, curl_easy_strerror(rc));
		ret = s.too_big ? -EFBIG : curl_errno(rc);
	} else if (status != 200) {
		size_t n = s.len;

		while (n && (s.data[n - 1] == '\n' || s.data[n - 1] == ' '))
			n--;
		snprintf(err, errlen, "%s: HTTP %ld: %.*s", c->base, status, (int)(n > 400 ? 400 : n),
			 s.data ? s.data : "");
		ret = -EIO;
	}
	if (!s.data && !(s.data = calloc(1, 1))) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	}
	if (out) {
		out->data = s.data;
		out->len = s.len;
		out->status = status;
	} else {
		free(s.data);
	}
	return ret;
}

int rm_ch_next_statement(const char **sql, char *buf, size_t len)
{
	const char *p = *sql;

	for (;;) {
		size_t n = 0;
		int quote = 0;

		while (*p) {
			if (!quote && p[0] == '-' && p[1] == '-') { /* a comment to the end of the line */
				p += strcspn(p, "\n");
				continue;
			}
			if (*p == '\'' && (p == *sql || p[-1] != '\\'))
				quote = !quote;
			if (!quote && *p == ';') {
				p++;
				break;
			}
			if (n + 1 < len)
				buf[n++] = *p;
			p++;
		}
		while (n && isspace((unsigned char)buf[n - 1]))
			n--;
		buf[n] = 0;
		*sql = p;
		{
			char *s = buf;

			while (isspace((unsigned char)*s))
				s++;
			if (*s) {
				memmove(buf, s, strlen(s) + 1);
				return 1;
			}
		}
		if (!*p)
			return 0;
	}
}

int rm_ch_quote(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	if (len < 3)
		return -ENOSPC;
	buf[n++] = '\'';
	for (; *s; s++) {
		if (*s == '\\' || *s == '\'') {
			if (n + 1 >= len)
				return -ENOSPC;
			buf[n++] = '\\';
		}
		if (n + 1 >= len)
			return -ENOSPC;
		buf[n++] = *s;
	}
	if (n + 2 > len)
		return -ENOSPC;
	buf[n++] = '\'';
	buf[n] = 0;
	return 0;
}

/* The table a CREATE TABLE statement names, for messages. */
static void table_of(const char *stmt, char *name, size_t len)
{
	const char *p = strstr(stmt, "EXISTS ");

	p = p ? p + 7 : stmt;
	snprintf(name, len, "%.*s", (int)strcspn(p, " ("), p);
}

int rm_ch_create_schema(struct rm_ch *ch, const char *cluster, char *err, size_t errlen)
{
	const char *sql = cluster ? rm_ch_cluster_sql : rm_ch_single_sql;
	char stmt[8192], db[160], qcluster[300], name[128], e2[512];
	int rc;

	if (cluster && rm_ch_quote(cluster, qcluster, sizeof(qcluster))) {
		snprintf(err, errlen, "--cluster: name too long");
		return -EINVAL;
	}
	/* The cluster first: ClickHouse checks it at the first Distributed table, after the local ones exist. */
	if (cluster) {
		struct rm_ch_result res = { 0 };
		char q[400];

		snprintf(q, sizeof(q), "SELECT count() FROM system.clusters WHERE cluster = %s", qcluster);
		rc = rm_ch_query(ch, q, NULL, 0, "", &res, e2, sizeof(e2));
		if (!rc && strtoul(res.data, NULL, 10) == 0) {
			snprintf(err, errlen,
				 "--cluster %s: the server has no such cluster in system.clusters (remote_servers)",
				 cluster);
			rc = -ENOENT;
		} else if (rc) {
			snprintf(err, errlen, "--cluster %s: %s", cluster, e2);
		}
		rm_ch_result_free(&res);
		if (rc)
			return rc;
	}
	/* The database: created without one selected (it may not exist yet). */
	snprintf(db, sizeof(db), "CREATE DATABASE IF NOT EXISTS %s", ch->conf.database);
	rc = rm_ch_query(ch, db, NULL, 0, "", NULL, e2, sizeof(e2));
	if (rc) {
		snprintf(err, errlen, "CREATE DATABASE %s: %s", ch->conf.database, e2);
		return rc;
	}
	while (rm_ch_next_statement(&sql, stmt, sizeof(stmt))) {
		char *at;

		/* '${CLUSTER}' in cluster.sql: the cluster's name as a string literal */
		while (cluster && (at = strstr(stmt, "'${CLUSTER}'"))) {
			size_t ql = strlen(qcluster), tail = strlen(at + 12);

			if (strlen(stmt) + ql - 12 + 1 > sizeof(stmt)) {
				snprintf(err, errlen, "--cluster: name too long");
				return -EINVAL;
			}
			memmove(at + ql, at + 12, tail + 1);
			memcpy(at, qcluster, ql);
		}
		rc = rm_ch_query(ch, stmt, NULL, 0, NULL, NULL, e2, sizeof(e2));
		if (rc) {
			table_of(stmt, name, sizeof(name));
			snprintf(err, errlen, "CREATE TABLE %s.%s: %s", ch->conf.database, name, e2);
			return rc;
		}
	}
	return 0;
}
