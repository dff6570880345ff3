// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sender.c - the ClickHouse store's sender thread: inserts the queued batches,
 * retries with backoff while ClickHouse is down, and says which refusals no
 * retry mends (rm_chstore_refusal_hint).
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

/*
 * The tables of a group in the order they are inserted: sessions last, so
 * that a sessions row in ClickHouse (the counts it covers) implies the rest
 * of its batch is there too (the received-Messages journal relies on it).
 */
const int rm_chs_send_order[T__N] = { T_RUNS, T_EPOCHS, T_RAW, T_DROPS, T_CONNS, T_LIMITS, T_POINTS, T_SESSIONS };

/*
 * The rows of table t of every batch of group not sent yet, in one INSERT; 0,
 * or rm_ch_query's negative errno with err.
 */
static int send_table(struct rm_chstore *chs, struct rm_ch *ch, struct batch *group, int t, char *err, size_t errlen)
{
	GByteArray *body = g_byte_array_new();
	char *insert = rm_chs_insert_sql(rm_chs_tables[t]);
	int rc;

	for (struct batch *b = group; b; b = b->next)
		if (!b->sent[t])
			g_byte_array_append(body, b->body[t]->data, b->body[t]->len);
	rc = body->len ? rm_ch_query(ch, insert, body->data, body->len, NULL, NULL, err, errlen) : 0;
	g_byte_array_free(body, TRUE);
	g_free(insert);
	if (!rc)
		for (struct batch *b = group; b; b = b->next)
			b->sent[t] = 1;
	return rc;
}

/*
 * Wait backoff ms with mu held (new batches do not shorten it), until the
 * close's deadline at the latest; a close that begins meanwhile ends the
 * wait: what waits gets its attempts before the deadline.
 */
static void backoff_wait(struct rm_chstore *chs, uint64_t backoff)
{
	uint64_t until = rm_clock_mono_ms() + backoff;
	int stopping = chs->stopping;

	if (stopping && chs->stop_at_ms < until)
		until = chs->stop_at_ms;
	while (rm_clock_mono_ms() < until && chs->stopping == stopping) {
		struct timespec ts = rm_clock_wall_deadline(until - rm_clock_mono_ms());

		pthread_cond_timedwait(&chs->cv, &chs->mu, &ts);
	}
}

/*
 * The wait before the next attempt after one that failed with rc: a server
 * that refused or closed the connection before answering (stopped, starting)
 * is tried again every RM_CHSTORE_RETRY_MIN_MS, so that the rows waiting go
 * and room for new ones is made at most that long after it accepts again
 * (a refused connection costs neither side anything); a server that
 * answered with an error, or did not answer in time, after a wait doubling
 * up to RM_CHSTORE_RETRY_MAX_MS.
 */
static uint64_t next_backoff(uint64_t backoff, int rc)
{
	if (rc == -ECONNREFUSED || rc == -ECONNRESET)
		return RM_CHSTORE_RETRY_MIN_MS;
	return backoff * 2 > RM_CHSTORE_RETRY_MAX_MS ? RM_CHSTORE_RETRY_MAX_MS : backoff * 2;
}

