// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* store_rows.c - the sessions and drop rows both stores keep between writes (store_rows.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_rows.h"

static void sess_free(gpointer p)
{
	struct rm_sess_row *s = p;

	free(s->peer);
	free(s->subject);
	free(s->peer_name);
	free(s->transport);
	free(s->reason);
	free(s);
}

GHashTable *rm_sess_rows_new(void)
{
	return g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, sess_free);
}

struct rm_sess_row *rm_sess_rows_get(GHashTable *t, int64_t id, int *was_clean)
{
	struct rm_sess_row *s = g_hash_table_lookup(t, &id);

	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->id = id;
		g_hash_table_insert(t, &s->id, s);
	}
	if (was_clean)
		*was_clean = !s->dirty;
	s->dirty = 1;
	return s;
}

/* Replace *slot with a copy of text (NULL stays NULL). 0 or -1. */
static int set_text(char **slot, const char *text)
{
	char *copy = text ? strdup(text) : NULL;

	if (text && !copy)
		return -1;
	free(*slot);
	*slot = copy;
	return 0;
}

int rm_sess_row_start(struct rm_sess_row *s, int64_t run_id, const char *peer, const char *transport, uint64_t now_ms)
{
	s->run_id = run_id;
	s->started_ms = now_ms;
	return set_text(&s->peer, peer) || set_text(&s->transport, transport) ? -1 : 0;
}

int rm_sess_row_peer(struct rm_sess_row *s, const char *subject, const char *name)
{
	return set_text(&s->subject, subject) || (name && set_text(&s->peer_name, name)) ? -1 : 0;
}

int rm_sess_row_end(struct rm_sess_row *s, const char *reason, uint64_t now_ms, const struct rm_session_counts *c)
{
	s->ended_ms = now_ms ? now_ms : 1;
	s->c = *c;
	if (c->verdicts)
		memcpy(s->verdicts, c->verdicts, sizeof(s->verdicts));
	s->c.verdicts = NULL;
	return set_text(&s->reason, reason);
}

static void drop_free(gpointer p)
{
	struct rm_drop_row *d = p;

	free(d->detail);
	free(d);
}

GHashTable *rm_drop_rows_new(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, drop_free);
}

int rm_drop_rows_count(GHashTable *t, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	char key[96], *copy;
	struct rm_drop_row *d;

	snprintf(key, sizeof(key), "%" PRId64 "/%s", session_id, kind);
	d = g_hash_table_lookup(t, key);
	if (!d) {
		size_t kl = strlen(kind) + 1;

		d = calloc(1, sizeof(*d) + kl);
		if (!d)
			return -1;
		memcpy(d->kind, kind, kl);
		d->session_id = session_id;
		g_hash_table_insert(t, g_strdup(key), d);
	}
	copy = strdup(detail ? detail : "");
	if (!copy)
		return -1;
	if (!d->count)
		d->first_ms = now_ms;
	d->count++;
	d->last_ms = now_ms;
	free(d->detail);
	d->detail = copy;
	return 0;
}
