/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * command.h - subcommand registry of the rocemeter binary.
 *
 * A module defines a subcommand with
 *     RM_COMMAND(replay, 40, "analyse capture files offline", cmd_replay);
 * (name, position in `rocemeter --help`, one-line summary, handler). The
 * handler gets argv with argv[0] = the subcommand name and returns the
 * process exit status (0 ok, 1 runtime failure, 2 usage error).
 */
#ifndef ROCEMETER_COMMAND_H
#define ROCEMETER_COMMAND_H

struct rm_command {
	const char *name;
	int order;
	const char *summary;
	int (*run)(int argc, char **argv);
};

#define RM_COMMAND(id, ord, sum, fn)                                                       \
	static const struct rm_command rm_command_##id                                     \
		__attribute__((used, section("rm_commands"), aligned(sizeof(void *)))) = { \
			.name = #id, .order = (ord), .summary = (sum), .run = (fn)         \
		}

/* The same for a name that is no C identifier ("check-config"). */
#define RM_COMMAND_NAMED(id, cname, ord, sum, fn)                                          \
	static const struct rm_command rm_command_##id                                     \
		__attribute__((used, section("rm_commands"), aligned(sizeof(void *)))) = { \
			.name = (cname), .order = (ord), .summary = (sum), .run = (fn)     \
		}

/*
 * A second word of a command, in its own module: `rocemeter flowlabel
 * spread ...` runs fn with argv[0] = "spread" when some file has
 *     RM_SUBCOMMAND(fl_spread, "flowlabel", "spread", cmd_spread);
 * main.c looks these up before the parent command, which names them in
 * its --help.
 */
struct rm_subcommand {
	const char *parent, *name;
	int (*run)(int argc, char **argv);
};

#define RM_SUBCOMMAND(id, pname, cname, fn)                     \
	static const struct rm_subcommand rm_subcommand_##id    \
		__attribute__((used, section("rm_subcommands"), \
			       aligned(sizeof(void *)))) = { .parent = (pname), .name = (cname), .run = (fn) }

/* Exit statuses shared by every subcommand. */
#define RM_EXIT_OK    0
#define RM_EXIT_FAIL  1
#define RM_EXIT_USAGE 2
/*
 * A capability is missing (systemd's EXIT_NOPERMISSION, the LSB's "user had
 * insufficient privilege"): the units list it in RestartPreventExitStatus=,
 * since a restart with the same privileges cannot help.
 */
#define RM_EXIT_NOPERM 4

#endif
