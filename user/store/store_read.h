/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * store_read.h - what `rocemeter report` reads from a store, whichever it
 * is: the epochs (with report's filters) and the limits of the last run
 * with the drops they caused. Two implementations: SQLite
 * (store_read_sqlite.c, the collector's database read-only) and ClickHouse
 * (store_read_clickhouse.c, the fleet's tables across all collectors, the
 * latest version of each row). cmd_report.c parses and prints only.
 * For the same data both give the same rows in the same order. What a
 * reader hands report (the results below) is read_result.c's, the leaf
 * both readers call.
 */
#ifndef ROCEMETER_STORE_READ_H
#define ROCEMETER_STORE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "columns.h"
#include "store_spec.h"

/*
 * The columns of an epoch as report reads them: RM_EPOCH_READ_COLUMNS(X)
 * calls X(NAME, column of the epochs table/view, U an unsigned integer | T
 * text) for the columns of columns.h marked read, in its order. Integers
 * are IPFIX unsigned64 values and UNIX milliseconds.
 */
enum rm_epoch_read_col {
#define RM_ER_ENUM(name, column, kind) RM_ER_##name,
	RM_EPOCH_READ_COLUMNS(RM_ER_ENUM)
#undef RM_ER_ENUM
		RM_ER__N
};

/* The columns' names in both stores, and their kinds ('U' integer, 'T' text), by enum rm_epoch_read_col. */
extern const char *const rm_epoch_read_names[RM_ER__N];
extern const char rm_epoch_read_kinds[RM_ER__N + 1];

/* One epoch. A NULL column has null[c] set, u[c] 0 and t[c] NULL. Valid during the callback only. */
struct rm_epoch_read {
	const char *collector_id; /* ClickHouse: the collector that stored it; SQLite: NULL */
	uint64_t u[RM_ER__N];     /* U columns */
	const char *t[RM_ER__N];  /* T columns */
	uint8_t null[RM_ER__N];
	/* The exporter, from the sessions row of the epoch's Transport Session (NULL when not stored):
	 * its address (ADDR:PORT, [ADDR]:PORT), certificate subject and SANs, and the authorised peer
	 * name the certificate matched (columns peer, peer_subject, peer_name). */
	const char *peer, *peer_subject, *peer_name;
	/* Its observation point's name (rm_store_reader_points()), NULL: none known; set by the caller. */
	const char *obs_name;
};

/* report's filters; each unset field is no filter. */
struct rm_read_filter {
	const char *outcome;      /* complete, incomplete, invalid or open */
	int has_since, has_until; /* flow end (else last seen) >= since; flow start (else first seen) <= until */
	uint64_t since, until;    /* UNIX ms */
	const char *src, *dst;    /* connection: both addresses in inet_ntop form ... */
	uint64_t qp;              /* ... rdmaDestinationQP ... */
	int64_t pkey;             /* ... and rdmaPartitionKey, -1: any */
	const char *collector_id; /* ClickHouse: one collector; ignored by SQLite */
};

/* A name with a count or value (run limits, refused connections by outcome, drops by kind). */
struct rm_named_u64 {
	char *name;
	uint64_t value;
};

/* The last run of a collector and what its limits caused (report --limits). */
struct rm_limits_read {
	char *collector_id; /* ClickHouse: whose run; SQLite: NULL */
	uint64_t run_id, started_ms, max_sessions, max_epochs, max_raw_records, inactivity_timeout_ms, pen;
	uint64_t raw_records_stored;
	char *listen, *transport;
	struct rm_named_u64 *limits; /* run_limits beyond the runs table's columns, in the order written */
	size_t n_limits;
	struct rm_named_u64 *refused; /* refused connections summed by outcome, ordered by outcome */
	size_t n_refused;
	struct rm_named_u64 *drops; /* collector resource drops summed by kind, ordered by kind */
	size_t n_drops;
};
void rm_limits_read_free(struct rm_limits_read *l);

/*
 * Append (a copy of name, "" for NULL; value) to the array *v of *n entries,
 * as both readers fill struct rm_limits_read. 0, or -ENOMEM (*v and *n stay
 * valid; an entry whose name could not be copied is not counted).
 */
int rm_named_u64_push(struct rm_named_u64 **v, size_t *n, const char *name, uint64_t value);

struct rm_run_row;
/* The run of l from its runs row as a reader read it back (texts copied). 0, or -ENOMEM. */
int rm_limits_read_run(struct rm_limits_read *l, const struct rm_run_row *run);

struct rm_store_reader;

/*
 * Open the store read-only (SQLite: without the collector's lock;
 * ClickHouse: one HTTP connection). NULL with err: a SQLite path that is a
 * directory or missing (strerror's text), a SQLite file without the
 * collector's tables (err says to run `collect --store-init`).
 */
struct rm_store_reader *rm_store_reader_open(const struct rm_store_spec *spec, char *err, size_t errlen);
void rm_store_reader_close(struct rm_store_reader *r);

/*
 * The collector IDs that stored something, sorted (ClickHouse; SQLite: none,
 * *n = 0). The caller frees each and the array. 0 or negative with err.
 */
int rm_store_reader_collectors(struct rm_store_reader *r, char ***ids, size_t *n, char *err, size_t errlen);

/*
 * Call fn for every epoch that passes f, in the order epochs were first
 * stored (SQLite: row ID; ClickHouse: collector ID, then row ID), each
 * with its latest state. fn returns 0 to go on, non-zero to stop (returned
 * as is). 0, or negative with err when the store cannot be read.
 */
int rm_store_reader_epochs(struct rm_store_reader *r, const struct rm_read_filter *f,
			   int (*fn)(void *arg, const struct rm_epoch_read *e), void *arg, char *err, size_t errlen);

/*
 * The last run of each collector (SQLite: the database's last run; with
 * collector_id set, ClickHouse reads that collector only), one call of fn
 * each, ordered by collector ID. -ENOENT with err "no collector run
 * recorded[ for collector ID]" when none is (nothing to report),
 * other negative values with err when the store cannot be read.
 */
int rm_store_reader_limits(struct rm_store_reader *r, const char *collector_id,
			   int (*fn)(void *arg, const struct rm_limits_read *l), void *arg, char *err, size_t errlen);

/*
 * The observation points' names the collectors stored (the exporters'
 * Options Template 262), one call of fn per (collector, exporter identity,
 * Observation Domain, observationPointId) with its latest name;
 * collector_id NULL for SQLite. The exporter identity is that of the
 * Transport Session that sent the name, as struct rm_epoch_read's
 * peer_name and peer_subject ("" where those are NULL: plain TCP). A store
 * without them (an older SQLite database, a ClickHouse store without the
 * table observation_points) reads none. 0, or negative with err.
 */
typedef void rm_store_point_fn(void *arg, const char *collector_id, const char *peer_name, const char *peer_subject,
			       uint32_t domain, uint64_t id, const char *name);
int rm_store_reader_points(struct rm_store_reader *r, rm_store_point_fn *fn, void *arg, char *err, size_t errlen);

/* The implementations' table (store_read.c dispatches to it: the calls above). */
struct rm_store_reader_ops {
	struct rm_store_reader *(*open)(const struct rm_store_spec *spec, char *err, size_t errlen);
	void (*close)(struct rm_store_reader *r);
	int (*collectors)(struct rm_store_reader *r, char ***ids, size_t *n, char *err, size_t errlen);
	int (*epochs)(struct rm_store_reader *r, const struct rm_read_filter *f,
		      int (*fn)(void *arg, const struct rm_epoch_read *e), void *arg, char *err, size_t errlen);
	int (*limits)(struct rm_store_reader *r, const char *collector_id,
		      int (*fn)(void *arg, const struct rm_limits_read *l), void *arg, char *err, size_t errlen);
	/* Optional (NULL: no names). */
	int (*points)(struct rm_store_reader *r, rm_store_point_fn *fn, void *arg, char *err, size_t errlen);
};
extern const struct rm_store_reader_ops rm_store_reader_sqlite, rm_store_reader_clickhouse;

/* Every reader starts with this header (the implementation's table). */
struct rm_store_reader {
	const struct rm_store_reader_ops *ops;
};

#endif /* ROCEMETER_STORE_READ_H */
