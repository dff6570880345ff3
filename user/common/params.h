/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * params.h - a subcommand's options as one table (struct rm_opt), from which
 * getopt's arrays, the option block of --help and the typed values come; an
 * option may name a configuration key (config.h) whose range and place it
 * shares. Used by every subcommand file (cmd_NAME.c).
 */
#ifndef ROCEMETER_PARAMS_H
#define ROCEMETER_PARAMS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What an option does with its argument; RM_OPT_END (0) ends a table. */
enum rm_opt_kind {
	RM_OPT_END = 0,
	RM_OPT_TEXT,      /* no option: help's text between options (a heading), printed as is */
	RM_OPT_CALL,      /* the command handles it by .id (rm_cmd_opts.call, or after rm_opts_next()) */
	RM_OPT_FLAG,      /* int at off = 1 */
	RM_OPT_ARG,       /* const char * at off = the argument */
	RM_OPT_STR,       /* char[size] at off = the argument, cut to fit */
	RM_OPT_UINT,      /* unsigned integer of size bytes at off, in lo..hi (opts.h) */
	RM_OPT_KEY,       /* as RM_OPT_UINT, with the range, size and place of [section] key */
	RM_OPT_HELP,      /* -h, --help: the command prints its help */
	RM_OPT_LOG_LEVEL, /* --log-level LEVEL (log.h) */
};

struct rm_opt {
	const char *name;         /* long option without "--"; NULL for RM_OPT_TEXT */
	int letter;               /* short option, 0: none */
	const char *arg;          /* the argument's name in the help ("FILE"); NULL: takes none */
	const char *help;         /* printf format; each '\n' starts a line at the help column */
	unsigned long long hv[4]; /* help's values: every conversion is %ll (%llu, %#llx) */
	enum rm_opt_kind kind;
	int id;                    /* RM_OPT_CALL: the command's code for it */
	size_t off, size;          /* RM_OPT_FLAG .. RM_OPT_UINT: where in the command's target */
	uint64_t lo, hi;           /* RM_OPT_UINT */
	const char *section, *key; /* RM_OPT_KEY: the configuration key */
};

/*
 * One entry: long name, letter (0: none), argument name (NULL: none), kind
 * and help, then what the kind needs (.id, RM_OPT_AT(), .lo/.hi,
 * .section/.key, .hv).
 */
#define RM_OPT(name_, letter_, arg_, kind_, help_, ...)                                                            \
	{                                                                                                          \
		.name = (name_), .letter = (letter_), .arg = (arg_), .kind = (kind_), .help = (help_), __VA_ARGS__ \
	}
/* Help text between options (a heading), printed as is. */
#define RM_OPT_HEADING(text)                        \
	{                                           \
		.kind = RM_OPT_TEXT, .help = (text) \
	}

/* .off and .size of an entry: field of the command's target struct type. */
#define RM_OPT_AT(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* Upper bounds of one table (the largest, collect's, has 34 options). */
#define RM_OPTS_MAX 48

/* getopt's arrays of one table, built by rm_opts_init(). */
struct rm_opts_parser {
	const struct rm_opt *t;
	char shortopts[3 * RM_OPTS_MAX + 4];
	struct option longopts[RM_OPTS_MAX + 1];
	int n; /* options (entries other than RM_OPT_TEXT) */
};

/*
 * Build the short option string (prefix first: "+", ":" or "") and the
 * struct option array from t. getopt returns the letter of an option with
 * one, 256 + its index in t for the others. Returns 0, or -E2BIG when t has
 * more than RM_OPTS_MAX options (a programming error).
 */
int rm_opts_init(struct rm_opts_parser *p, const struct rm_opt *t, const char *prefix);

/*
 * getopt_long() over p's arrays. Returns -1 at the end (optind: the first
 * operand), '?' or ':' as getopt does, or the option's getopt code; *e is
 * then its entry. optind, opterr and optarg are getopt's, as the caller
 * sets them.
 */
int rm_opts_next(struct rm_opts_parser *p, int argc, char **argv, const struct rm_opt **e);

/*
 * Apply e's kind to value into target (RM_OPT_FLAG .. RM_OPT_KEY): 0, or
 * -EINVAL with "--NAME: 'VALUE' is not an integer in LO..HI" in err. Other
 * kinds: 1, nothing done (RM_OPT_LOG_LEVEL: see rm_opts_log_level()).
 */
int rm_opt_apply(const struct rm_opt *e, const char *value, void *target, char *err, size_t errlen);

/*
 * --log-level value: sets the log's level, or logs "--log-level: 'X' is not
 * err, warning, notice, info or debug" and returns -EINVAL.
 */
int rm_opts_log_level(const char *value);

/* A command's options: its table and what is done around it (rm_opts_parse()). */
struct rm_cmd_opts {
	const struct rm_opt *t;
	const char *prefix;     /* getopt's: "+" stops at the first operand */
	void (*usage)(FILE *f); /* the whole --help text */
	int usage_on_error;     /* after getopt's complaint, usage on stderr too */
	/* RM_OPT_CALL entries: 0, or an exit status (the message logged) */
	int (*call)(void *target, const struct rm_opt *e, const char *value);
};

/*
 * Every option of argv (from optind 1, getopt printing its complaints), in
 * order: typed kinds into target (rm_opt_apply()), --log-level, --help
 * (usage on stdout), RM_OPT_CALL through c->call. Returns -1 when all were
 * read (optind: the first operand), or the exit status to return:
 * RM_EXIT_OK after --help; RM_EXIT_USAGE after a bad value (logged) or an
 * unknown option or missing argument (getopt's line, then usage on stderr
 * if usage_on_error); what c->call returned.
 */
int rm_opts_parse(const struct rm_cmd_opts *c, int argc, char **argv, void *target);

/*
 * The options of t for --help, one per entry in table order: "  -l, --long
 * ARG", or for an option without a letter long_indent spaces and "--long
 * ARG" (6 lines it up with the others; detach uses 2), padded to col, the
 * help's first line, then each further line indented to col. A left part of col characters or more is followed
 * by two spaces; a help starting with '\n' starts on the next line.
 * RM_OPT_TEXT entries print their help as is.
 */
void rm_opts_help(FILE *f, const struct rm_opt *t, int col, int long_indent);

#endif /* ROCEMETER_PARAMS_H */
