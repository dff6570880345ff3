/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * identity.h - the meter's default observationPointId ([SEQOBS] "Identity and
 * Epoch Lifecycle": part of the record key): derived from the host and the
 * interface, so that eth1 of two hosts, or two namespaces' veths of one name,
 * are two observation points. For the daemon (`attach` without
 * observation_point_id); docs/configuration.md says how it is computed.
 */
#ifndef ROCEMETER_IDENTITY_H
#define ROCEMETER_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

/* The host's identity (machine-id(5)): 32 lowercase hex digits and a newline. */
#define RM_MACHINE_ID_PATH "/etc/machine-id"

/* Every derived ID is in 2^62 .. 2^63-1: bit 62 set, above interface indexes,
 * small configured IDs and the [capture] mirror IDs (rm_capture_auto_id(): < 2^58);
 * bit 63 clear, so that it is a signed 64-bit integer too (SQLite, JSON readers). */
#define RM_OBS_DERIVED_BIT (1ULL << 62)

/*
 * The derived observationPointId of interface ifname of this network
 * namespace: the first 8 octets of SHA-256(machine-id "\0" ifname "\0"
 * hwaddr), big-endian, bit 63 cleared and RM_OBS_DERIVED_BIT set. machine-id is the 32 hex
 * digits of RM_MACHINE_ID_PATH; hwaddr the interface's permanent address
 * (ETHTOOL_GPERMADDR), or its current Ethernet address when the permanent one
 * is absent or all zeros (veth, bridge), or no octets for a link without one.
 * Stable while the host keeps its machine-id and the interface its name and
 * address. 0 into *id, or -errno with the reason (the file, the interface)
 * in err.
 */
int rm_identity_obs_point(const char *ifname, uint64_t *id, char *err, size_t errlen);

#endif
