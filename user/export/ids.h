/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ids.h - exporter-side allocation of rdmaSequenceEpochId and
 * rdmaSequenceReportId for one Transport Session and Observation Domain
 * ([SEQOBS] "Identity and Epoch Lifecycle" and "Export Profile and
 * Template"; docs/architecture.md "IDs belong to the exporter").
 *
 * The datapath knows an epoch only as (context key, local generation). The
 * first time a report of such an epoch is serialized, it gets the next epoch
 * ID (last + 1: nonzero, increasing across all contexts, never reused in the
 * session); its report IDs count 1, 2, ... per serialized snapshot. A
 * retransmission of an identical snapshot must reuse the IDs it was given:
 * call rm_ids_assign() once per snapshot, not per send.
 */
#ifndef ROCEMETER_USER_IDS_H
#define ROCEMETER_USER_IDS_H

#include <stdint.h>

#include "rocemeter/meter.h"

struct rm_ids;

/* A new, empty allocator (first epoch ID will be 1). NULL on allocation failure. */
struct rm_ids *rm_ids_new(void);
void rm_ids_free(struct rm_ids *ids);

/* New Transport Session: forget every epoch, epoch IDs start again at 1. */
void rm_ids_reset(struct rm_ids *ids);

/*
 * IDs for one serialized report of local epoch (key, epoch_gen). The key's
 * padding is ignored. final = 1: the report is the epoch's final snapshot;
 * the epoch is forgotten after assigning (a later report of the same
 * (key, epoch_gen) would be a new epoch). Returns 0, or -1 if the epoch ID
 * or the report ID would exceed the limit (UINT64_MAX; the caller then
 * closes the epoch or the session); nothing changes on -1.
 */
int rm_ids_assign(struct rm_ids *ids, const struct rm_ctx_key *key, uint32_t epoch_gen, int final, uint64_t *epoch_id,
		  uint64_t *report_id);

/*
 * Undo the rm_ids_assign() of a report that was not serialized after all
 * (the exporter refused it: queue full, no session): its IDs were never on
 * the wire, so they are not used ([SEQOBS] allocates IDs at serialization).
 * A first report forgets its epoch, so the next report allocates a new
 * epoch ID; a later one gives its report ID back. A final report changes
 * nothing (its epoch is over). Only the latest assignment can be undone.
 */
void rm_ids_unassign(struct rm_ids *ids, const struct rm_ctx_key *key, uint32_t epoch_gen, int final, uint64_t epoch_id,
		     uint64_t report_id);

/*
 * Forget every epoch but keep the last epoch ID (IDs are never reused in the
 * session). For the moment every epoch has just been closed: what is still
 * remembered is an epoch whose final report was lost (ring buffer full), and
 * keeping it could give its IDs to a later epoch of the same context and
 * generation (contexts restart their generations after an eviction).
 */
void rm_ids_forget(struct rm_ids *ids);

/* Epochs currently remembered (open epochs with at least one report). */
unsigned int rm_ids_count(const struct rm_ids *ids);

/* Lower the largest ID handed out (default UINT64_MAX); for tests of the exhaustion path. */
void rm_ids_set_limit(struct rm_ids *ids, uint64_t max_id);

/* The largest ID handed out. */
uint64_t rm_ids_limit(const struct rm_ids *ids);

#endif /* ROCEMETER_USER_IDS_H */
