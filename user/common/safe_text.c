// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * safe_text.c - names from outside: one rule (valid UTF-8, no control,
 * override or isolate characters) and one escaping for text that breaks
 * it (see safe_text.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "safe_text.h"

/*
 * The code point of the UTF-8 sequence at s (at most n octets) into *cp and
 * its length, or 0 when the octets there are not valid UTF-8 (RFC 3629).
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static int is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f);
}

static int is_bidi(uint32_t c)
{
	return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

const char *rm_text_invalid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;
	uint32_t c;

	while (i < n) {
		if (!(k = utf8_next(p + i, n - i, &c)))
			return "not valid UTF-8";
		if (is_control(c))
			return "a control character";
		if (is_bidi(c))
			return "a bidirectional override";
		i += k;
	}
	return NULL;
}

char *rm_text_escape(const char *s, char *out, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p), i = 0, o = 0, k;
	uint32_t c;

	while (i < n) {
		char esc[12];
		const char *src = esc;
		size_t w;

		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') { /* printable ASCII: the common case */
			if (o + 1 >= len)
				break;
			out[o++] = (char)p[i++];
			continue;
		}
		k = utf8_next(p + i, n - i, &c);
		if (!k || c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02X", p[i]);
			k = 1;
		} else if (is_control(c) || is_bidi(c)) {
			snprintf(esc, sizeof(esc), "\\u%04X", (unsigned)c);
		} else if (c == '\\') {
			snprintf(esc, sizeof(esc), "\\\\");
		} else {
			src = (const char *)p + i;
		}
		w = src == esc ? strlen(esc) : k;
		if (o + w >= len)
			break;
		memcpy(out + o, src, w);
		o += w;
		i += k;
	}
	out[o] = '\0';
	return out;
}

size_t rm_text_columns(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}
