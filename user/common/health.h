/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * health.h - the sequence health of one epoch (or of a sum of epochs), beside
 * its outcome and never in place of it: clean, or which kinds of positions
 * and requests its counters hold, in [SEQOBS]'s words. Used by `report`
 * (text, --anomalies, --summary, HTML) and `replay`'s text.
 */
#ifndef ROCEMETER_HEALTH_H
#define ROCEMETER_HEALTH_H

#include <stddef.h>
#include <stdint.h>

/*
 * The kinds, in the order they are printed: X(NAME, key, words, meaning).
 * key is the JSON and CSV name, words the text's. A kind counts positions
 * (never seen, pending, seen late) or requests (repeated, unclassified late);
 * [SEQOBS] "Collector Processing": an expired position is not a lost packet,
 * a repeated PSN not a retransmission, a filled position not a reordering.
 */
#define RM_HEALTH_KINDS(X)                                                                                           \
	X(NEVER_SEEN, "never_seen", "never seen",                                                                    \
	  "positions skipped and never seen: expired from the window or abandoned at closure")                       \
	X(PENDING, "pending", "pending", "positions skipped and not seen yet (the latest report's pendingPsnCount)") \
	X(SEEN_LATE, "seen_late", "seen late", "positions skipped, then seen while retained (filled)")               \
	X(REPEATED, "repeated", "repeated", "requests whose PSN was already seen (repeated PSNs)")                   \
	X(UNCLASSIFIED_LATE, "unclassified_late", "unclassified late",                                               \
	  "requests before the retained window (unclassified late): their earlier status is not known")

enum rm_health_kind {
#define RM_HEALTH_ENUM_(name, key, words, meaning) RM_HEALTH_##name,
	RM_HEALTH_KINDS(RM_HEALTH_ENUM_)
#undef RM_HEALTH_ENUM_
		RM_HEALTH__N
};

/* The bit of a kind in a health value; 0 is clean. */
#define RM_HEALTH_BIT(kind) (1u << (kind))

/* The counters health is read from: an epoch's latest accepted report, or their sums. */
struct rm_health_counters {
	uint64_t expired, abandoned, pending, filled, repeated, unclassified_late;
};

/* How many positions or requests of kind k c holds (never seen: expired + abandoned, at most 2^64 - 1). */
uint64_t rm_health_count(const struct rm_health_counters *c, enum rm_health_kind k);

/* The kinds c holds, as RM_HEALTH_BIT()s; 0: clean. */
unsigned rm_health_of(const struct rm_health_counters *c);

/* A kind's JSON/CSV key ("never_seen"), text words ("never seen") and meaning; NULL out of range. */
const char *rm_health_key(enum rm_health_kind k);
const char *rm_health_words(enum rm_health_kind k);
const char *rm_health_meaning(enum rm_health_kind k);

/*
 * The health in words into buf (len bytes, always terminated): "clean", or
 * the kinds held, in RM_HEALTH_KINDS order, separated by ", "; with c (not
 * NULL) each followed by its count: "never seen 3, seen late 1". Returns
 * the length the whole text needs, as snprintf.
 */
size_t rm_health_text(unsigned health, const struct rm_health_counters *c, char *buf, size_t len);

#endif /* ROCEMETER_HEALTH_H */
