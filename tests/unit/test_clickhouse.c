// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_clickhouse.c - what the ClickHouse client (user/store/clickhouse/clickhouse.c)
 * and the store option (user/store/store_spec.c) do without a server: the
 * store URL, the credentials file, the statements of the shipped DDL, string
 * quoting, a refused connection. Expected values come from the URL forms and
 * rules of docs/fleet.md, the tables of user/store/sqlite/store.h and ClickHouse's
 * string literal syntax (backslash escapes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/clickhouse/clickhouse.h"
#include "store/store_spec.h"

/* The tables of the SQLite store (store.h), epochs being one plain table in ClickHouse. */
static const char *const tables[] = { "runs",  "sessions",    "epochs",     "raw_records",
				      "drops", "connections", "run_limits", "observation_points" };
#define N_TABLES (sizeof(tables) / sizeof(tables[0]))

static void assert_url(const char *url, const char *base, const char *db)
{
	struct rm_ch_conf c = { 0 };
	char err[256] = "";

	assert_int_equal(rm_ch_parse_url(url, &c, err, sizeof(err)), 0);
	assert_string_equal(c.base, base);
	assert_string_equal(c.database, db);
}

static void assert_bad_url(const char *url, const char *why)
{
	struct rm_ch_conf c = { 0 };
	char err[256] = "";

	assert_int_equal(rm_ch_parse_url(url, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, url));
	if (why)
		assert_non_null(strstr(err, why));
}

static void test_url(void **state)
{
	assert_url("clickhouse:http://127.0.0.1:8123", "http://127.0.0.1:8123/", "default");
	assert_url("clickhouse:http://127.0.0.1:8123/", "http://127.0.0.1:8123/", "default");
	assert_url("clickhouse:https://ch.example.net:8443/?database=fleet", "https://ch.example.net:8443/", "fleet");
	assert_url("clickhouse:http://[::1]:8123?database=rm_2", "http://[::1]:8123/", "rm_2");
	assert_url("http://ch:8123/", "http://ch:8123/", "default"); /* the scheme prefix is optional */
	assert_bad_url("clickhouse:ftp://h:21/", "clickhouse:http[s]://HOST[:PORT]");
	assert_bad_url("clickhouse:http://:8123/", NULL);
	assert_bad_url("clickhouse:http://h:0/", NULL);
	assert_bad_url("clickhouse:http://h:65536/", NULL);
	assert_bad_url("clickhouse:http://h:12x/", NULL);
	assert_bad_url("clickhouse:http://h:8123/path", NULL);
	assert_bad_url("clickhouse:http://h:8123/?user=x", NULL);
	assert_bad_url("clickhouse:http://h:8123/?database=a;DROP", NULL);
	/* credentials never on the command line */
	assert_bad_url("clickhouse:http://u:pw@h:8123/", "credentials file");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_credentials(void **state)
{
	char path[] = "/tmp/test_clickhouse_credXXXXXX", err[256] = "";
	struct rm_ch_conf c = { 0 };
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	write_file(path, "# rocemeter\n\nuser=collector\npassword=a b=c#d\r\n");
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), 0);
	assert_string_equal(c.user, "collector");
	assert_string_equal(c.password, "a b=c#d"); /* the rest of the line, as written */

	write_file(path, "user=x\npass=y\n");
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2:")); /* the file and line */
	assert_non_null(strstr(err, path));
	unlink(path);
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
}

/* docs/fleet.md "The store option": no port means ClickHouse's HTTP ports, 8123 (http) and 8443 (https). */
static void test_url_default_port(void **state)
{
	assert_url("clickhouse:http://127.0.0.1/?database=rocemeter", "http://127.0.0.1:8123/", "rocemeter");
	assert_url("clickhouse:http://ch.example.net", "http://ch.example.net:8123/", "default");
	assert_url("clickhouse:https://ch.example.net/", "https://ch.example.net:8443/", "default");
	assert_url("clickhouse:https://[2001:db8::1]?database=f", "https://[2001:db8::1]:8443/", "f");
	assert_url("clickhouse:http://[::1]:9000/", "http://[::1]:9000/", "default"); /* a port given is kept */
	assert_bad_url("clickhouse:http://h:/", NULL);
}

