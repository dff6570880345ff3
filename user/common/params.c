// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* params.c - a subcommand's option table: getopt's arrays, typed values, the help (see params.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "command.h"
#include "config.h"
#include "errmsg.h"
#include "log.h"
#include "opts.h"
#include "params.h"

/* Entries that are options (getopt's, the help's): not headings, not operands. */
static int is_option(const struct rm_opt *e)
{
	return e->kind != RM_OPT_TEXT && e->kind != RM_OPT_POS;
}

int rm_opts_init(struct rm_opts_parser *p, const struct rm_opt *t, const char *prefix)
{
	size_t s = 0;
	int n = 0;

	memset(p, 0, sizeof(*p));
	p->t = t;
	s = (size_t)snprintf(p->shortopts, sizeof(p->shortopts), "%s", prefix);
	for (int i = 0; t[i].kind != RM_OPT_END; i++) {
		if (i >= RM_OPTS_ENTRIES)
			return -E2BIG;
		if (!is_option(&t[i]))
			continue;
		if (n >= RM_OPTS_MAX || s + 3 >= sizeof(p->shortopts))
			return -E2BIG;
		p->longopts[n++] = (struct option){ t[i].name, t[i].arg ? required_argument : no_argument, NULL,
						    t[i].letter ? t[i].letter : 256 + i };
		if (t[i].letter) {
			p->shortopts[s++] = (char)t[i].letter;
			if (t[i].arg)
				p->shortopts[s++] = ':';
		}
	}
	p->shortopts[s] = 0;
	p->n = n;
	return 0;
}

int rm_opts_next(struct rm_opts_parser *p, int argc, char **argv, const struct rm_opt **e)
{
	int o = getopt_long(argc, argv, p->shortopts, p->longopts, NULL);

	*e = NULL;
	if (o >= 256) {
		*e = &p->t[o - 256];
	} else if (o > 0 && o != '?' && o != ':') {
		for (int i = 0; p->t[i].kind != RM_OPT_END; i++)
			if (is_option(&p->t[i]) && p->t[i].letter == o)
				*e = &p->t[i];
	}
	return o;
}

/* " (NOTE)" after a refusal when e has a note. */
static const char *note_open(const struct rm_opt *e)
{
	return e->note ? " (" : "";
}

static const char *note_close(const struct rm_opt *e)
{
	return e->note ? ")" : "";
}

/* RM_OPT_UINT, or the integer of a key (its range and place): see rm_opt_apply(). */
static int apply_uint(const struct rm_opt *e, const struct rm_config_key *k, const char *value, char *at, char *err,
		      size_t errlen)
{
	char name[80], reason[256];
	uint64_t v;

	snprintf(name, sizeof(name), "--%s", e->name);
	if (rm_opt_uint(name, value, k ? k->lo : e->lo, k ? k->hi : e->hi, &v, reason, sizeof(reason))) {
		rm_errf(err, errlen, "%s%s%s%s", reason, note_open(e), e->note ? e->note : "", note_close(e));
		return -EINVAL;
	}
	rm_opt_put_uint(at, k ? k->size : e->size, v);
	return 0;
}

/* RM_OPT_KEY: the key's kind decides (params.h). */
static int apply_key(const struct rm_opt *e, const char *value, void *target, char *err, size_t errlen)
{
	const struct rm_config_key *k = rm_config_key(e->section, e->key);
	char *sec = (char *)target + e->off, reason[256];

	if (!k) {
		rm_errf(err, errlen, "--%s: no key %s in [%s]", e->name, e->key, e->section);
		return -EINVAL;
	}
	switch (k->kind) {
	case RM_KEY_UINT:
		return apply_uint(e, k, value, sec + k->off, err, errlen);
	case RM_KEY_STR:
		if (!*value || strlen(value) >= k->size) {
			rm_errf(err, errlen, "--%s: value empty or too long", e->name);
			return -EINVAL;
		}
		snprintf(sec + k->off, k->size, "%s", value);
		return 0;
	default:
		if (rm_config_key_read(k, sec, value, reason, sizeof(reason)) == 0)
			return 0;
		rm_errf(err, errlen, "--%s", reason);
		return -EINVAL;
	}
}

