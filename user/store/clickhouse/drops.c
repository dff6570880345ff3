// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * drops.c - the ClickHouse store's drops: counts of what could not be kept (the
 * buffer full) and their rate-limited log lines.
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

int rm_chs_count_drop(struct rm_chstore *chs, int64_t session_id, const char *kind, const char *detail, uint64_t now)
{
	return rm_drop_rows_count(chs->drops, session_id, kind, detail, now);
}

static gint by_session(gconstpointer a, gconstpointer b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The line for the "store" drops since the last one: their count, per
 * session (8 named at most), and the last one's detail. Every drop is in
 * exactly one such line.
 */
void rm_chs_log_drops(struct rm_chstore *chs)
{
	GList *ids, *l;
	GString *per;
	unsigned named = 0;

	if (!chs->drops_unlogged)
		return;
	per = g_string_new(NULL);
	ids = g_list_sort(g_hash_table_get_keys(chs->drops_unlogged_by_session), by_session);
	for (l = ids; l; l = l->next, named++) {
		const uint64_t *n = g_hash_table_lookup(chs->drops_unlogged_by_session, l->data);

		if (named == 8) {
			g_string_append_printf(per, ", %u more sessions", g_list_length(l));
			break;
		}
		if (*(const int64_t *)l->data)
			g_string_append_printf(per, "%ssession %" PRId64 ": %" PRIu64, named ? ", " : "",
					       *(const int64_t *)l->data, *n);
		else
			g_string_append_printf(per, "%srefused connections: %" PRIu64, named ? ", " : "", *n);
	}
	g_list_free(ids);
	/* The line may come up to RM_CHSTORE_DROP_LOG_MS after its drops: it says when the last one was. */
	rm_log(RM_LOG_WARNING,
	       "ClickHouse store: %" PRIu64 " store drop%s since the last line (%s); last, %.1f s ago: %s (collector "
	       "resource drops of kind store; the buffer holds %" PRIu64 " octets: store_buffer_bytes)",
	       chs->drops_unlogged, chs->drops_unlogged == 1 ? "" : "s", per->str,
	       (double)(rm_clock_mono_ms() - chs->drops_last_ms) / 1000.0, chs->drops_last, chs->bound);
	g_string_free(per, TRUE);
	g_hash_table_remove_all(chs->drops_unlogged_by_session);
	chs->drops_unlogged = 0;
	chs->drops_logged_ms = rm_clock_mono_ms();
}

/* Something the buffer could not take: a "store" drop, in a log line at most every RM_CHSTORE_DROP_LOG_MS. */
void rm_chs_store_drop(struct rm_chstore *chs, int64_t session_id, const char *detail)
{
	uint64_t *n = g_hash_table_lookup(chs->drops_unlogged_by_session, &session_id);

	rm_chs_count_drop(chs, session_id, "store", detail, rm_clock_wall_us() / 1000);
	chs->store_drops++;
	chs->drops_unlogged++;
	if (!n) {
		int64_t *k = g_new(int64_t, 1);

		*k = session_id;
		n = g_new0(uint64_t, 1);
		g_hash_table_insert(chs->drops_unlogged_by_session, k, n);
	}
	(*n)++;
	snprintf(chs->drops_last, sizeof(chs->drops_last), "%s", detail);
	chs->drops_last_ms = rm_clock_mono_ms();
	if (!chs->drops_logged_ms || rm_clock_mono_ms() - chs->drops_logged_ms >= RM_CHSTORE_DROP_LOG_MS)
		rm_chs_log_drops(chs);
}
