// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* main.c - `rocemeter SUBCOMMAND ...`: dispatch to the registered subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#include "common/command.h"
#include "common/log.h"
#include "common/version.h"

extern const struct rm_command __start_rm_commands[] __attribute__((weak));
extern const struct rm_command __stop_rm_commands[] __attribute__((weak));
extern const struct rm_subcommand __start_rm_subcommands[] __attribute__((weak));
extern const struct rm_subcommand __stop_rm_subcommands[] __attribute__((weak));

/* `rocemeter PARENT NAME ...`: the subcommand NAME of PARENT, or NULL. */
static const struct rm_subcommand *subcommand(const char *parent, const char *name)
{
	for (const struct rm_subcommand *s = __start_rm_subcommands; name && s < __stop_rm_subcommands; s++)
		if (!strcmp(s->parent, parent) && !strcmp(s->name, name))
			return s;
	return NULL;
}

static void usage(FILE *f)
{
	const struct rm_command *c, *best;
	int last = INT_MIN;

	fprintf(f, "Usage: rocemeter COMMAND [OPTIONS] ...\n\n"
		   "Meter RoCEv2 packet sequence numbers per RDMA connection with eBPF and\n"
		   "export them as IPFIX over mutually authenticated TLS 1.3.\n\nCommands:\n");
	/* Print in `order`, without assuming the linker kept definition order. */
	for (;;) {
		best = NULL;
		for (c = __start_rm_commands; c < __stop_rm_commands; c++)
			if (c->order > last && (!best || c->order < best->order))
				best = c;
		if (!best)
			break;
		fprintf(f, "  %-13s %s\n", best->name, best->summary);
		last = best->order;
	}
	fprintf(f, "\nRun 'rocemeter help COMMAND' (or 'rocemeter COMMAND --help') for the options of a\n"
		   "command. Documentation: README.md, 'man rocemeter-COMMAND' where installed.\n");
}

int main(int argc, char **argv)
{
	const struct rm_command *c;

	if (argc < 2) {
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return RM_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		/* `rocemeter help CMD [SUB]`: the command's (or its subcommand's) own --help. */
		char *args[] = { argv[2], "--help", NULL };
		const struct rm_subcommand *s = argc > 3 ? subcommand(argv[2], argv[3]) : NULL;

		if (s) {
			args[0] = argv[3];
			return s->run(2, args);
		}

		for (c = __start_rm_commands; c < __stop_rm_commands; c++)
			if (!strcmp(argv[2], c->name)) {
				rm_log_set_command(c->name);
				return c->run(2, args);
			}
		rm_log_cmd(RM_LOG_ERR, "help: unknown command '%s'", argv[2]);
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("rocemeter %s\n", RM_VERSION);
		return RM_EXIT_OK;
	}
	rm_log_route_libbpf();
	for (c = __start_rm_commands; c < __stop_rm_commands; c++) {
		if (!strcmp(argv[1], c->name)) {
			const struct rm_subcommand *s = subcommand(c->name, argc > 2 ? argv[2] : NULL);

			static char both[64];

			rm_log_set_command(c->name);
			if (s) {
				snprintf(both, sizeof(both), "%s %s", s->parent, s->name);
				rm_log_set_command(both);
				return s->run(argc - 2, argv + 2);
			}
			return c->run(argc - 1, argv + 1);
		}
	}
	rm_log_cmd(RM_LOG_ERR, "unknown command '%s'", argv[1]);
	usage(stderr);
	return RM_EXIT_USAGE;
}