/* RM_OPT_ENUM: the index of value in e->names. */
static int apply_enum(const struct rm_opt *e, const char *value, char *at, char *err, size_t errlen)
{
	size_t n = 0, len;

	for (n = 0; e->names[n]; n++) {
		if (!strcmp(value, e->names[n])) {
			rm_opt_put_uint(at, e->size, n);
			return 0;
		}
	}
	rm_errf(err, errlen, "--%s '%s': use ", e->name, value);
	for (size_t i = 0; i < n; i++) {
		len = strlen(err);
		rm_errf(err + len, errlen - len, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", e->names[i]);
	}
	return -EINVAL;
}

/* RM_OPT_ADDR: an address of e->family; the other family's is told apart. */
static int apply_addr(const struct rm_opt *e, const char *value, char *at, char *err, size_t errlen)
{
	int af = e->family == 4 ? AF_INET : AF_INET6, other = af == AF_INET ? AF_INET6 : AF_INET;
	unsigned char any[16];

	if (inet_pton(af, value, at) == 1)
		return 0;
	if (inet_pton(other, value, any) == 1)
		rm_errf(err, errlen, "--%s %s: an IPv%d address%s%s", e->name, value, af == AF_INET ? 6 : 4,
			e->note ? "; " : "", e->note ? e->note : "");
	else
		rm_errf(err, errlen, "--%s '%s': not an IPv%d address", e->name, value, e->family);
	return -EINVAL;
}

/* RM_OPT_LIST: one more entry, at most e->hi. */
static int apply_list(const struct rm_opt *e, const char *value, void *target, char *err, size_t errlen)
{
	int *count = (int *)((char *)target + e->count);

	if (*count < 0 || (uint64_t)*count >= e->hi) {
		rm_errf(err, errlen, "at most %llu --%s", (unsigned long long)e->hi, e->name);
		return -EINVAL;
	}
	snprintf((char *)target + e->off + (size_t)*count * e->size, e->size, "%s", value);
	(*count)++;
	return 0;
}

/* The value of e's kind into target: 0, -EINVAL (err), or 1 for the kinds without a value. */
static int apply_value(const struct rm_opt *e, const char *value, void *target, char *err, size_t errlen)
{
	char *at = (char *)target + e->off;

	switch (e->kind) {
	case RM_OPT_FLAG:
		*(int *)at = 1;
		return 0;
	case RM_OPT_ARG:
	case RM_OPT_POS:
		*(const char **)at = value;
		return 0;
	case RM_OPT_STR:
		if (e->fit && strlen(value) >= e->size) {
			rm_errf(err, errlen, "--%s: value too long", e->name);
			return -EINVAL;
		}
		snprintf(at, e->size, "%s", value);
		return 0;
	case RM_OPT_UINT:
		return apply_uint(e, NULL, value, at, err, errlen);
	case RM_OPT_KEY:
		return apply_key(e, value, target, err, errlen);
	case RM_OPT_ENUM:
		return apply_enum(e, value, at, err, errlen);
	case RM_OPT_ADDR:
		return apply_addr(e, value, at, err, errlen);
	case RM_OPT_LIST:
		return apply_list(e, value, target, err, errlen);
	default:
		return 1;
	}
}

int rm_opt_apply(const struct rm_opt *e, const char *value, void *target, char *err, size_t errlen)
{
	int rc = apply_value(e, value, target, err, errlen);

	if (rc)
		return rc;
	if (e->seen)
		*(int *)((char *)target + e->seen - 1) = 1;
	if (e->clears)
		*((char *)target + e->clears - 1) = '\0';
	return 0;
}

int rm_opts_log_level(const char *value)
{
	enum rm_log_level level;

	if (rm_log_level_from_name(value, &level)) {
		rm_log_cmd(RM_LOG_ERR, "--log-level: '%s' is not err, warning, notice, info or debug", value);
		return -EINVAL;
	}
	rm_log_set_level(level);
	return 0;
}

/* getopt's complaint o ('?' or ':'): in our words with a prefix ":"; then the exit status. */
static int complaint(const struct rm_cmd_opts *c, int o, char **argv)
{
	int own = c->prefix && c->prefix[0] == ':';

	if (own && o == ':') {
		rm_log_cmd(RM_LOG_ERR, "option %s needs a value", argv[optind - 1]);
		return RM_EXIT_USAGE;
	}
	if (own)
		rm_log_cmd(RM_LOG_ERR, "unknown option %s", argv[optind - 1]);
	if (c->usage_on_error)
		c->usage(stderr);
	return RM_EXIT_USAGE;
}

/* One option e with its value: -1 to go on, or the exit status to return. */
static int one_option(const struct rm_cmd_opts *c, struct rm_opts_parser *p, const struct rm_opt *e, void *target)
{
	unsigned char *given = &p->given[e - c->t];
	char err[512];
	int rc;

	switch (e->kind) {
	case RM_OPT_HELP:
		c->usage(stdout);
		return RM_EXIT_OK;
	case RM_OPT_LOG_LEVEL:
		return rm_opts_log_level(optarg) ? RM_EXIT_USAGE : -1;
	case RM_OPT_CALL:
		rc = c->call(target, e, optarg);
		*given = 1;
		return rc ? rc : -1;
	case RM_OPT_LIST:
		/* the command line's list replaces the target's (a file's) */
		if (!*given)
			*(int *)((char *)target + e->count) = 0;
		/* fall through */
	default:
		if (rm_opt_apply(e, optarg, target, err, sizeof(err)) < 0) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_USAGE;
		}
		*given = 1;
		return -1;
	}
}