/* A new credentials file with text and mode; its name in path (at least 32 octets). */
static void credentials_file(char *path, const char *text, mode_t mode)
{
	int fd;

	strcpy(path, "/tmp/test_clickhouse_credXXXXXX");
	fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	write_file(path, text);
	assert_int_equal(chmod(path, mode), 0);
}

/*
 * docs/fleet.md "The store option": a credentials file readable or writable
 * by group or others is refused, as OpenSSH refuses such a private key.
 */
static void test_credentials_mode(void **state)
{
	static const mode_t refused[] = { 0644, 0640, 0604, 0660, 0620, 0602, 0666 };
	char path[64], err[512];
	struct rm_ch_conf c = { 0 };

	credentials_file(path, "user=rocemeter\npassword=s\n", 0600);
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), 0);
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char mode[8];

		memset(&c, 0, sizeof(c));
		err[0] = 0;
		assert_int_equal(chmod(path, refused[i]), 0);
		assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), -EPERM);
		snprintf(mode, sizeof(mode), "%04o", (unsigned)refused[i]);
		assert_non_null(strstr(err, path));
		assert_non_null(strstr(err, mode));
		assert_non_null(strstr(err, "chmod 600"));
		assert_string_equal(c.password, ""); /* nothing read */
	}
	unlink(path);
}

/*
 * docs/fleet.md "The store option": spaces around the key and '=' do not
 * count; password= without user= is ClickHouse's user "default".
 */
static void test_credentials_forms(void **state)
{
	char path[64], err[512];
	struct rm_ch_conf c = { 0 };

	credentials_file(path, "  user = collector\t\npassword\t=  s e=c  \n", 0600);
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), 0);
	assert_string_equal(c.user, "collector");
	assert_string_equal(c.password, "s e=c");
	unlink(path);

	memset(&c, 0, sizeof(c));
	credentials_file(path, "password=secret\n", 0600);
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), 0);
	assert_string_equal(c.user, "default");
	assert_string_equal(c.password, "secret");
	unlink(path);

	memset(&c, 0, sizeof(c));
	credentials_file(path, "user = x y\n", 0600); /* a user name has no space */
	assert_int_equal(rm_ch_load_credentials(path, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":1:"));
	unlink(path);
}

/* The CREATE TABLE statements of a DDL text, by table name, in order. */
static int statements(const char *sql, char names[][64], int max)
{
	char stmt[8192];
	int n = 0;

	while (rm_ch_next_statement(&sql, stmt, sizeof(stmt))) {
		assert_null(strstr(stmt, "--"));
		assert_int_equal(strncmp(stmt, "CREATE TABLE IF NOT EXISTS ", 27), 0);
		assert_true(n < max);
		sscanf(stmt + 27, "%63[a-z_]", names[n++]);
	}
	return n;
}

static void test_ddl(void **state)
{
	char names[32][64], want[64];
	int n;

	n = statements(rm_ch_single_sql, names, 32);
	assert_int_equal(n, N_TABLES);
	for (size_t i = 0; i < N_TABLES; i++)
		assert_string_equal(names[i], tables[i]);
	/* every table carries the collector ID; epochs keep the latest version */
	assert_non_null(strstr(rm_ch_single_sql, "CREATE TABLE IF NOT EXISTS epochs (\n    collector_id String"));
	assert_non_null(strstr(strstr(rm_ch_single_sql, "EXISTS epochs ("), "ENGINE = ReplacingMergeTree(version)"));

	n = statements(rm_ch_cluster_sql, names, 32);
	assert_int_equal(n, 2 * N_TABLES);
	for (size_t i = 0; i < N_TABLES; i++) {
		snprintf(want, sizeof(want), "%s_local", tables[i]);
		assert_string_equal(names[2 * i], want);
		assert_string_equal(names[2 * i + 1], tables[i]);
	}
}

