// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * launch.c - the `rocemeter` command itself: a static program (no dynamic
 * loader, no library constructors) that blocks the daemon signals of
 * common/signals.h for `attach` and `collect` as its first act and then
 * executes the binary with the subcommands (libexec/rocemeter beside it in
 * the build tree, RM_LIBDIR/rocemeter once installed). The signal mask
 * survives execve(2), so a SIGTERM or SIGHUP sent while the dynamic loader
 * maps and relocates the libraries (some 30 ms on a busy host) waits for the
 * daemon's handlers instead of killing it (docs/service.md "Signals while
 * starting"). Every other command runs with the mask it was given.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/signals.h"

#ifndef RM_LIBDIR
#define RM_LIBDIR "/usr/local/lib/rocemeter"
#endif

/* The subcommand binary beside this one (build tree), else under RM_LIBDIR; 0 or -1. */
static int core_path(char *path, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if ((size_t)snprintf(path, len, "%s/libexec/rocemeter", self) < len && !access(path, X_OK))
				return 0;
		}
	}
	if ((size_t)snprintf(path, len, "%s/rocemeter", RM_LIBDIR) >= len)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	sigset_t sigs;

	(void)argc;
	if (argv[0] && argv[1] && rm_signals_daemon_command(argv[1]))
		rm_signals_block(&sigs);
	if (core_path(path, sizeof(path))) {
		fprintf(stderr, "rocemeter: the path of %s/rocemeter is too long\n", RM_LIBDIR);
		return 1;
	}
	execv(path, argv);
	fprintf(stderr, "rocemeter: cannot run %s: %s\n", path, strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
