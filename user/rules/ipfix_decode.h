/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ipfix_decode.h - the collector's IPFIX (RFC 7011) decoder for one
 * Transport Session ([SEQOBS] "Export Profile and Template", "Collector
 * Processing": Template bindings).
 *
 * Templates are decoded generically from what the session sends: a Data
 * Template is bound to the profile by (PEN, element number) of its Field
 * Specifiers, never by Template ID or offset. Templates are scoped by
 * Observation Domain. A Template is usable only if it carries every field
 * of the profile exactly once, with the full-length encodings of [SEQOBS],
 * one address family, and no variable-length field; otherwise its Data
 * Records are rejected with the Template's reason. A Flow Keys Options
 * Data Record (scope templateId 145, flowKeyIndicator 173) must flag
 * exactly the record key fields (never the report ID) or it makes its
 * Template unusable.
 *
 * A Data Template is used only once a Flow Keys record has advertised its
 * keys ([SEQOBS] "Export Profile and Template": the exporter MUST advertise
 * them); until then its Data Records are rejected ("Flow Keys were never
 * advertised"), kept raw by the collector, never turned into reports. The
 * same Template sent again keeps its keys; a changed one needs them anew.
 * Template and Options Template withdrawals ([RFC7011] 8.1, Template IDs 2
 * and 3 for all of a domain) remove the Template: its later Data Sets are
 * those of an unknown Template.
 *
 * Message headers ([RFC7011] 3.1): per Observation Domain, the Sequence
 * Number must equal the previous one plus the Data Records (Options Data
 * Records included) of the previous Message, modulo 2^32, and the Export
 * Time must not go back. Anomalies are counted (rm_ipfix_counts) and noted
 * through sink->note, the first RM_IPFIX_ANOMALY_NOTES of a session and
 * then one line saying the rest are only counted; they never end the
 * session or drop records. After a Message whose records cannot all be
 * counted (unknown Template, no fixed length, malformed sets) the next
 * Message sets the expectation afresh.
 *
 * Errors: framing errors (version, message length) are fatal for the
 * session, since a TCP stream cannot be resynchronised; a set that runs
 * past its message makes the whole message rejected (no record of it is
 * delivered); set- and record-level problems are reported through
 * sink->reject and decoding goes on.
 */
#ifndef ROCEMETER_IPFIX_DECODE_H
#define ROCEMETER_IPFIX_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "rocemeter/ipfix_ie.h"

#define RM_IPFIX_HDR_LEN 16
#define RM_IPFIX_MAX_MSG 65535
/* Templates (and Options Templates) one Transport Session may define, across
 * its Observation Domains; a further one is rejected ([SEQOBS]: collectors
 * MUST set finite resource limits). The profile needs 3 per domain. */
#define RM_IPFIX_MAX_TEMPLATES 256
/* Observation Domains whose Sequence Number and Export Time a session tracks; further ones are not checked. */
#define RM_IPFIX_MAX_SEQ_DOMAINS 256
/* Header anomalies noted per session before they are only counted. */
#define RM_IPFIX_ANOMALY_NOTES 10

/* Message-header anomalies of one Transport Session ([RFC7011] 3.1). */
struct rm_ipfix_counts {
	uint64_t seq_gaps;       /* Messages whose Sequence Number was not the expected one */
	uint64_t seq_missing;    /* Data Records the forward gaps skipped (a gap backwards adds none) */
	uint64_t time_backwards; /* Messages whose Export Time is earlier than the previous one of their domain */
};

struct rm_ipfix_session;

/* What the decoder hands to its user. raw/len: the Data Record's octets. */
struct rm_ipfix_sink {
	/* A Data Record of a usable profile Template, decoded into *r (host order). */
	void (*record)(void *arg, uint32_t domain, uint16_t tid, const struct rm_report *r, const uint8_t *raw,
		       size_t len);
	/*
	 * Octets that could not be bound to the profile (unknown Template,
	 * unusable Template, malformed set or message); reason is one line.
	 * tid is 0 when no Template applies; raw may be a whole set or message.
	 */
	void (*reject)(void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw, size_t len, const char *reason);
	/* Informational, one line (Template accepted, withdrawn, unusable). May be NULL. */
	void (*note)(void *arg, uint32_t domain, const char *msg);
	/*
	 * A Reliability Options Data Record (rocemeter/ipfix_ie.h
	 * RM_TID_RELIABILITY, bound by its fields: scope exporterIPv6Address and
	 * exporterTransportPort; exportedMessageTotalCount,
	 * exportedFlowRecordTotalCount, exportedOctetTotalCount; the start and
	 * end times optional, 0 when absent). May be NULL: ignored, as every
	 * other Options Data Record is.
	 */
	void (*reliability)(void *arg, uint32_t domain, const struct rm_ipfix_reliability *r);
	/*
	 * An observation point's name: an Options Data Record of an Options
	 * Template whose scope is observationPointId (138, 8 octets) and whose
	 * field is interfaceName (82, fixed length), as rocemeter's Template 262
	 * (docs/ipfix-mapping.md "Observation point names"). name is the value
	 * up to its first NUL (the field may have any fixed length; a variable-
	 * length one, or an interfaceName in another layout, makes the records
	 * rejected), NUL-terminated. A name longer than RM_OBS_NAME_LEN - 1 (63)
	 * octets, an empty one (all NUL), one with octets other than NUL after
	 * its first NUL, one common/safe_text.h's rm_text_invalid() refuses
	 * (invalid UTF-8, a control character, a bidirectional override), or one
	 * beyond rm_ipfix_session_set_max_points, is rejected instead, as a
	 * rejected record (on_reject). May be NULL.
	 */
	void (*point)(void *arg, uint32_t domain, uint64_t observation_point_id, const char *name);
};

/* New decoder state for one Transport Session; pen = PEN of the enterprise IEs. NULL on ENOMEM. */
struct rm_ipfix_session *rm_ipfix_session_new(uint32_t pen);

/*
 * At most max distinct observation points (Observation Domain and
 * observationPointId) named in this Transport Session ([collect]
 * max_observation_points; RM_MAX_OBSERVATION_POINTS_DEFAULT until set): a
 * name record of one more is rejected (on_reject), its name not given to
 * sink->point. Names of points already admitted may be given again.
 */
void rm_ipfix_session_set_max_points(struct rm_ipfix_session *s, uint32_t max);
void rm_ipfix_session_free(struct rm_ipfix_session *s);

struct rm_budget;
/*
 * Charge every Template the session holds RM_BUDGET_TEMPLATE_BYTES plus the
 * octets of its Template Record to b (budget.h), until it is withdrawn,
 * replaced or the session freed. Set before the first Message. A Template
 * that does not fit is refused (through the budget's callback) and rejected
 * through sink->reject; a Template it redefines is withdrawn.
 */
void rm_ipfix_session_set_budget(struct rm_ipfix_session *s, struct rm_budget *b);
struct rm_budget_share;
/*
 * The same, charged to sh, a share of a budget (budget.h) that the
 * session's retained epochs also use (rm_rules_session_set_share): a
 * Template beyond the share is refused although the budget has room. sh
 * must outlive the session (its Templates give their charges back when it
 * is freed). Before the first Message.
 */
void rm_ipfix_session_set_share(struct rm_ipfix_session *s, struct rm_budget_share *sh);

/*
 * Framing of a TCP stream: given the first have octets of the stream,
 * return the length of the next IPFIX Message (>= 16) if it is complete,
 * 0 if more octets are needed, -EBADMSG with a reason in err if the header
 * is bad (version != 10, length < 16). Only the first 4 octets are checked.
 */
long rm_ipfix_frame(const uint8_t *buf, size_t have, char *err, size_t errlen);

/*
 * Decode one complete IPFIX Message of len octets (as returned by
 * rm_ipfix_frame). Records and rejections go to sink. Returns 0, or
 * -EBADMSG with err set on a fatal (session-ending) error.
 */
int rm_ipfix_message(struct rm_ipfix_session *s, const uint8_t *msg, size_t len, const struct rm_ipfix_sink *sink,
		     void *arg, char *err, size_t errlen);

/* The session's header anomaly counters; valid until rm_ipfix_session_free. */
const struct rm_ipfix_counts *rm_ipfix_counts(const struct rm_ipfix_session *s);

/*
 * The Template Record octets (header and Field Specifiers as received) of
 * Template tid in domain, for storing next to a raw record; NULL if unknown.
 */
const uint8_t *rm_ipfix_template_bytes(struct rm_ipfix_session *s, uint32_t domain, uint16_t tid, size_t *len);

/*
 * Call fn for every (Options) Template the session holds, in no particular
 * order: its Observation Domain, 1 for an Options Template, and its Template
 * Record octets as rm_ipfix_template_bytes gives them. A Message of such
 * records restores the Templates in a new session (the collector's
 * received-Messages journal).
 */
void rm_ipfix_templates_each(struct rm_ipfix_session *s,
			     void (*fn)(void *arg, uint32_t domain, int options, const uint8_t *rec, size_t len),
			     void *arg);

#endif /* ROCEMETER_IPFIX_DECODE_H */
