/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * params.h - a subcommand's options as one table (struct rm_opt), from which
 * getopt's arrays, the option block of --help (wrapped at print time), the
 * typed values, the operands and the required ones come; an option may name
 * a configuration key (config.h) whose rule and place it shares. The kinds
 * follow xdp-tools' lib/util/params.h. Used by every subcommand file
 * (cmd_NAME.c).
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
	RM_OPT_STR,       /* char[size] at off = the argument, cut to fit (.fit: refused when too long) */
	RM_OPT_UINT,      /* unsigned integer of size bytes at off, in lo..hi (opts.h) */
	RM_OPT_KEY,       /* the value of [section] key, read by the key's rule (below) into its place */
	RM_OPT_ENUM,      /* one of .names: its index into the unsigned integer of size bytes at off */
	RM_OPT_ADDR,      /* an address of .family (6: struct in6_addr, 4: struct in_addr) at off */
	RM_OPT_LIST,      /* repeatable: one more char[size] of the array at off (RM_OPT_LIST_AT()) */
	RM_OPT_POS,       /* not an option: the next operand, const char * at off (rm_cmd_opts.positional) */
	RM_OPT_HELP,      /* -h, --help: the command prints its help */
	RM_OPT_LOG_LEVEL, /* --log-level LEVEL (log.h) */
};

/*
 * RM_OPT_KEY by the key's kind (config.h): an integer has the key's range
 * ("--NAME: 'V' is not an integer in LO..HI"); a string must fit and not be
 * empty ("--NAME: value empty or too long"); any other kind is read by the
 * key's own rule, its refusal prefixed with "--" ("--listen: 'V' is not
 * ADDR:PORT ..."). The place is the key's in the section's settings, which
 * are at off of the target (0: the target is the section's settings).
 */
struct rm_opt {
	const char *name;         /* long option without "--"; NULL for RM_OPT_TEXT; RM_OPT_POS: none */
	int letter;               /* short option, 0: none */
	const char *arg;          /* the argument's name in the help ("FILE"); NULL: takes none */
	const char *help;         /* printf format, wrapped at print time; '\n' starts a new line */
	unsigned long long hv[4]; /* help's values: every conversion is %ll (%llu, %#llx) */
	enum rm_opt_kind kind;
	int id;                    /* RM_OPT_CALL: the command's code for it */
	size_t off, size;          /* RM_OPT_FLAG .. RM_OPT_POS: where in the command's target */
	uint64_t lo, hi;           /* RM_OPT_UINT: the range; RM_OPT_LIST: hi the most entries */
	const char *section, *key; /* RM_OPT_KEY: the configuration key */
	const char *const *names;  /* RM_OPT_ENUM: the values' names, NULL-terminated */
	int family;                /* RM_OPT_ADDR: 6 or 4 */
	int fit;                   /* RM_OPT_STR: 1: a value too long is refused ("--NAME: value too long") */
	const char *note;          /* why the range or family, added to a refusal: " (NOTE)", "; NOTE" */
	int required;              /* the command refuses to run without it ("--A and --B are required") */
	int early;                 /* also read by rm_opts_early(), before the others (--config) */
	size_t count;              /* RM_OPT_LIST: the offset of its int count (RM_OPT_LIST_AT()) */
	size_t seen, clears;       /* 1 + offset: RM_OPT_SEEN(), RM_OPT_CLEARS(); 0: none */
};

/*
 * One entry: long name, letter (0: none), argument name (NULL: none), kind
 * and help, then what the kind needs (.id, RM_OPT_AT(), .lo/.hi,
 * .section/.key, .names, .family, .hv) and the entry's rules (.required,
 * .note, .early, RM_OPT_SEEN(), RM_OPT_CLEARS()).
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
/* An operand (not an option), named arg in messages ("FILE"), into the const char * field of type. */
#define RM_OPT_OPERAND(arg_, type, field, ...)                                         \
	{                                                                              \
		.kind = RM_OPT_POS, .arg = (arg_), RM_OPT_AT(type, field), __VA_ARGS__ \
	}

/* .off and .size of an entry: field of the command's target struct type. */
#define RM_OPT_AT(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)
/* RM_OPT_LIST: the array field (of char[N]) and the int that counts its entries, of type. */
#define RM_OPT_LIST_AT(type, array, count_)                                                                   \
	.off = offsetof(type, array), .size = sizeof(((type *)0)->array[0]), .count = offsetof(type, count_), \
	.hi = sizeof(((type *)0)->array) / sizeof(((type *)0)->array[0])
/* The int field of type set to 1 when the option is given. */
#define RM_OPT_SEEN(type, field) .seen = 1 + offsetof(type, field)
/* The char[] field of type emptied when the option is given (the last of two options wins). */
#define RM_OPT_CLEARS(type, field) .clears = 1 + offsetof(type, field)

