/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * clickhouse.h - a small client of ClickHouse's HTTP interface (libcurl):
 * the store URL and credentials file, a query with an optional body of
 * rows in a FORMAT, the result as text. Used by the ClickHouse store (the
 * writer), `report --store clickhouse:URL` (the reader) and
 * `collect --store-init` (the schema, docs/clickhouse/). docs/fleet.md.
 */
#ifndef ROCEMETER_CLICKHOUSE_H
#define ROCEMETER_CLICKHOUSE_H

#include <stddef.h>
#include <stdint.h>

#include "common/store_syntax.h" /* the URL syntax, RM_CH_*_PORT, RM_CH_DEFAULT_DATABASE */

#define RM_CH_CONNECT_TIMEOUT_MS 5000         /* TCP and TLS connect, per request */
#define RM_CH_TIMEOUT_MS         30000        /* a whole request, body and result included */
#define RM_CH_DEFAULT_USER       "default"    /* ClickHouse's user when a credentials file names none */
#define RM_CH_MAX_RESULT         (256u << 20) /* octets of one result kept in memory */

/* Where a ClickHouse server is and how to log in. Plain data: copy freely. */
struct rm_ch_conf {
	char base[512];     /* http[s]://host:port/ (what follows is the query string) */
	char database[128]; /* the URL's ?database=, else RM_CH_DEFAULT_DATABASE */
	char user[128];     /* from the credentials file; empty: ClickHouse's "default" */
	char password[256];
	char ca_file[512];           /* https: CA certificates, PEM; empty: the system's */
	unsigned connect_timeout_ms; /* 0: RM_CH_CONNECT_TIMEOUT_MS */
	unsigned timeout_ms;         /* 0: RM_CH_TIMEOUT_MS */
	char settings[128];          /* ClickHouse settings sent with every request as URL parameters,
				      * "name=value[&name=value]" (18.16 takes some only there); empty: none */
};

/*
 * Parse "clickhouse:http[s]://HOST[:PORT][/][?database=DB]" (the value of
 * --store after "clickhouse:", or with it) into c's base and database;
 * HOST may be a name, an IPv4 address or [IPv6]; no PORT is ClickHouse's
 * RM_CH_HTTP_PORT (http) or RM_CH_HTTPS_PORT (https), written into base. A
 * user or password in the URL is refused (credentials come from a file).
 * c's other fields are left alone. The syntax is rm_store_url_parse's
 * (common/store_syntax.h). 0, or -EINVAL with err "store URL 'URL' ...".
 */
int rm_ch_parse_url(const char *url, struct rm_ch_conf *c, char *err, size_t errlen);

/*
 * Read a credentials file: lines "user=NAME" and "password=SECRET"
 * (blank lines and lines starting with '#' are skipped; spaces and tabs
 * around the key, the '=' and the value do not count; a NAME has none
 * inside, a SECRET may). A password without a user is for ClickHouse's
 * user RM_CH_DEFAULT_USER. c's user and password are set only on success.
 * 0, or -errno / -EINVAL with err naming the file and line; -EPERM when the
 * file is readable or writable by its group or others (mode & 077, as
 * OpenSSH refuses a private key), with err naming the file, its mode and
 * "chmod 600".
 */
int rm_ch_load_credentials(const char *path, struct rm_ch_conf *c, char *err, size_t errlen);

/* The result of a request: body (NUL-terminated, also on error), its length and the HTTP status. */
struct rm_ch_result {
	char *data;
	size_t len;
	long status; /* 200 on success; 0 when no HTTP answer arrived */
};
void rm_ch_result_free(struct rm_ch_result *r);

struct rm_ch;

/* A connection handle (libcurl easy handle, kept alive between requests). NULL with err. */
struct rm_ch *rm_ch_open(const struct rm_ch_conf *c, char *err, size_t errlen);
void rm_ch_close(struct rm_ch *ch);
const struct rm_ch_conf *rm_ch_conf(const struct rm_ch *ch);

/*
 * Run sql in the configured database. With body (len octets, e.g. rows
 * after "INSERT INTO t FORMAT RowBinary"), sql goes in the URL and body is
 * POSTed; without, sql is the POSTed body. Blocks for at most the
 * configured timeouts. database overrides c->database when not NULL (""
 * means none, for CREATE DATABASE). out (may be NULL) gets the result;
 * the caller frees it with rm_ch_result_free. 0, or a negative errno with
 * err: -EIO the server answered with an error (err holds ClickHouse's
 * message, e.g. "Code: 60 ... Table rocemeter.x doesn't exist"),
 * -ECONNREFUSED/-ECONNRESET (closed before an answer)/-ETIMEDOUT/-EHOSTUNREACH
 * no answer, -ENOMEM.
 * One thread per handle.
 */
int rm_ch_query(struct rm_ch *ch, const char *sql, const void *body, size_t len, const char *database,
		struct rm_ch_result *out, char *err, size_t errlen);

/*
 * The schema of docs/clickhouse/single.sql (cluster NULL) or cluster.sql
 * (local tables and Distributed tables over the cluster NAME of the
 * server's remote_servers), created in the configured database, which is
 * created first when missing. Idempotent (IF NOT EXISTS): run it again, or
 * on every server of a cluster. A cluster is looked up in
 * system.clusters first: -ENOENT with err naming it, nothing created, when
 * the server does not know it. 0, or negative with err naming the
 * statement's table and ClickHouse's message.
 */
int rm_ch_create_schema(struct rm_ch *ch, const char *cluster, char *err, size_t errlen);

/* The DDL as shipped (docs/clickhouse/single.sql and cluster.sql, compiled in). */
extern const char rm_ch_single_sql[];
extern const char rm_ch_cluster_sql[];

/*
 * Split one statement off *sql at the next ';' outside quotes, with '--'
 * comment lines removed, into buf. Returns 1 with a non-empty statement,
 * 0 at the end. For the DDL files (no ';' in comments).
 */
int rm_ch_next_statement(const char **sql, char *buf, size_t len);

/* Quote s as a ClickHouse string literal ('...' with \\ and \' escaped) into buf; -ENOSPC when it does not fit. */
int rm_ch_quote(const char *s, char *buf, size_t len);

#endif /* ROCEMETER_CLICKHOUSE_H */
