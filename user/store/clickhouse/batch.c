// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * batch.c - batches of rows and the queue between the collector's thread and the
 * sender: the buffer's bound, what changed serialized at a hand-over.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chstore_impl.h"
#include "common/limits.h"
#include "common/log.h"

/* ---------------- batches and the queue ---------------- */

struct batch *rm_chs_batch_new(void)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	for (int t = 0; t < T__N; t++)
		b->body[t] = g_byte_array_new();
	return b;
}

void rm_chs_batch_free(struct batch *b)
{
	if (!b)
		return;
	for (int t = 0; t < T__N; t++)
		g_byte_array_free(b->body[t], TRUE);
	free(b);
}

size_t rm_chs_batch_size(const struct batch *b)
{
	size_t n = 0;

	for (int t = 0; t < T__N; t++)
		n += b->body[t]->len;
	return n;
}

uint64_t rm_chs_queued(struct rm_chstore *chs)
{
	uint64_t q;

	pthread_mutex_lock(&chs->mu);
	q = chs->queued_bytes;
	pthread_mutex_unlock(&chs->mu);
	return q;
}

/* Room for more octets of rows that may be dropped (the bound of chstore.h). */
int rm_chs_room(struct rm_chstore *chs, size_t more)
{
	return rm_chs_batch_size(chs->cur) + more + rm_chs_queued(chs) <= chs->bound;
}

/* ---------------- hand-over ---------------- */

/*
 * Sessions rows, with the counts the received-Messages journal compares
 * with after a crash: not while live epochs wait for room (their records
 * would be counted as stored before they are), and inserted after the
 * batch's other tables (rm_chs_send_order).
 */
static void serialize_sessions(struct rm_chstore *chs)
{
	GHashTableIter it;
	gpointer v;

	if (chs->live->len)
		return;
	g_hash_table_iter_init(&it, chs->sessions);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rm_sess_row *s = v;

		if (!s->dirty)
			continue;
		rm_chs_put_row(chs->cur->body[T_SESSIONS], &rm_stored_sessions, chs->id,
			       rm_chs_version_next(&chs->version), s);
		s->dirty = 0;
		if (s->ended_ms)
			g_hash_table_iter_remove(&it);
	}
}

static void serialize_drops(struct rm_chstore *chs)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, chs->drops);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct rm_drop_row *d = v;

		if (!d->count)
			continue;
		rm_chs_put_row(chs->cur->body[T_DROPS], &rm_stored_drops, chs->id, 0, d);
		g_hash_table_iter_remove(&it);
	}
}

/*
 * Live epochs' latest states, while there is room; the others stay waiting.
 * A retired epoch the store kept (its row was written before, its
 * retirement did not fit) is written and freed, its charge returned.
 */
static void serialize_live(struct rm_chstore *chs)
{
	guint kept = 0;

	for (guint i = 0; i < chs->live->len; i++) {
		struct rm_epoch *e = chs->live->pdata[i];

		if (!e)
			continue;
		if (!rm_chs_room(chs, 512)) {
			chs->live->pdata[kept++] = e;
			e->store_slot = kept;
			continue;
		}
		rm_chstore_epoch_row(chs->cur->body[T_EPOCHS], chs->id, e, rm_chs_version_next(&chs->version));
		e->store_slot = 0;
		e->store_row = 1;
		if (e->sink_keeps) {
			chs->cur->retired++;
			rm_rules_epoch_free(e);
			rm_budget_give(chs->budget, RM_BUDGET_EPOCH_BYTES);
		}
	}
	g_ptr_array_set_size(chs->live, kept);
}

/* Give the batch to the sender and start a new one. -1 on out of memory. */
int rm_chs_handoff(struct rm_chstore *chs)
{
	struct batch *b, *fresh;

	serialize_live(chs);
	serialize_sessions(chs);
	serialize_drops(chs);
	chs->last_handoff_ms = rm_clock_mono_ms();
	b = chs->cur;
	b->bytes = rm_chs_batch_size(b);
	if (!b->bytes)
		return 0;
	fresh = rm_chs_batch_new();
	if (!fresh)
		return -1;
	chs->cur = fresh;
	b->seq = ++chs->handed;
	pthread_mutex_lock(&chs->mu);
	*chs->tail = b;
	chs->tail = &b->next;
	chs->queued_bytes += b->bytes;
	pthread_cond_signal(&chs->cv);
	pthread_mutex_unlock(&chs->mu);
	return 0;
}
