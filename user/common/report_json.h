/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_json.h - a struct rm_report as one JSON Lines object. Keys are the
 * Information Element names of RM_IPFIX_IES (include/rocemeter/ipfix_ie.h)
 * in the Template's order, with the address pair of the report's family and
 * the VLAN keys only when has_vlan_ns, and "flag_names" (the names of the
 * set rdmaSequenceFlags bits, docs/json.md) after rdmaSequenceFlags.
 * Addresses are strings (inet_ntop form), every other value a JSON number
 * (times in UNIX ms).
 */
#ifndef ROCEMETER_USER_REPORT_JSON_H
#define ROCEMETER_USER_REPORT_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "rocemeter/report.h"

/* Write r as one line (object + '\n') to f. r->family must be 4 or 6 (else "{}").
 * Returns 0, or -EIO when f reports an error. */
int rm_report_write_json(FILE *f, const struct rm_report *r);

/*
 * Parse one JSON object (text, NUL-terminated) written as above into *r.
 * Every key listed above is required (the VLAN keys are optional and set
 * has_vlan_ns; "flag_names" is optional and, when given, must name the bits
 * of rdmaSequenceFlags as the writer does); unknown keys, wrong types, both or no address family,
 * unparsable addresses and values outside the field's type are errors.
 * Integers above 2^63 - 1 are not accepted (the JSON library's limit).
 * Returns 0, or -1 with a message in err (errlen bytes).
 */
int rm_report_parse_json(const char *text, struct rm_report *r, char *err, size_t errlen);

#endif /* ROCEMETER_USER_REPORT_JSON_H */
