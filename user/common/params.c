// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* params.c - a subcommand's option table: getopt's arrays, typed values, the help (see params.h). */
#include <errno.h>
#include <string.h>

#include "command.h"
#include "config.h"
#include "log.h"
#include "opts.h"
#include "params.h"

int rm_opts_init(struct rm_opts_parser *p, const struct rm_opt *t, const char *prefix)
{
	size_t s = 0;
	int n = 0;

	memset(p, 0, sizeof(*p));
	p->t = t;
	s = (size_t)snprintf(p->shortopts, sizeof(p->shortopts), "%s", prefix);
	for (int i = 0; t[i].kind != RM_OPT_END; i++) {
		if (t[i].kind == RM_OPT_TEXT)
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
			if (p->t[i].kind != RM_OPT_TEXT && p->t[i].letter == o)
				*e = &p->t[i];
	}
	return o;
}

int rm_opt_apply(const struct rm_opt *e, const char *value, void *target, char *err, size_t errlen)
{
	char *at = (char *)target + e->off, name[80];
	const struct rm_config_key *k;
	uint64_t v;

	switch (e->kind) {
	case RM_OPT_FLAG:
		*(int *)at = 1;
		return 0;
	case RM_OPT_ARG:
		*(const char **)at = value;
		return 0;
	case RM_OPT_STR:
		snprintf(at, e->size, "%s", value);
		return 0;
	case RM_OPT_UINT:
	case RM_OPT_KEY:
		snprintf(name, sizeof(name), "--%s", e->name);
		k = e->kind == RM_OPT_KEY ? rm_config_key(e->section, e->key) : NULL;
		if (e->kind == RM_OPT_KEY && !k) {
			snprintf(err, errlen, "%s: no key %s in [%s]", name, e->key, e->section);
			return -EINVAL;
		}
		if (rm_opt_uint(name, value, k ? k->lo : e->lo, k ? k->hi : e->hi, &v, err, errlen))
			return -EINVAL;
		if (k)
			rm_opt_put_uint((char *)target + k->off, k->size, v);
		else
			rm_opt_put_uint(at, e->size, v);
		return 0;
	default:
		return 1;
	}
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

int rm_opts_parse(const struct rm_cmd_opts *c, int argc, char **argv, void *target)
{
	struct rm_opts_parser p;
	const struct rm_opt *e;
	char err[512];
	int o, rc;

	if (rm_opts_init(&p, c->t, c->prefix ? c->prefix : ""))
		return RM_EXIT_FAIL;
	optind = 1;
	opterr = 1;
	while ((o = rm_opts_next(&p, argc, argv, &e)) != -1) {
		if (!e) {
			if (c->usage_on_error)
				c->usage(stderr);
			return RM_EXIT_USAGE;
		}
		switch (e->kind) {
		case RM_OPT_HELP:
			c->usage(stdout);
			return RM_EXIT_OK;
		case RM_OPT_LOG_LEVEL:
			if (rm_opts_log_level(optarg))
				return RM_EXIT_USAGE;
			break;
		case RM_OPT_CALL:
			rc = c->call(target, e, optarg);
			if (rc)
				return rc;
			break;
		default:
			if (rm_opt_apply(e, optarg, target, err, sizeof(err)) < 0) {
				rm_log_cmd(RM_LOG_ERR, "%s", err);
				return RM_EXIT_USAGE;
			}
		}
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

void rm_opts_help(FILE *f, const struct rm_opt *t, int col, int long_indent)
{
	char left[128], text[2048];
	const char *line, *nl;
	int n;

	for (; t->kind != RM_OPT_END; t++) {
		if (t->kind == RM_OPT_TEXT) {
			fputs(t->help, f);
			continue;
		}
		n = left_part(t, long_indent, left, sizeof(left));
		/* The formats are the tables' own, with %ll conversions of hv only. */
		snprintf(text, sizeof(text), t->help, t->hv[0], t->hv[1], t->hv[2], t->hv[3]);
		if (text[0] == '\n')
			fprintf(f, "%s", left);
		else
			fprintf(f, "%-*s%s", col, left, n >= col ? "  " : "");
		for (line = text;; line = nl + 1) {
			nl = strchr(line, '\n');
			if (line != text)
				fprintf(f, "%*s", col, "");
			fprintf(f, "%.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
			if (!nl)
				break;
		}
	}
}
