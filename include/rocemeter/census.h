/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * census.h - the connection census: what bpf/census.bpf.c counts per
 * RoCEv2 connection key and user/census/ reads (`rocemeter connections`,
 * `status --connections`). The opcode classes are one X-macro list; the
 * class of an opcode comes from the predicates of bth.h ([IBPKT] "BTH
 * Opcode master table").
 *
 * Byte order: as in meter.h (addresses in network order, every other field
 * in host order).
 */
#ifndef ROCEMETER_CENSUS_H
#define ROCEMETER_CENSUS_H

#include "types.h"
#include "bth.h"

/*
 * Opcode classes: X(suffix, name, description). name is the key under
 * "packets" in the JSON (docs/json.md "connections") and the column of the
 * text table. Every opcode is in exactly one class (rm_census_class()).
 */
#define RM_CENSUS_CLASSES(X)                                                                                         \
	X(SEND_WRITE, "send_write", "RC SEND and RDMA WRITE requests (0x00..0x0B): the profile's eligible requests") \
	X(READ, "read", "RC RDMA READ requests (0x0C)")                                                              \
	X(ATOMIC, "atomic", "RC atomic requests: Compare & Swap, Fetch & Add (0x13, 0x14)")                          \
	X(OTHER_RC, "other_rc",                                                                                      \
	  "other RC requests: SEND with Invalidate (0x16, 0x17) and the unassigned RC opcodes (0x15, 0x18..0x1F)")   \
	X(RESPONSES, "responses", "RC responses: RDMA READ responses, Acknowledge, ATOMIC Acknowledge (0x0D..0x12)") \
	X(UC, "uc", "UC packets (0x20..0x3F)")                                                                       \
	X(UD, "ud", "UD packets (0x60..0x7F)")                                                                       \
	X(CNP, "cnp", "Congestion Notification Packets (0x81)")                                                      \
	X(OTHER, "other", "RD, XRC and the other opcodes (0x40..0x5F, 0x80, 0x82..0xFF)")

#define RM_CENSUS_CLASS_ENUM_(suffix, name, desc) RM_CENSUS_##suffix,
/* clang-format off */
enum rm_census_class {
	RM_CENSUS_CLASSES(RM_CENSUS_CLASS_ENUM_)
	RM_CENSUS_CLASS__COUNT,
};
/* clang-format on */
#undef RM_CENSUS_CLASS_ENUM_

/*
 * The census's own counters (map `census_stats`, per-CPU array of one
 * struct rm_census_stats, summed by userspace): X(suffix, name,
 * description); name is the JSON key. Each frame is counted in frames and
 * in one of bth_frames, no_bth_frames; a frame with a BTH in at most one of
 * not_counted_table_full, unknown_mirror_session (else in its key).
 */
#define RM_CENSUS_STATS(X)                                                                                      \
	X(FRAMES, "frames", "frames seen by the census program")                                                \
	X(BTH_FRAMES, "bth_frames", "frames whose BTH was read (UDP destination port 4791), in any form")       \
	X(NO_BTH_FRAMES, "no_bth_frames", "frames without a BTH: not RoCEv2, or headers that cannot be read")   \
	X(TABLE_FULL, "not_counted_table_full", "frames with a BTH not counted: the connection table was full") \
	X(UNKNOWN_MIRROR, "unknown_mirror_session",                                                             \
	  "frames with a BTH not counted: of a mirror session no observation_point names, or plain frames "     \
	  "when [capture] takes mirrors only (as the meter's unknown_mirror_session)")

#define RM_CENSUS_STAT_ENUM_(suffix, name, desc) RM_CENSUS_STAT_##suffix,
/* clang-format off */
enum rm_census_stat {
	RM_CENSUS_STATS(RM_CENSUS_STAT_ENUM_)
	RM_CENSUS_STAT__COUNT,
};
/* clang-format on */
#undef RM_CENSUS_STAT_ENUM_

struct rm_census_stats {
	__u64 v[RM_CENSUS_STAT__COUNT];
};

/*
 * What the census counted for one connection key (struct rm_ctx_key of
 * meter.h, the VLAN IDs always filled: outer first, the tag of the packet
 * metadata first when live). Map `census`: per-CPU hash rm_ctx_key ->
 * rm_census_val; userspace sums the counters and opcode bits over CPUs and
 * takes the smallest first_ns and the largest last_ns of the CPUs with
 * frames.
 */
struct rm_census_val {
	__u64 packets[RM_CENSUS_CLASS__COUNT]; /* frames by enum rm_census_class */
	__u64 malformed;  /* RC requests the meter would find malformed: TVer != 0, extended headers + pad +
			   * ICRC longer than the BTH payload, UDP length beyond the IP payload */
	__u64 frames;     /* every frame of the key (the sum of packets[]) */
	__u64 opcodes[4]; /* bit (op & 63) of word op >> 6: opcode op was seen */
	__u64 first_ns;   /* earliest frame time: replay capture UNIX ns; live monotonic ns */
	__u64 last_ns;    /* latest frame time, same clock */
	/* What an ECMP hash sees of the key (`flowlabel spread`), from its first frame: */
	__u32 flow_label; /* IPv6 Flow Label as it arrived, 20 bits; 0 for IPv4 */
	__u32 src_qp;     /* DETH Src_QP (UD), 24 bits, when has_src_qp */
	__u16 udp_sport;  /* UDP source port, host order */
	__u8 has_src_qp;  /* a frame with a DETH was seen */
	__u8 varies;      /* RM_CENSUS_VARIES_* bits: a later frame differed from the first */
};

/* rm_census_val varies bits: a frame of the key differed from its first frame in ... */
#define RM_CENSUS_VARIES_SPORT 0x1 /* the UDP source port */
#define RM_CENSUS_VARIES_LABEL 0x2 /* the Flow Label */
#define RM_CENSUS_VARIES_SQP   0x4 /* the DETH Src_QP */

/*
 * Replay configuration (global `census_cfg` of the program; userspace
 * writes it through the skeleton before each BPF_PROG_TEST_RUN).
 */
struct rm_census_cfg {
	__u64 now_ns;   /* the frame's capture time, UNIX ns */
	__u32 wire_len; /* the frame's length on the wire (>= the bytes run); 0: the bytes run */
	__u32 _pad;
};

/* The class of an opcode: one of enum rm_census_class. */
static __always_inline __u32 rm_census_class(__u8 op)
{
	if (op == RM_OPCODE_CNP)
		return RM_CENSUS_CNP;
	switch (rm_opcode_transport(op)) {
	case RM_TRANSPORT_RC:
		if (rm_opcode_is_rc_response(op))
			return RM_CENSUS_RESPONSES;
		if (rm_opcode_is_rc_send_or_write(op))
			return RM_CENSUS_SEND_WRITE;
		if (op == RM_OPCODE_RC_RDMA_READ_REQUEST)
			return RM_CENSUS_READ;
		if (op == RM_OPCODE_RC_COMPARE_SWAP || op == RM_OPCODE_RC_FETCH_ADD)
			return RM_CENSUS_ATOMIC;
		return RM_CENSUS_OTHER_RC;
	case RM_TRANSPORT_UC:
		return RM_CENSUS_UC;
	case RM_TRANSPORT_UD:
		return RM_CENSUS_UD;
	default:
		return RM_CENSUS_OTHER;
	}
}

/*
 * Bytes that must follow the BTH of an RC request of this opcode and pad
 * count: its extended headers, the pad and the ICRC ([IBPKT] "Operation ->
 * Extended Header"). A request whose BTH payload is shorter is malformed.
 */
static __always_inline __u32 rm_rc_request_trailer(__u8 op, __u8 padcnt)
{
	return rm_opcode_rc_request_ext_len(op) + padcnt + RM_ICRC_LEN;
}

#endif /* ROCEMETER_CENSUS_H */
