/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * safe_text.h - the one rule for names from outside (observation point
 * names: an exporter's Options Template 262 interfaceName, a [capture]
 * observation_point line) and their escaping when text that broke the rule
 * still reaches a printer (an older store): docs/collector.md "Observation
 * point names".
 */
#ifndef ROCEMETER_SAFE_TEXT_H
#define ROCEMETER_SAFE_TEXT_H

#include <stddef.h>
#include <stdio.h>

/*
 * Why the n octets at s are not an acceptable name, NULL when they are: a
 * name is valid UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF) without a control character (C0 U+0000..U+001F, DEL U+007F,
 * C1 U+0080..U+009F) and without a bidirectional override or isolate
 * (U+202A..U+202E, U+2066..U+2069). The reason is a static string:
 * "not valid UTF-8", "a control character", "a bidirectional override".
 */
const char *rm_text_invalid(const char *s, size_t n);

/*
 * s (NUL-terminated; NULL gives "") into out (len >= 1 bytes, always
 * terminated) with every character rm_text_invalid() refuses escaped: an
 * octet of invalid UTF-8 or a C0 control or DEL as \xHH, a C1 control,
 * override or isolate as \uHHHH; a backslash as \\, so that the text is
 * unambiguous. A text too long for out is cut before an escape or a
 * UTF-8 sequence, never inside one. Returns out.
 */
char *rm_text_escape(const char *s, char *out, size_t len);

/* The characters (UTF-8 code points) of s, text rm_text_escape() wrote, for padding table columns. */
size_t rm_text_columns(const char *s);

#endif /* ROCEMETER_SAFE_TEXT_H */