void *rm_chs_sender(void *arg)
{
	struct rm_chstore *chs = arg;
	char err[512];
	struct rm_ch *ch = rm_ch_open(&chs->conf, err, sizeof(err));
	uint64_t backoff = RM_CHSTORE_RETRY_MIN_MS, down_since = 0, last_remind = 0;
	int refused = 0; /* the last failure was a refusal of rm_chstore_refusal_hint */

	if (!ch)
		rm_log(RM_LOG_ERR, "ClickHouse store: %s", err);
	pthread_mutex_lock(&chs->mu);
	for (;;) {
		struct batch *group, **end;
		size_t n = 0;
		int failed = 0;

		while (!chs->head && !chs->acked && !chs->stopping)
			pthread_cond_wait(&chs->cv, &chs->mu);
		if (chs->acked && !chs->stopping) {
			if (!ch)
				ch = rm_ch_open(&chs->conf, err, sizeof(err));
			rm_chs_acked_process(chs, ch);
			continue;
		}
		if (!chs->head || (chs->stopping && rm_clock_mono_ms() >= chs->stop_at_ms))
			break;
		/* Take what is queued, up to RM_CHSTORE_SEND_MAX_BYTES (at least one batch). */
		group = chs->head;
		end = &chs->head;
		while (*end && (end == &chs->head || n + (*end)->bytes <= RM_CHSTORE_SEND_MAX_BYTES)) {
			n += (*end)->bytes;
			end = &(*end)->next;
		}
		chs->head = *end;
		if (!chs->head)
			chs->tail = &chs->head;
		*end = NULL;
		chs->inflight = group;
		pthread_mutex_unlock(&chs->mu);

		for (;;) {
			int rc = 0;

			failed = 0;
			for (int i = 0; i < T__N && !failed; i++) {
				int t = rm_chs_send_order[i];

				if (!ch)
					ch = rm_ch_open(&chs->conf, err, sizeof(err));
				rc = ch ? send_table(chs, ch, group, t, err, sizeof(err)) : -ENOMEM;
				if (rc < 0) {
					failed = 1;
					const char *hint = rm_chstore_refusal_hint(err);

					if (!down_since) {
						rm_log(RM_LOG_ERR,
						       "ClickHouse store unavailable (INSERT INTO %s): %s%s%s; rows "
						       "wait in memory (at most store_buffer_bytes) and are retried",
						       rm_chs_tables[t]->name, err, hint ? ": refused, " : "",
						       hint ? hint : "");
						down_since = last_remind = rm_clock_mono_ms();
					} else if (rm_clock_mono_ms() - last_remind >= RM_CHSTORE_REMIND_MS ||
						   (hint && !refused)) {
						/* a refusal after an outage: at once, it needs the operator */
						rm_log(hint ? RM_LOG_ERR : RM_LOG_WARNING,
						       "ClickHouse store still unavailable after %" PRIu64 " s: %s%s%s",
						       (rm_clock_mono_ms() - down_since) / 1000, err,
						       hint ? ": refused, " : "", hint ? hint : "");
						last_remind = rm_clock_mono_ms();
					}
					refused = hint != NULL;
				}
			}
			pthread_mutex_lock(&chs->mu);
			chs->down = failed;
			if (!failed || (chs->stopping && rm_clock_mono_ms() >= chs->stop_at_ms))
				break;
			backoff_wait(chs, backoff);
			pthread_mutex_unlock(&chs->mu);
			backoff = next_backoff(backoff, rc);
		}
		/* here with mu held */
		if (failed)
			break; /* stopping: what is in flight is counted by close */
		if (down_since) {
			rm_log(RM_LOG_NOTICE, "ClickHouse store available again after %" PRIu64 " s",
			       (rm_clock_mono_ms() - down_since) / 1000);
			down_since = 0;
			refused = 0;
		}
		backoff = RM_CHSTORE_RETRY_MIN_MS;
		chs->inflight = NULL;
		chs->reached = 1;
		while (group) {
			struct batch *next = group->next;

			chs->queued_bytes -= group->bytes;
			if (group->seq > chs->inserted_seq)
				chs->inserted_seq = group->seq;
			if (group->from_spool && chs->spool_left && !--chs->spool_left && unlink(chs->spool_path) == 0)
				rm_log(RM_LOG_NOTICE, "ClickHouse store: the spool %s (%s) sent and removed",
				       chs->spool_path, chs->spool_what);
			rm_chs_batch_free(group);
			group = next;
		}
	}
	pthread_mutex_unlock(&chs->mu);
	rm_ch_close(ch);
	return NULL;
}

const char *rm_chstore_refusal_hint(const char *err)
{
	const char *h = strstr(err, "HTTP "), *c = strstr(err, "Code: ");
	long status = h ? strtol(h + 5, NULL, 10) : 0, code = c ? strtol(c + 6, NULL, 10) : 0;

	if (status == 401 || status == 403 || (code >= 192 && code <= 194) || code == 497 || code == 516)
		return "check store_credentials (--store-credentials: user=NAME and password=SECRET of a ClickHouse "
		       "user with the privileges of docs/fleet.md)";
	if (code == 81 || code == 60)
		return "the database or its tables are missing: run `rocemeter collect --store-init` with this --store";
	if (code == 291)
		return "the user of store_credentials may not use this database (its allow_databases): check the "
		       "store URL's ?database= or the user's allow_databases (docs/fleet.md)";
	if (code == 164)
		return "the user of store_credentials is readonly (such as the report user): give collect the writer "
		       "user of docs/fleet.md";
	return NULL;
}

/* Every unsent table of group, in table order; 0, or the first failure's rm_ch_query result with err. */
int rm_chs_send_group(struct rm_chstore *chs, struct rm_ch *ch, struct batch *group, char *err, size_t errlen)
{
	int rc = 0;

	for (int i = 0; i < T__N && !rc; i++)
		rc = send_table(chs, ch, group, rm_chs_send_order[i], err, errlen);
	return rc;
}
