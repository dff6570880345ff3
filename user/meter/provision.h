/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * provision.h - which provisioning lines cover a connection: the rule the
 * XDP program applies (the probe keys of rocemeter/meter.h), for the
 * loader, for a reload's decision which violated connections to re-enable,
 * and for the patterns of `rocemeter reenable`. No BPF, no I/O: unit-tested
 * in tests/unit/test_provision.c.
 */
#ifndef ROCEMETER_PROVISION_H
#define ROCEMETER_PROVISION_H

#include "common/config.h"
#include "rocemeter/meter.h"

/* rm_prov_cover() bits: the forms in which lines cover a key. */
#define RM_PROV_BY_EXACT    0x01 /* SRC DST QPN PKEY */
#define RM_PROV_BY_ANY_QP   0x02 /* SRC DST any PKEY */
#define RM_PROV_BY_ANY_PKEY 0x04 /* SRC DST QPN any */
#define RM_PROV_BY_ANY_BOTH 0x08 /* SRC DST any any */
#define RM_PROV_BY_ALL      0x10 /* provision_all */

/* The provisioning map's key of a line (wildcard fields stored as 0). */
void rm_prov_key_of(const struct rm_provision *line, struct rm_prov_key *out);

/* 1 if line covers key, in any form; the key's VLAN IDs play no part. */
int rm_prov_line_covers(const struct rm_provision *line, const struct rm_ctx_key *key);

/* RM_PROV_BY_* bits of the forms in which lines[0..n) (and provision_all) cover key; 0: not provisioned. */
unsigned int rm_prov_cover(const struct rm_provision *lines, int n, int provision_all, const struct rm_ctx_key *key);

/*
 * The reload rule: 1 if key's provisioning differs between the old
 * configuration (lines a, provision_all pa) and the new one (b, pb), i.e.
 * the set of forms covering it changed. Only then does a reload re-enable a
 * connection a profile violation disabled ([SEQOBS]: "until explicitly
 * reprovisioned").
 */
int rm_prov_changed(const struct rm_provision *a, int na, int pa, const struct rm_provision *b, int nb, int pb,
		    const struct rm_ctx_key *key);

#endif
