// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * batch.c - the collector's batch (collector_int.h): the complete
 * Messages of a loop turn and the writes they cause are one transaction of
 * the store; a commit is the only place the store may write, so a
 * committed transaction never holds half of a Message. Opened by whoever
 * writes first (sessions, refusals, timers), committed by the loop
 * (collector.c) and at a session's end (session.c).
 */
#include "collector_int.h"

/* Open the batch's transaction if none is open. */
void rm_collector_batch_begin(struct rm_collector *s)
{
	if (!s->in_batch) {
		s->in_batch = 1;
		s->batch_start_ms = rm_clock_mono_ms();
	}
	rm_collector_store_check(s, rm_backend_begin(s->store), "begin");
}

/*
 * End the batch: the only place the store may write, so a committed
 * transaction never holds half of a Message.
 */
void rm_collector_batch_commit(struct rm_collector *s)
{
	rm_collector_store_check(s, rm_backend_commit(s->store), "commit");
	s->batch_messages = 0;
	s->in_batch = 0;
}
