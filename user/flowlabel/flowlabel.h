/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * flowlabel.h - userspace side of the [FLOWLABEL] Flow Label rewrite: the label
 * of a connection (for `rocemeter flowlabel`, cmd_flowlabel.c), and the API
 * that the `attach`, `detach` and `status` subcommands call to manage the tc
 * program bpf/flowlabel.bpf.c on an interface.
 *
 * Attachment: clsact qdisc, tc filter with handle RM_FL_TC_HANDLE and
 * priority RM_FL_TC_PRIO, one per direction; it persists after the process
 * exits. Statistics: per-CPU array (enum rm_fl_stat, __u64 frames) pinned at
 * BPFFS/rocemeter/NETNS/IFINDEX/fl_stats (user/common/paths.h: the meter's pin
 * directory, ROCEMETER_BPFFS honoured); both directions of one interface
 * share it.
 *
 * Errors: functions taking (err, errlen) write a one-line message without
 * the trailing newline there on failure.
 */
#ifndef ROCEMETER_USER_FLOWLABEL_H
#define ROCEMETER_USER_FLOWLABEL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <netinet/in.h>
#include <jansson.h>

#include "rocemeter/flowlabel.h"

#define RM_FL_PIN_NAME  "fl_stats"
#define RM_FL_TC_HANDLE 0x524d /* "RM" */
#define RM_FL_TC_PRIO   0xf1

enum rm_fl_direction {
	RM_FL_INGRESS = 1,
	RM_FL_EGRESS = 2,
};

struct rm_flowlabel_opts {
	int direction;    /* enum rm_fl_direction */
	uint32_t variant; /* enum rm_fl_variant (RM_FL_LITERAL by default) */
	int mix;          /* 1: murmur3 finalizer after the CRC */
	uint32_t seed;    /* XORed into the initial CRC register; 0 = none */
};

struct flowlabel; /* the generated skeleton (build/flowlabel.skel.h) */

/* The names of enum rm_fl_variant by value, NULL-terminated (an option's names: params.h RM_OPT_ENUM). */
extern const char *const rm_flowlabel_variant_names[RM_FL__VARIANTS + 1];
/* "literal", "crc32", "crc32c", "mpeg2" -> enum rm_fl_variant; -1 if unknown. */
int rm_flowlabel_variant_from_name(const char *name);
/* enum rm_fl_variant -> its name; "?" if out of range. */
const char *rm_flowlabel_variant_name(uint32_t variant);
/* "ingress", "egress" -> enum rm_fl_direction; -1 if unknown. */
int rm_flowlabel_direction_from_name(const char *name);
const char *rm_flowlabel_direction_name(int direction);

/*
 * The label ([FLOWLABEL]) for IPv6 addresses src, dst (network order) and
 * QPNs (24 bits, host order; sqp used only if has_sqp), computed with the
 * same header code and table form as the BPF program. *hash32 (if not NULL)
 * gets the 32-bit hash. Returns the 20-bit Flow Label as [FLOWLABEL] computes it
 * (may be 0: the program writes rm_fl_label_written() of it).
 */
uint32_t rm_flowlabel_compute(const struct rm_fl_params *p, const struct in6_addr *src, const struct in6_addr *dst,
			      int has_sqp, uint32_t sqp, uint32_t dqp, uint32_t *hash32);

/*
 * Open and load bpf/flowlabel.bpf.o with opts' variant, mix and seed (the
 * CRC table filled in), without attaching or pinning. For tests and
 * benchmarks (BPF_PROG_TEST_RUN). Returns NULL and sets err on failure;
 * free with flowlabel__destroy().
 */
struct flowlabel *rm_flowlabel_open_load(const struct rm_flowlabel_opts *opts, char *err, size_t errlen);

/*
 * Attach the program to ifname's clsact hook in opts->direction and pin
 * the statistics map (BPFFS/rocemeter/ifname/fl_stats; as for the meter, a
 * bpffs is mounted at BPFFS when none is and the directories are created;
 * an existing pin is reused). Refuses a second attachment in the same
 * direction. Returns 0, or a negative errno with err set.
 */
int rm_flowlabel_attach(const char *ifname, const struct rm_flowlabel_opts *opts, char *err, size_t errlen);

/*
 * Remove the filter(s) of both directions and the fl_stats pin; the pin
 * directory is removed only if empty. The clsact qdisc stays (other filters
 * may use it). Returns 0 if something was removed, 1 if nothing was
 * attached (err set), or a negative errno with err set.
 */
int rm_flowlabel_detach(const char *ifname, char *err, size_t errlen);

/*
 * Print attached directions (program id, variant, mix, seeded) and the
 * statistics summed over CPUs, as text or (json = 1) one JSON object.
 * Returns 0, 1 if not attached (nothing pinned; message on `out` in text
 * mode), or a negative errno (message on stderr).
 */
int rm_flowlabel_status(const char *ifname, FILE *out, int json);

/*
 * The same status as a JSON object (docs/json.md "flowlabel"), json null
 * when not attached, NULL on an error (logged) or out of memory. New
 * reference.
 */
json_t *rm_flowlabel_status_json(const char *ifname);

#endif /* ROCEMETER_USER_FLOWLABEL_H */