/* Upper bounds of one table (the largest, collect's, has 34 options): options, and entries of any kind. */
#define RM_OPTS_MAX     48
#define RM_OPTS_ENTRIES 64

/* The width of --help: an option's help is wrapped at print time to lines of at most this many columns. */
#define RM_OPTS_HELP_WIDTH 80

/* getopt's arrays of one table, built by rm_opts_init(). */
struct rm_opts_parser {
	const struct rm_opt *t;
	char shortopts[3 * RM_OPTS_MAX + 4];
	struct option longopts[RM_OPTS_MAX + 1];
	int n;                                /* options (entries other than RM_OPT_TEXT and RM_OPT_POS) */
	unsigned char given[RM_OPTS_ENTRIES]; /* rm_opts_parse(): the entries given so far, by index in t */
};

/*
 * Build the short option string (prefix first: "+", ":" or "") and the
 * struct option array from t. getopt returns the letter of an option with
 * one, 256 + its index in t for the others. Returns 0, or -E2BIG when t has
 * more than RM_OPTS_MAX options or RM_OPTS_ENTRIES entries (a programming
 * error).
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
 * Apply e's kind to value into target (RM_OPT_FLAG .. RM_OPT_POS), then
 * its RM_OPT_SEEN() and RM_OPT_CLEARS() fields: 0, or -EINVAL with one line
 * naming the option and the value in err:
 *   "--NAME: 'VALUE' is not an integer in LO..HI" (RM_OPT_UINT, a key's integer),
 *   "--NAME 'VALUE': use A, B or C" (RM_OPT_ENUM),
 *   "--NAME 'VALUE': not an IPv6 address", "--NAME VALUE: an IPv4 address" (RM_OPT_ADDR),
 *   "at most N --NAME" (RM_OPT_LIST), "--NAME: value too long" (RM_OPT_STR with .fit),
 * each followed by the entry's .note. RM_OPT_LIST appends (rm_opts_parse()
 * empties the list at the first one of a command line). Other kinds: 1,
 * nothing done (RM_OPT_LOG_LEVEL: see rm_opts_log_level()).
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
	const char *prefix;     /* getopt's: "+" stops at the first operand; ":" our words for its complaints */
	void (*usage)(FILE *f); /* the whole --help text */
	int usage_on_error;     /* after an unknown option (or a required one missing), usage on stderr too */
	int positional;         /* 1: the operands are the RM_OPT_POS entries, no more; 0: the command's */
	/* RM_OPT_CALL entries: 0, or an exit status (the message logged) */
	int (*call)(void *target, const struct rm_opt *e, const char *value);
};

/*
 * Every option of argv (from optind 1), in order: typed kinds into target
 * (rm_opt_apply(); a list given on the command line replaces the one
 * target held), --log-level, --help (usage on stdout), RM_OPT_CALL through
 * c->call. Then, with c->positional, the operands into the RM_OPT_POS
 * entries ("unexpected argument 'X'" for one more); then the .required
 * entries (one missing: "--A, --B and FILE are required", usage on stderr if
 * usage_on_error). Returns -1 when all were read (optind: the first
 * operand), or the exit status to return: RM_EXIT_OK after --help;
 * RM_EXIT_USAGE after a bad value (logged) or an unknown option or missing
 * argument (getopt's line, or with a prefix ":" "unknown option X" and
 * "option X needs a value"; usage on stderr after an unknown option if
 * usage_on_error); what c->call returned.
 */
int rm_opts_parse(const struct rm_cmd_opts *c, int argc, char **argv, void *target);

/*
 * The entries marked .early only (a configuration file, so that the other
 * options override what it says), getopt silent and nothing refused:
 * their values into target. --help prints the usage on stdout and returns
 * RM_EXIT_OK; -1 otherwise. rm_opts_parse() reads them again in order.
 */
int rm_opts_early(const struct rm_cmd_opts *c, int argc, char **argv, void *target);

/*
 * The options of t for --help, one per entry in table order: "  -l, --long
 * ARG", or for an option without a letter long_indent spaces and "--long
 * ARG" (6 lines it up with the others; detach uses 2), padded to col, then
 * the help wrapped at spaces to lines of at most RM_OPTS_HELP_WIDTH, each further
 * line indented to col. A left part of col characters or more is followed
 * by two spaces; a '\n' in the help starts a new line (first: the help
 * starts on the next line). RM_OPT_TEXT entries print their help as is;
 * RM_OPT_POS entries none.
 */
void rm_opts_help(FILE *f, const struct rm_opt *t, int col, int long_indent);

#endif /* ROCEMETER_PARAMS_H */