/* With c->positional: argv's operands from optind into the RM_OPT_POS entries. -1, or RM_EXIT_USAGE. */
static int operands(const struct rm_cmd_opts *c, struct rm_opts_parser *p, int argc, char **argv, void *target)
{
	char err[64];

	for (int i = 0; c->t[i].kind != RM_OPT_END && optind < argc; i++) {
		if (c->t[i].kind != RM_OPT_POS)
			continue;
		rm_opt_apply(&c->t[i], argv[optind++], target, err, sizeof(err));
		p->given[i] = 1;
	}
	if (optind < argc) {
		rm_log_cmd(RM_LOG_ERR, "unexpected argument '%s'", argv[optind]);
		return RM_EXIT_USAGE;
	}
	return -1;
}

/* An entry's name in messages: "--name", or an operand's "FILE". */
static int entry_name(const struct rm_opt *e, char *buf, size_t len)
{
	return e->kind == RM_OPT_POS ? snprintf(buf, len, "%s", e->arg) : snprintf(buf, len, "--%s", e->name);
}

/* A .required entry not given: "--A, --B and --C are required" (every one) logged; -1 when none is missing. */
static int missing(const struct rm_cmd_opts *c, const struct rm_opts_parser *p)
{
	char list[512] = "", name[96];
	int n = 0, last = -1, absent = 0;

	for (int i = 0; c->t[i].kind != RM_OPT_END; i++) {
		if (c->t[i].required) {
			last = i;
			absent |= !p->given[i];
		}
	}
	if (!absent)
		return -1;
	for (int i = 0; i <= last; i++) {
		size_t len = strlen(list);

		if (!c->t[i].required)
			continue;
		entry_name(&c->t[i], name, sizeof(name));
		snprintf(list + len, sizeof(list) - len, "%s%s", n == 0 ? "" : i == last ? " and " : ", ", name);
		n++;
	}
	rm_log_cmd(RM_LOG_ERR, "%s %s required", list, n == 1 ? "is" : "are");
	if (c->usage_on_error)
		c->usage(stderr);
	return RM_EXIT_USAGE;
}