static void test_statements(void **state)
{
	const char *sql = "-- a; comment\nSELECT 'a;b' ; \n\n-- only a comment;\n;  SELECT 2;\n";
	char buf[64];

	assert_int_equal(rm_ch_next_statement(&sql, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "SELECT 'a;b'");
	assert_int_equal(rm_ch_next_statement(&sql, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "SELECT 2");
	assert_int_equal(rm_ch_next_statement(&sql, buf, sizeof(buf)), 0);
}

static void test_quote(void **state)
{
	char buf[32];

	assert_int_equal(rm_ch_quote("my-cluster", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "'my-cluster'");
	assert_int_equal(rm_ch_quote("a'b\\c", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "'a\\'b\\\\c'");
}

static void test_quote_space(void **state)
{
	char buf[16];

	assert_int_equal(rm_ch_quote("0123456789", buf, 13), 0);
	assert_string_equal(buf, "'0123456789'");
	assert_int_equal(rm_ch_quote("0123456789", buf, 12), -ENOSPC);
}

static void test_store_spec(void **state)
{
	struct rm_store_spec s;
	char err[256];

	assert_int_equal(rm_store_spec_resolve("sqlite:/tmp/x.db", NULL, NULL, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(s.kind, RM_STORE_SQLITE);
	assert_string_equal(s.path, "/tmp/x.db");
	/* --db is sqlite:FILE */
	assert_int_equal(rm_store_spec_resolve(NULL, "/tmp/y.db", NULL, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(s.kind, RM_STORE_SQLITE);
	assert_string_equal(s.path, "/tmp/y.db");
	assert_int_equal(rm_store_spec_resolve("sqlite:/tmp/y.db", "/tmp/y.db", NULL, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(rm_store_spec_resolve("sqlite:/tmp/x.db", "/tmp/y.db", NULL, NULL, &s, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(rm_store_spec_resolve("clickhouse:http://h:1/", "/tmp/y.db", NULL, NULL, &s, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(rm_store_spec_resolve(NULL, NULL, NULL, NULL, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(rm_store_spec_resolve("sqlite:", NULL, NULL, NULL, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(rm_store_spec_resolve("mysql:x", NULL, NULL, NULL, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "mysql:x"));
	assert_int_equal(
		rm_store_spec_resolve("clickhouse:http://h:8123/?database=f", NULL, NULL, NULL, &s, err, sizeof(err)),
		0);
	assert_int_equal(s.kind, RM_STORE_CLICKHOUSE);
	assert_string_equal(s.ch.base, "http://h:8123/");
	assert_string_equal(s.ch.database, "f");
	assert_string_equal(s.ch.user, "");
	/* a CA file only for https, credentials and CA only for clickhouse */
	assert_int_equal(
		rm_store_spec_resolve("clickhouse:http://h:1/", NULL, NULL, "/etc/hostname", &s, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(
		rm_store_spec_resolve("clickhouse:https://h:1/", NULL, NULL, "/etc/hostname", &s, err, sizeof(err)), 0);
	assert_string_equal(s.ch.ca_file, "/etc/hostname");
	assert_int_equal(rm_store_spec_resolve("sqlite:/tmp/x", NULL, "/etc/hostname", NULL, &s, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
		rm_store_spec_resolve("clickhouse:http://h:1/", NULL, "/nonexistent/cred", NULL, &s, err, sizeof(err)),
		-ENOENT);
}

/* A port nobody listens on: bound, never listening (connect is refused). */
static void test_refused(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct rm_ch_conf c = { 0 };
	struct rm_ch_result r = { 0 };
	char url[64], err[256] = "";
	struct rm_ch *ch;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	snprintf(url, sizeof(url), "clickhouse:http://127.0.0.1:%u/", ntohs(a.sin_port));
	assert_int_equal(rm_ch_parse_url(url, &c, err, sizeof(err)), 0);
	ch = rm_ch_open(&c, err, sizeof(err));
	assert_non_null(ch);
	assert_int_equal(rm_ch_query(ch, "SELECT 1", NULL, 0, NULL, &r, err, sizeof(err)), -ECONNREFUSED);
	assert_non_null(strstr(err, "127.0.0.1"));
	assert_int_equal(r.status, 0);
	rm_ch_result_free(&r);
	rm_ch_close(ch);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url),
		cmocka_unit_test(test_credentials),
		cmocka_unit_test(test_ddl),
		cmocka_unit_test(test_statements),
		cmocka_unit_test(test_quote),
		cmocka_unit_test(test_quote_space),
		cmocka_unit_test(test_store_spec),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_url_default_port),
		cmocka_unit_test(test_credentials_mode),
		cmocka_unit_test(test_credentials_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
