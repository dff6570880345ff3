/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * jsonw.h - the JSON every command prints, built with jansson: the values
 * of the one vocabulary (docs/json.md: Information Element names for IEs,
 * snake_case for the rest, flags as a number and a list of names) and one
 * writer. Used by report_json.c, status, replay's statistics, the
 * daemon's stats file and `report`.
 */
#ifndef ROCEMETER_JSONW_H
#define ROCEMETER_JSONW_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "metrics.h"
#include "rocemeter/report.h"

/*
 * An unsigned 64-bit integer, exactly: jansson's integers are signed, so a
 * value above 2^63 - 1 is kept as a marked string that rm_json_write()
 * prints as the bare number. New reference (NULL when out of memory).
 */
json_t *rm_json_u64(uint64_t v);

/* The decimal digits of a value rm_json_u64() marked (above 2^63 - 1), or NULL for any other value (borrowed, v's lifetime). */
const char *rm_json_u64_digits(const json_t *v);

/* A string; NULL gives JSON null; bytes that are not UTF-8 become '?'. New reference. */
json_t *rm_json_text(const char *s);

/* An address (family 4 or 6, 16 bytes in network order, IPv4 in the first 4) as inet_ntop text. */
json_t *rm_json_addr(int family, const uint8_t *addr);

/*
 * The names of the set rdmaSequenceFlags bits, lowest first, the
 * unassigned bits together as one "0x...." item (rm_flags_to_text()):
 * 0x0021 gives ["finalEpoch", "generationUnverified"]. New reference.
 */
json_t *rm_json_flag_names(uint16_t flags);

/*
 * Set on obj the members of report r that the IPFIX Template carries, named
 * by the Information Elements of RM_IPFIX_IES in Template order (the
 * address pair of r's family, the VLAN keys only when has_vlan_ns), with
 * "flag_names" after rdmaSequenceFlags. r->family must be 4 or 6.
 */
void rm_json_set_report(json_t *obj, const struct rm_report *r);

/* Set on obj one member per row: key -> the row's value read at values + offset. */
void rm_json_set_rows(json_t *obj, const struct rm_metric_row *rows, size_t n, const void *values);

/*
 * Write v compactly on one line with '\n' to f, and release v. Returns 0,
 * or -EIO when v could not be encoded or f reports an error.
 */
int rm_json_write(FILE *f, json_t *v);

#endif /* ROCEMETER_JSONW_H */
