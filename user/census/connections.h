/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * connections.h - what the census says to an operator: which connections
 * the profile of [SEQOBS] "Applicability and Provisioning" can cover (only
 * SEND and RDMA WRITE requests under the key), and why not the others; the
 * text table, the ready `[provision]` lines (docs/configuration.md) and
 * the JSON (docs/json.md "connections"). Used by `connections` and
 * `status --connections`. No BPF, no I/O but the FILE given.
 */
#ifndef ROCEMETER_CONNECTIONS_H
#define ROCEMETER_CONNECTIONS_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "census.h"

/*
 * Why a connection key is not eligible: X(suffix, name, words). name is
 * the JSON item of "excluded", words the text's. A key is eligible when it
 * carried SEND or RDMA WRITE requests and none of these applies.
 * Responses and CNPs under the key never exclude it: the meter does not
 * look at them ([SEQOBS]: they "do not change request state").
 */
#define RM_CONN_EXCLUSIONS(X)                        \
	X(NO_REQUESTS, "no_requests", "no requests") \
	X(READ, "read", "RDMA READ")                 \
	X(ATOMIC, "atomic", "atomics")               \
	X(OTHER_RC, "other_rc", "other RC requests") \
	X(UC, "uc", "UC")                            \
	X(UD, "ud", "UD")                            \
	X(OTHER, "other", "RD/XRC/other opcodes")    \
	X(MALFORMED, "malformed", "malformed requests")

#define RM_CONN_EXCL_ENUM_(suffix, name, words) RM_CONN_EXCL_BIT_##suffix,
/* clang-format off */
enum rm_conn_exclusion_bit {
	RM_CONN_EXCLUSIONS(RM_CONN_EXCL_ENUM_)
	RM_CONN_EXCL__COUNT,
};
/* clang-format on */
#undef RM_CONN_EXCL_ENUM_
#define RM_CONN_EXCL(suffix) (1u << RM_CONN_EXCL_BIT_##suffix)

/* Which RM_CONN_EXCL() bits apply to what was counted for one key; 0: eligible. */
uint32_t rm_conn_exclusions(const struct rm_census_val *v);

/* Name (JSON) and words (text) of exclusion bit i; "?" out of range. */
const char *rm_conn_exclusion_name(int bit);
const char *rm_conn_exclusion_words(int bit);

/* Name of opcode class i (RM_CENSUS_CLASSES), "?" out of range. */
const char *rm_census_class_name(int cls);
/* Name of census statistic i (RM_CENSUS_STATS), "?" out of range. */
const char *rm_census_stat_name(int stat);

/*
 * The provisioning line of key k, in the syntax of docs/configuration.md
 * "[provision]": "connection = SRC DST 0xQQQQQQ 0xPPPP" (no VLAN: a line
 * covers the key in every VLAN). Returns the length, as snprintf.
 */
int rm_conn_provision_line(const struct rm_ctx_key *k, char *buf, size_t len);

/*
 * The opcodes set in bits (struct rm_census_val opcodes) as "0x00-0x02,0x04":
 * runs of consecutive opcodes as ranges. Returns buf ("" when none).
 */
char *rm_conn_format_opcodes(const __u64 bits[4], char *buf, size_t len);

/*
 * What the text output shows. RM_CONN_TABLE: a summary line and one line
 * per key (connection, packets by class, opcodes, eligible or why not);
 * RM_CONN_PROVISION: "[provision]", one line per eligible connection (keys
 * that differ only in VLANs make one line, eligible when all of them are;
 * at most RM_MAX_PROVISION) and a comment line "# excluded: ..." for each
 * one that is not, with the reasons: a section that a configuration file
 * can hold as it is.
 */
#define RM_CONN_TABLE     0x1
#define RM_CONN_PROVISION 0x2

/* Write r to f as text (what: RM_CONN_* bits). frames_read: frames read from captures, or -1 (live). */
void rm_conn_write_text(FILE *f, const struct rm_census_result *r, int64_t frames_read, unsigned int what);

/*
 * Set on obj the keys of docs/json.md "connections": the statistics,
 * "frames_read" when frames_read >= 0, "connections" (one object per key)
 * and "provision" (the lines of the [provision] section).
 */
void rm_conn_set_json(json_t *obj, const struct rm_census_result *r, int64_t frames_read);

#endif /* ROCEMETER_CONNECTIONS_H */