int rm_opts_parse(const struct rm_cmd_opts *c, int argc, char **argv, void *target)
{
	struct rm_opts_parser p;
	const struct rm_opt *e;
	int o, rc;

	if (rm_opts_init(&p, c->t, c->prefix ? c->prefix : ""))
		return RM_EXIT_FAIL;
	optind = 1;
	opterr = 1;
	while ((o = rm_opts_next(&p, argc, argv, &e)) != -1) {
		rc = e ? one_option(c, &p, e, target) : complaint(c, o, argv);
		if (rc >= 0)
			return rc;
	}
	if (c->positional && (rc = operands(c, &p, argc, argv, target)) >= 0)
		return rc;
	return missing(c, &p);
}

int rm_opts_early(const struct rm_cmd_opts *c, int argc, char **argv, void *target)
{
	struct rm_opts_parser p;
	const struct rm_opt *e;
	char err[512];

	if (rm_opts_init(&p, c->t, c->prefix ? c->prefix : ""))
		return RM_EXIT_FAIL;
	optind = 1;
	opterr = 0;
	while (rm_opts_next(&p, argc, argv, &e) != -1) {
		if (e && e->kind == RM_OPT_HELP) {
			c->usage(stdout);
			return RM_EXIT_OK;
		}
		if (e && e->early)
			rm_opt_apply(e, optarg, target, err, sizeof(err));
	}
	return -1;
}

/* One entry's left part ("  -l, --listen ADDR:PORT") into buf. */
static int left_part(const struct rm_opt *e, int long_indent, char *buf, size_t len)
{
	if (e->letter)
		return snprintf(buf, len, "  -%c, --%s%s%s", e->letter, e->name, e->arg ? " " : "",
				e->arg ? e->arg : "");
	return snprintf(buf, len, "%*s--%s%s%s", long_indent, "", e->name, e->arg ? " " : "", e->arg ? e->arg : "");
}

/*
 * text from column at on: words wrapped at spaces so that no line is
 * longer than RM_OPTS_HELP_WIDTH, each new line indented to col; a '\n'
 * starts a new line. A word longer than a line stands on a line of its own.
 */
static void print_wrapped(FILE *f, const char *text, int at, int col)
{
	const char *s = text;
	int first = 1;

	while (*s) {
		size_t w = strcspn(s, " \n");

		if (!first && at + 1 + (int)w > RM_OPTS_HELP_WIDTH) {
			fprintf(f, "\n%*s", col, "");
			at = col;
			first = 1;
		}
		if (!first) {
			fputc(' ', f);
			at++;
		}
		fprintf(f, "%.*s", (int)w, s);
		at += (int)w;
		first = 0;
		s += w;
		if (*s == ' ') {
			s += strspn(s, " ");
		} else if (*s == '\n') {
			s++;
			fprintf(f, "\n%*s", col, "");
			at = col;
			first = 1;
		}
	}
	fputc('\n', f);
}

void rm_opts_help(FILE *f, const struct rm_opt *t, int col, int long_indent)
{
	char left[128], text[2048];
	int n;

	for (; t->kind != RM_OPT_END; t++) {
		if (t->kind == RM_OPT_TEXT) {
			fputs(t->help, f);
			continue;
		}
		if (t->kind == RM_OPT_POS)
			continue;
		n = left_part(t, long_indent, left, sizeof(left));
		/* The formats are the tables' own, with %ll conversions of hv only. */
		snprintf(text, sizeof(text), t->help, t->hv[0], t->hv[1], t->hv[2], t->hv[3]);
		if (text[0] == '\n') {
			fprintf(f, "%s\n%*s", left, col, "");
			print_wrapped(f, text + 1, col, col);
		} else {
			fprintf(f, "%-*s%s", col, left, n >= col ? "  " : "");
			print_wrapped(f, text, n >= col ? n + 2 : col, col);
		}
	}
}
