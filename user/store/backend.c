// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * backend.c - the store interface (backend.h): the SQLite store's ops (the
 * functions of store.c, unchanged behind adapters) and the choice of store
 * by its spec (the ClickHouse store's ops are in chstore.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "sqlite/store.h"
#include "store/clickhouse/chstore.h"
#include "store_spec.h"

/* ---------------- SQLite: store.c ---------------- */

static void sq_close(void *store)
{
	rm_store_close(store);
}
static const char *sq_error(void *store)
{
	return rm_store_error(store);
}
static int sq_begin(void *store)
{
	return rm_store_begin(store);
}
static int sq_commit(void *store)
{
	return rm_store_commit(store);
}
static int sq_flush(void *store)
{
	return rm_store_flush(store);
}
static int sq_unavailable(const void *store)
{
	return rm_store_unavailable(store);
}
static uint64_t sq_drops(const void *store)
{
	return rm_store_database_drops(store);
}
static int64_t sq_run_start(void *store, const char *listen, const char *transport, const struct rm_rules_limits *lim,
			    uint32_t max_raw_records, uint32_t pen, uint64_t now_ms)
{
	return rm_store_run_start(store, listen, transport, lim, max_raw_records, pen, now_ms);
}
static int sq_run_stop(void *store, int64_t run_id, uint64_t now_ms)
{
	return rm_store_run_stop(store, run_id, now_ms);
}
static int64_t sq_session_start(void *store, int64_t run_id, const char *peer, const char *transport, uint64_t now_ms)
{
	return rm_store_session_start(store, run_id, peer, transport, now_ms);
}
static int sq_session_peer(void *store, int64_t session_id, const char *subject, const char *name)
{
	return rm_store_session_peer(store, session_id, subject, name);
}
static int sq_session_end(void *store, int64_t session_id, const char *reason, uint64_t now_ms,
			  const struct rm_session_counts *c)
{
	return rm_store_session_end(store, session_id, reason, now_ms, c);
}
static int sq_epoch(void *store, struct rm_epoch *e)
{
	return rm_store_epoch(store, e);
}
static int sq_raw(void *store, int64_t session_id, uint32_t domain, uint16_t tid, const struct rm_report *r,
		  const char *verdict, const char *reason, const uint8_t *raw, size_t len, const uint8_t *tmpl,
		  size_t tmpl_len, uint64_t now_ms)
{
	return rm_store_raw(store, session_id, domain, tid, r, verdict, reason, raw, len, tmpl, tmpl_len, now_ms);
}
static int sq_drop(void *store, int64_t session_id, const char *kind, const char *detail, uint64_t now_ms)
{
	return rm_store_drop(store, session_id, kind, detail, now_ms);
}
static int sq_connections(void *store, uint64_t minute_ms, const char *source, const char *outcome, uint64_t count,
			  uint64_t first_ms, uint64_t last_ms, const char *detail)
{
	return rm_store_connections(store, minute_ms, source, outcome, count, first_ms, last_ms, detail);
}
static int sq_run_limit(void *store, int64_t run_id, const char *name, uint64_t value)
{
	return rm_store_run_limit(store, run_id, name, value);
}

static int sq_observation_point(void *store, const struct rm_store_point *p, uint64_t now_ms)
{
	return rm_store_observation_point(store, p, now_ms);
}
static uint64_t sq_raw_bytes(void *store)
{
	return rm_store_raw_bytes(store);
}
static void sq_set_budget(void *store, struct rm_budget *b)
{
	rm_store_set_budget(store, b);
}
static int sq_make_room(void *store)
{
	return rm_store_make_room(store);
}

static int sq_session_counts(void *store, int64_t session_id, const struct rm_session_counts *c)
{
	return rm_store_session_counts(store, session_id, c);
}
static uint64_t sq_transactions(const void *store)
{
	return rm_store_transactions(store);
}
static int sq_session_lost(void *store, const struct rm_store_lost_session *l, uint64_t now_ms, uint64_t *lost)
{
	return rm_store_session_lost(store, l, now_ms, lost);
}
static int sq_session_acked(void *store, const struct rm_store_acked *a, uint64_t now_ms,
			    struct rm_store_acked_result *res)
{
	return rm_store_session_acked(store, a, now_ms, res);
}

const struct rm_backend_ops rm_backend_sqlite = {
	.name = "sqlite",
	.drop_kind = "database",
	.close = sq_close,
	.error = sq_error,
	.begin = sq_begin,
	.commit = sq_commit,
	.flush = sq_flush,
	.unavailable = sq_unavailable,
	.drops = sq_drops,
	.run_start = sq_run_start,
	.run_stop = sq_run_stop,
	.session_start = sq_session_start,
	.session_peer = sq_session_peer,
	.session_end = sq_session_end,
	.epoch = sq_epoch,
	.raw = sq_raw,
	.drop = sq_drop,
	.connections = sq_connections,
	.run_limit = sq_run_limit,
	.observation_point = sq_observation_point,
	.raw_bytes = sq_raw_bytes,
	.set_budget = sq_set_budget,
	.make_room = sq_make_room,
	.session_counts = sq_session_counts,
	.transactions = sq_transactions,
	.session_lost = sq_session_lost,
	.session_acked = sq_session_acked,
};

/* ---------------- the choice ---------------- */

struct rm_backend *rm_backend_open(const struct rm_store_spec *spec, const char *collector_id, uint64_t buffer_bytes,
				   const char *spool_dir, char *err, size_t errlen)
{
	struct rm_backend *b = calloc(1, sizeof(*b));
	char e[400] = "";

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (spec->kind == RM_STORE_SQLITE) {
		b->ops = &rm_backend_sqlite;
		b->store = rm_store_open(spec->path, 0, e, sizeof(e));
	} else {
		b->ops = &rm_backend_clickhouse;
		b->store = rm_chstore_open(&spec->ch, collector_id, buffer_bytes, spool_dir, e, sizeof(e));
	}
	if (!b->store) {
		snprintf(err, errlen, "%s: %s", spec->kind == RM_STORE_SQLITE ? "database" : "ClickHouse store", e);
		free(b);
		return NULL;
	}
	return b;
}

void rm_backend_close(struct rm_backend *b)
{
	if (!b)
		return;
	b->ops->close(b->store);
	free(b);
}
