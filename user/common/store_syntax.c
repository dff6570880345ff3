// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * store_syntax.c - store URL and collector ID syntax (store_syntax.h), for
 * the configuration loader and the ClickHouse client alike.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "store_syntax.h"

int rm_store_url_parse(const char *url, char *base, size_t baselen, char *database, size_t dblen, char *err,
		       size_t errlen)
{
	const char *p = url, *host, *rest, *q;
	char b[512], db[128];
	size_t hostlen, n;
	int https, has_port;

	if (!strncmp(p, "clickhouse:", 11))
		p += 11;
	if (!strncmp(p, "http://", 7))
		https = 0, host = p + 7;
	else if (!strncmp(p, "https://", 8))
		https = 1, host = p + 8;
	else
		goto bad;
	rest = host + strcspn(host, "/?");
	hostlen = (size_t)(rest - host);
	if (memchr(host, '@', hostlen)) {
		rm_errf(err, errlen,
			"'%s': no user or password in the URL (they would show in the process list): "
			"use a credentials file",
			url);
		return -EINVAL;
	}
	if (!hostlen)
		goto bad;
	/* HOST[:PORT], HOST a name, an IPv4 address or [IPv6] */
	{
		const char *colon = host[0] == '[' ? memchr(host, ']', hostlen) : host;

		if (!colon)
			goto bad;
		colon = memchr(colon, ':', (size_t)(rest - colon));
		if (colon == host)
			goto bad; /* no host */
		has_port = colon != NULL;
		if (colon) {
			const char *d = colon + 1;

			if (d == rest)
				goto bad;
			for (; d < rest; d++)
				if (!isdigit((unsigned char)*d))
					goto bad;
			if (atoi(colon + 1) < 1 || atoi(colon + 1) > 65535 || rest - colon > 6)
				goto bad;
		}
	}
	/* No port: ClickHouse's HTTP ports, not the scheme's 80 and 443 */
	if (has_port)
		n = (size_t)snprintf(b, sizeof(b), "%s://%.*s/", https ? "https" : "http", (int)hostlen, host);
	else
		n = (size_t)snprintf(b, sizeof(b), "%s://%.*s:%u/", https ? "https" : "http", (int)hostlen, host,
				     https ? RM_CH_HTTPS_PORT : RM_CH_HTTP_PORT);
	if (n >= sizeof(b) || (base && n >= baselen))
		goto bad;
	snprintf(db, sizeof(db), "%s", RM_CH_DEFAULT_DATABASE);
	if (*rest == '/')
		rest++;
	if (*rest && *rest != '?')
		goto bad;
	for (q = *rest ? rest + 1 : rest; *q;) {
		size_t len = strcspn(q, "&");

		if (len > 9 && !strncmp(q, "database=", 9)) {
			size_t dl = len - 9;

			if (dl >= sizeof(db) || (database && dl >= dblen))
				goto bad;
			for (size_t i = 0; i < dl; i++)
				if (!isalnum((unsigned char)q[9 + i]) && q[9 + i] != '_')
					goto bad;
			memcpy(db, q + 9, dl);
			db[dl] = 0;
		} else {
			goto bad;
		}
		q += len;
		if (*q == '&')
			q++;
	}
	if (base)
		snprintf(base, baselen, "%s", b);
	if (database)
		snprintf(database, dblen, "%s", db);
	return 0;
bad:
	rm_errf(err, errlen, "'%s' is not clickhouse:http[s]://HOST[:PORT][/][?database=DB] (DB: letters, digits, '_')",
		url);
	return -EINVAL;
}

int rm_collector_id_check(const char *id, char *err, size_t errlen)
{
	size_t n = strlen(id);

	if (!n || n > RM_COLLECTOR_ID_MAX ||
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789.-_:") != n) {
		rm_errf(err, errlen, "collector_id: '%s' is not 1..%d letters, digits, '.', '-', '_' or ':'", id,
			RM_COLLECTOR_ID_MAX);
		return -EINVAL;
	}
	return 0;
}
