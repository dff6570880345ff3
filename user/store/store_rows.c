// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* store_rows.c - the sessions and drop rows both stores keep between writes (store_rows.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_rows.h"

void rm_sess_row_clear(struct rm_sess_row *s)
{
	free(s->peer);
	free(s->subject);
	free(s->peer_name);
	free(s->transport);
	free(s->reason);
}

static void sess_free(gpointer p)
{
	rm_sess_row_clear(p);
	free(p);
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

int rm_sess_row_lost(struct rm_sess_row *s, const struct rm_store_lost_session *l, uint64_t lost, uint64_t now_ms)
{
	struct rm_session_counts c = {
		.messages = l->messages, .records = l->records, .octets = l->octets, .rejected = l->rejected
	};

	*s = (struct rm_sess_row){ .id = l->id };
	if (rm_sess_row_start(s, l->run_id, l->peer, l->transport, l->started_ms) ||
	    (l->subject && *l->subject && rm_sess_row_peer(s, l->subject, NULL)) ||
	    rm_sess_row_end(s, "collector restarted: the run that held this session ended before writing it", now_ms,
			    &c))
		return -1;
	s->verdicts[RM_V_RESOURCE_DROP] = lost;
	return 0;
}

struct rm_run_row rm_run_row_of(const char *listen, const char *transport, const struct rm_rules_limits *lim,
				uint32_t max_raw_records, uint32_t pen, uint64_t now_ms)
{
	return (struct rm_run_row){ .started_ms = now_ms,
				    .listen = listen,
				    .transport = transport,
				    .max_sessions = lim->max_sessions,
				    .max_epochs = lim->max_epochs,
				    .max_raw_records = max_raw_records,
				    .inactivity_timeout_ms = lim->inactivity_timeout_ms,
				    .pen = pen };
}

struct rm_raw_row rm_raw_row_of(int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
				const char *verdict, const char *reason, const uint8_t *raw, size_t len,
				const uint8_t *tmpl, size_t tmpl_len, uint64_t now_ms)
{
	return (struct rm_raw_row){ .session_id = session_id,
				    .received_ms = now_ms,
				    .domain = domain,
				    .template_id = tid,
				    .has_report = r != NULL,
				    .epoch_id = r ? r->epoch_id : 0,
				    .report_id = r ? r->report_id : 0,
				    .flags = r ? r->flags : 0,
				    .verdict = verdict,
				    .reason = reason,
				    .record = { raw, len },
				    .template = { tmpl, tmpl ? tmpl_len : 0 } };
}

struct rm_drop_row rm_drop_row_of(int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return (struct rm_drop_row){ .session_id = session_id,
				     .count = 1,
				     .first_ms = now_ms,
				     .last_ms = now_ms,
				     .detail = (char *)detail,
				     .kind = (char *)kind };
}

static void drop_free(gpointer p)
{
	struct rm_drop_row *d = p;

	free(d->detail);
	free(d->kind);
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
		d = calloc(1, sizeof(*d));
		if (!d || !(d->kind = strdup(kind))) {
			free(d);
			return -1;
		}
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

/* Dotted IPv4 without printf (it is on the path of every epoch). */
static void ipv4_text(const uint8_t *a, char *buf)
{
	for (int i = 0; i < 4; i++) {
		unsigned v = a[i];

		if (v >= 100)
			*buf++ = (char)('0' + v / 100);
		if (v >= 10)
			*buf++ = (char)('0' + v / 10 % 10);
		*buf++ = (char)('0' + v % 10);
		*buf++ = i < 3 ? '.' : '\0';
	}
}

void rm_store_addr_text(uint8_t family, const uint8_t *a, char *buf, size_t len)
{
	if (family != 6)
		ipv4_text(a, buf);
	else if (!inet_ntop(AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

const char *rm_store_state_name(enum rm_epoch_state s)
{
	return s == RM_EPOCH_OPEN ? "open" : s == RM_EPOCH_FINAL ? "final" : "invalid";
}

const char *rm_col_string(const struct rm_stored_table *t, const struct rm_column *c, const void *row, char *buf,
			  size_t len)
{
	switch (c->kind) {
	case RM_COL_ADDR:
		rm_store_addr_text(*((const uint8_t *)row + t->family_offset), (const uint8_t *)row + c->offset, buf,
				   len);
		return buf;
	case RM_COL_STATE:
		return rm_store_state_name((enum rm_epoch_state)rm_col_enum(c, row));
	case RM_COL_OUTCOME:
		return rm_outcome_name((enum rm_outcome)rm_col_enum(c, row));
	default:
		return rm_col_text(c, row);
	}
}
