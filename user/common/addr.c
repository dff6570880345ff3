// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* addr.c - addresses an operator types (see addr.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "errmsg.h"
#include "limits.h"
#include "opts.h"

int rm_parse_addr(const char *s, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, s, out) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, out) == 1)
		return 6;
	return -1;
}

int rm_parse_listen(const char *text, char *host, size_t hlen, uint16_t *port, char *err, size_t errlen)
{
	const char *colon;
	uint64_t p;

	if (!text)
		goto bad;
	if (text[0] == '[') {
		const char *end = strchr(text, ']');

		if (!end || end[1] != ':')
			goto bad;
		colon = end + 1;
		if ((size_t)(end - text - 1) >= hlen)
			goto bad;
		snprintf(host, hlen, "%.*s", (int)(end - text - 1), text + 1);
	} else {
		colon = strrchr(text, ':');
		if (!colon || (size_t)(colon - text) >= hlen || memchr(text, ':', (size_t)(colon - text)))
			goto bad; /* an IPv6 address needs brackets */
		snprintf(host, hlen, "%.*s", (int)(colon - text), text);
	}
	if (rm_parse_uint(colon + 1, RM_PORT_MIN, RM_PORT_MAX, &p))
		goto bad;
	*port = (uint16_t)p;
	return 0;
bad:
	rm_errf(err, errlen, "'%s' is not ADDR:PORT, [IPV6]:PORT or :PORT with PORT in %u..%u", text ? text : "",
		RM_PORT_MIN, RM_PORT_MAX);
	return -EINVAL;
}
