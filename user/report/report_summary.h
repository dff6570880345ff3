/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_summary.h - `report --summary`: the epochs report reads, summed per
 * connection, observation point and exporter identity (Observation Domain, observationPointId,
 * addresses, rdmaDestinationQP, rdmaPartitionKey, VLAN keys), whichever
 * store and collector they come from; rows sorted by positions never seen.
 * Sums are of each epoch's latest accepted report; counters of different
 * observation points are never combined ([SEQOBS] "Collector Processing").
 * Used by cmd_report.c (text, JSON, CSV) and the HTML report.
 */
#ifndef ROCEMETER_REPORT_SUMMARY_H
#define ROCEMETER_REPORT_SUMMARY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "common/health.h"
#include "common/report_text.h"
#include "report_table.h"
#include "rules/collector_rules.h"
#include "store/store_read.h"

/* The outcomes counted, by enum rm_outcome (rm_outcome_name()). */
#define RM_SUMMARY_OUTCOMES 4

/*
 * An exporter identity: the authorised peer name and certificate subject of
 * the epoch's Transport Session (sessions row; "" where NULL: every plain TCP
 * exporter shares the empty identity), as cmd_report.c binds names to it.
 * number counts the identities met from 1, in the order met.
 */
struct rm_exporter {
	char *peer_name, *peer_subject;
	uint64_t number;
};

/* A table of the exporter identities met (rm_exporter_of()); free with g_hash_table_destroy(). */
void *rm_exporter_index_new(void);

/* e's exporter identity in index, added when new (never NULL: GLib aborts without memory). */
const struct rm_exporter *rm_exporter_of(void *index, const struct rm_epoch_read *e);

/* A short text of x for a table: its peer name, else its subject, else "-" (plain TCP). */
const char *rm_exporter_label(const struct rm_exporter *x);

/* One connection at one observation point of one exporter. Sums saturate at 2^64 - 1. */
struct rm_summary_row {
	uint64_t domain, point, qp, pkey, vlan[2];
	const struct rm_exporter *exporter; /* owned by the summary's exporters */
	char name[64]; /* the name this exporter gave the point (epoch obs_name of its first epoch), "": none */
	int family, has_vlan;
	char src[48], dst[48];                  /* inet_ntop form, as stored */
	uint64_t epochs, not_clean, unmeasured; /* epochs; not clean; without an accepted report */
	uint64_t outcomes[RM_SUMMARY_OUTCOMES];
	uint64_t requests, skipped, filled, expired, abandoned, pending, repeated, unclassified_late;
	uint64_t first_start_ms, last_end_ms; /* of the measured epochs; 0 without one */
	/* epochs whose final report gave each closure reason (report_text.h; an epoch with two counts in both) */
	uint64_t closures[RM_CLOSURE__N];
	uint64_t closed; /* epochs closed with any closure reason, each once */
};

struct rm_summary {
	void *index;     /* struct rm_conn_key -> row number + 1 (rm_conn_index_new) */
	void *exporters; /* the exporter identities met (rm_exporter_index_new) */
	struct rm_summary_row *rows;
	size_t n, cap;
};

/*
 * A connection's key as octets, built without printf (once per epoch, by
 * the summary and the HTML report): Observation Domain (or 0),
 * observationPointId, rdmaDestinationQP, rdmaPartitionKey, the VLAN keys,
 * the exporter identity's number (struct rm_exporter: epochs of the same
 * point and connection from two exporters are two connections),
 * then both address texts with their NULs; rm_conn_key_len() octets of it
 * count (hashed and compared by the GHashTable of rm_conn_index_new(),
 * whose keys are g_memdup2 copies of that many octets, freed with it).
 */
struct rm_conn_key {
	size_t len;    /* of addrs used */
	uint64_t n[8]; /* domain, point, QP, P_Key, VLAN namespace, outer and inner VLAN, exporter */
	char addrs[2 * 48];
};
void rm_conn_key_of(const struct rm_epoch_read *e, int with_domain, uint64_t exporter, struct rm_conn_key *k);
size_t rm_conn_key_len(const struct rm_conn_key *k);
void *rm_conn_index_new(void);

/* An empty summary. 0, or -ENOMEM. */
int rm_summary_init(struct rm_summary *s);
void rm_summary_free(struct rm_summary *s);

/* Add one epoch to its row (a new row for a new key). 0, or -ENOMEM. */
int rm_summary_add(struct rm_summary *s, const struct rm_epoch_read *e);

/*
 * Order the rows: most positions never seen first, then most epochs closed
 * with a closure reason (their observation was cut: what the cut hid is
 * not counted), then the other kinds of RM_HEALTH_KINDS in order, then most
 * requests, then by key (domain, point, source, destination, QP, P_Key,
 * VLAN keys) so that equal data always gives the same order.
 */
void rm_summary_sort(struct rm_summary *s);

/* The epochs of a row closed with any closure reason (each epoch once). */
uint64_t rm_summary_closed(const struct rm_summary_row *r);

/* The health counters of a row (for rm_health_of(), rm_health_count()). */
struct rm_health_counters rm_summary_counters(const struct rm_summary_row *r);

/* A row as a JSON object (docs/json.md "report summary"). New reference. */
json_t *rm_summary_json(const struct rm_summary_row *r);

/* Which columns rm_summary_text() adds to those every row has. */
struct rm_summary_view {
	int verbose;       /* SKIPPED, EXPIRED and ABANDONED beside NEVER SEEN */
	int with_exporter; /* an EXPORTER column first (rm_exporter_label()) */
	unsigned closures; /* a column per closure reason c with bit 1u << c (rm_summary_closures()) */
};

/*
 * A row into the text table t (report_table.h: sized to its cells, the
 * header before the first row): EXPORTER when v asks, OP (the point and the
 * name its exporter gave it), CONNECTION, EPOCHS, REQUESTS, NEVER SEEN (and
 * with verbose SKIPPED, EXPIRED, ABANDONED), PENDING, SEEN LATE, REPEATED,
 * UNCL LATE, the closure reasons v asks for (epochs closed with each:
 * rm_closure_head()), NOT COMPLETE. The report shows EXPORTER when the
 * summary met more than one exporter, a closure reason's column when a row
 * shown has it.
 */
void rm_summary_text(struct rm_table *t, const struct rm_summary_row *r, const struct rm_summary_view *v);

/* The closure reasons rows 0..n-1 of s hold (epochs closed with them), as bits 1u << enum rm_closure. */
unsigned rm_summary_closures(const struct rm_summary *s, size_t n);

/* The number of exporter identities the summary met. */
size_t rm_summary_exporters(const struct rm_summary *s);

#endif /* ROCEMETER_REPORT_SUMMARY_H */
