/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * signals.h - the signals a service manager or an operator sends to the
 * daemons (`attach`, `collect`): INT, TERM, HUP, USR1, USR2. A daemon blocks
 * them first thing, so that one arriving during start-up neither kills it
 * nor interrupts a half-made setup, and acts on what arrived once its
 * handlers exist (docs/service.md "Signals while starting").
 */
#ifndef ROCEMETER_SIGNALS_H
#define ROCEMETER_SIGNALS_H

#include <signal.h>

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

#endif
