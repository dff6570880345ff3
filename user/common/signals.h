/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * signals.h - the signals a service manager or an operator sends to the
 * daemons (`attach`, `collect`): INT, TERM, HUP, USR1, USR2. A daemon blocks
 * them first thing, so that one arriving during start-up neither kills it
 * nor interrupts a half-made setup, and acts on what arrived once its
 * handlers exist (docs/service.md "Signals while starting"). The handlers
 * are set by rm_signals_handle() (also `connections --live`: INT and TERM).
 * The `rocemeter` launcher (user/launch/) blocks them already, before the
 * dynamic loader runs, for the commands rm_signals_daemon_command() names.
 */
#ifndef ROCEMETER_SIGNALS_H
#define ROCEMETER_SIGNALS_H

#include <signal.h>
#include <string.h>

/* Block the daemon signals in this thread; *set gets them (for sigprocmask(SIG_UNBLOCK) later). */
static inline void rm_signals_block(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGUSR2);
	sigprocmask(SIG_BLOCK, set, NULL);
}

/* 1 when the subcommand `name` is a daemon that blocks the five from its start (attach, collect). */
static inline int rm_signals_daemon_command(const char *name)
{
	return !strcmp(name, "attach") || !strcmp(name, "collect");
}

/* rm_signals_handle(): SIGHUP goes to the handler too (attach: reload). */
#define RM_SIGNALS_HUP 0x1
/* rm_signals_handle(): the daemon signals not handled, and SIGPIPE, are ignored. */
#define RM_SIGNALS_IGNORE_REST 0x2

/*
 * SIGINT and SIGTERM (and with RM_SIGNALS_HUP, SIGHUP) call fn, without
 * SA_RESTART, so that a blocking wait (poll, epoll) returns EINTR; with
 * RM_SIGNALS_IGNORE_REST the others of the five, and SIGPIPE, are ignored.
 */
static inline void rm_signals_handle(void (*fn)(int), unsigned int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (flags & RM_SIGNALS_HUP)
		sigaction(SIGHUP, &sa, NULL);
	if (flags & RM_SIGNALS_IGNORE_REST) {
		if (!(flags & RM_SIGNALS_HUP))
			signal(SIGHUP, SIG_IGN);
		signal(SIGUSR1, SIG_IGN);
		signal(SIGUSR2, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
	}
}

#endif
