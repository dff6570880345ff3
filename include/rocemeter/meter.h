/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * meter.h - structures and constants shared by the meter's BPF program
 * (bpf/meter.bpf.c) and userspace. This is the only definition of each;
 * BPF maps carry them as BTF, so `bpftool map dump` shows named fields.
 *
 * Byte order: addresses are in network order (as on the wire); every other
 * field is in host order (QPN, P_Key and PSN are converted when parsed).
 */
#ifndef ROCEMETER_METER_H
#define ROCEMETER_METER_H

#include "types.h"
#include "seqobs.h"
#include "bth.h"
#ifndef __bpf__
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

#define RM_VLAN_DEPTH_MAX 2 /* 802.1Q / 802.1ad tags metered; deeper: not metered (RM_PARSE_UNSUP_ENCAP) */
#define RM_IPV6_EXT_MAX   4 /* IPv6 extension headers metered; more: not metered (RM_PARSE_UNSUP_ENCAP) */
/* How far the parser reads on past what it meters, to find the connection
 * of a request it will not meter (docs/meter.md "Requests the meter cannot
 * meter"); beyond: it stops, and the frame names no connection. */
#define RM_VLAN_READ_MAX     4 /* tags, any of the TPIDs the parser knows */
#define RM_IPV6_EXT_READ_MAX 8 /* IPv6 extension headers */

/*
 * Mirrored traffic ([capture] encapsulation, docs/deployment.md): the
 * encapsulations the parser takes off, as bits of the load-time constant
 * rm_capture_encap (bpf/parse.h). 0: plain frames only, the parser of a
 * TAP or a local SPAN port.
 */
#define RM_ENCAP_PLAIN   0x01 /* frames as sent: metered at observation point 0 */
#define RM_ENCAP_ERSPAN1 0x02 /* GRE 0x88BE without sequence number, no ERSPAN header */
#define RM_ENCAP_ERSPAN2 0x04 /* GRE 0x88BE with sequence number, ERSPAN version 1 (type II) */
#define RM_ENCAP_ERSPAN3 0x08 /* GRE 0x22EB, ERSPAN version 2 (type III), its platform sub-header */
#define RM_ENCAP_VXLAN   0x10 /* UDP to the VXLAN port (4789) */
#define RM_ENCAP_RSPAN   0x20 /* an 802.1Q tag of the RSPAN VLAN, taken off */
#define RM_ENCAP_MIRROR  0x3e /* every mirror encapsulation */
#define RM_VXLAN_PORT    4789 /* IANA */

/* The kind of mirror a frame came through (struct rm_pkt mirror, struct rm_mirror_key kind). */
enum rm_mirror_kind {
	RM_MIRROR_NONE = 0,
	RM_MIRROR_ERSPAN = 1, /* ERSPAN I, II or III: outer source address + session ID */
	RM_MIRROR_VXLAN = 2,  /* VXLAN: VNI */
	RM_MIRROR_RSPAN = 3,  /* RSPAN: VLAN ID */
};

#define RM_OBS_MAX            255 /* observation_point lines of an attachment (rm_ctx_key obs is a byte) */
#define RM_MIRROR_UNKNOWN_MAX 256 /* sessions map `mirror_unknown` keeps (bpf/mirror.h), the least recent forgotten */
#define RM_OBS_NAME_LEN       64  /* an observation point's NAME, with its NUL */
#define RM_MIRROR_REORDER_MAX 64  /* a GRE sequence number this far back is reordering; further: a restart */

/*
 * A mirror session (map `mirror_sessions`, hash of rm_mirror_key ->
 * rm_mirror_session): what userspace loads from the observation_point
 * lines. src is the outer source address for ERSPAN (zero otherwise),
 * session the ERSPAN session ID (ERSPAN I: 0), the VNI or the VLAN ID.
 */
struct rm_mirror_key {
	__u8 kind;   /* enum rm_mirror_kind */
	__u8 family; /* ERSPAN: the outer header's, 4 or 6; else 0 */
	__u16 _pad;
	__u32 session;
	__u8 src[16];
};

struct rm_mirror_session {
	__u64 seq_state; /* 1 << 32 | the highest GRE sequence number seen (serial order); 0: none yet.
			  * One word, changed with compare-and-swap: no lock on the frame's path */
	__u8 obs;        /* its observation point, 1..RM_OBS_MAX */
	__u8 _pad[7];
	__u64 id;                   /* its observationPointId (userspace's; 0: derived, mirror_sessions = auto) */
	__u64 frames;               /* frames of the session (compare with the switch's counter) */
	__u64 gaps;                 /* sequence gaps (and restarts): captureDiscontinuity */
	__u64 lost;                 /* sequence numbers skipped by the gaps */
	__u64 reordered;            /* sequence numbers at or behind the highest: counted, metered */
	__u64 truncated;            /* truncated copies */
	__u64 last_ns;              /* meter clock of its last frame */
	char name[RM_OBS_NAME_LEN]; /* the line's NAME, NUL-terminated, for `status`; "" for a derived
				     * one (mirror_sessions = auto). Written by userspace only */
};

/* An observation point's capture generation (map `obs_points`, array
 * indexed by rm_ctx_key obs): a gap of its mirror session raises it, which
 * makes the epochs of its contexts stale, and no others. */
struct rm_obs_point {
	__u32 gen;
	__u32 _pad;
};

/* Key namespace (config `namespace`): none, or the VLAN IDs of the frame. */
#define RM_NS_NONE 0
#define RM_NS_VLAN 1

/*
 * Record key of a context ([SEQOBS] "Identity and Epoch Lifecycle"),
 * without the parts that are constant per attachment (Transport Session,
 * Observation Domain). obs names the observation point: 0 the attachment's
 * own (observation_point_id), n the n-th [capture] observation_point line,
 * whose mirror session delivered the frame; the reporter maps it to the
 * observationPointId. The UDP source port is not part of it. IPv4
 * addresses occupy the first 4 bytes of src/dst, rest zero.
 */
struct rm_ctx_key {
	__u8 src[16];                  /* source IP address, network order */
	__u8 dst[16];                  /* destination IP address, network order */
	__u32 dest_qp;                 /* BTH DestQP, 24 bits */
	__u16 pkey;                    /* BTH P_Key */
	__u8 family;                   /* 4 or 6 */
	__u8 obs;                      /* observation point: 0 the attachment's own, 1..RM_OBS_MAX a mirror session's */
	__u16 vlan[RM_VLAN_DEPTH_MAX]; /* VLAN IDs outer..inner when namespace = vlan, else 0 */
};

/*
 * Per-context state: map `contexts`, hash of rm_ctx_key -> rm_ctx, not
 * preallocated, so that an evicted element is not reused while a CPU may
 * still hold a pointer to it (freed after an RCU grace period), and so that
 * the table takes memory for the contexts that exist: 88 bytes of value
 * (with the key and the kernel's element header, 192 bytes a context).
 * Everything after the lock is read and written under it; the window of
 * an epoch whose PENDING positions do not fit inline is a pool window
 * (seqobs.h, map `windows`). The context's own flags are RM_CTX_* bits in
 * seq.s_flags (rm_ctx_flag()).
 */
struct rm_ctx {
	struct bpf_spin_lock lock;
	__u32 capture_gen;       /* rm_capture_gen when the open epoch started (a later one: stale) */
	struct rm_seq_state seq; /* the engine's state; RM_CTX_* bits in seq.s_flags */
};

/* The context's own flags, in seq.s_flags (RM_SEQ_OWNER_BITS). */
#define RM_CTX_DISABLED (1u << 26) /* not metered: violated, or no longer provisioned (after a reload) */
#define RM_CTX_VIOLATED (1u << 27) /* a profile violation disabled it, until re-enabled (also in `violations`) */
#define RM_CTX_DEAD     (1u << 28) /* evicted: being removed from the table, take no request */

/* Whether ctx has one of flags (RM_CTX_* bits). */
static __always_inline int rm_ctx_flag(const struct rm_ctx *ctx, __u32 flags)
{
	return (ctx->seq.s_flags & flags) != 0;
}

/*
 * Profile violations (map `violations`, hash of rm_ctx_key -> rm_violation,
 * max_entries = [meter] max_violations): a connection in it is not metered,
 * whether or not it has a context, until `rocemeter reenable` or a reload
 * that changes its provisioning removes it ([SEQOBS] "Applicability and
 * Provisioning": disabled "until explicitly reprovisioned").
 */
enum rm_violation_cause {
	RM_VIOLATION_UNSUPPORTED = 1, /* an RC request other than SEND / RDMA WRITE (READ, atomics, ...) */
	RM_VIOLATION_MALFORMED = 2,   /* TVer != 0, extended headers + pad + ICRC do not fit, UDP length > IP payload */
	RM_VIOLATION_FOREIGN = 3,     /* a UC, RD, UD or XRC request carrying the connection's key */
};

struct rm_violation {
	__u64 first_ns; /* meter clock (monotonic ns; replay: capture UNIX ns) of the violating request */
	__u8 opcode;    /* its BTH OpCode */
	__u8 cause;     /* enum rm_violation_cause */
	__u16 _pad;
	__u32 psn; /* its PSN */
};

/*
 * The fail-safe of the violations map (map `viol_state`, one-element array,
 * key 0): when a violation finds the map full and no context to hold it,
 * the connection it disables cannot be known later, so no new connection
 * is metered (RM_STAT_FAIL_SAFE_REFUSED) until `rocemeter reenable --all`
 * clears fail_safe. Contexts already in the table are metered on.
 */
struct rm_viol_state {
	__u32 fail_safe; /* 1: engaged */
	__u32 _pad;
	__u64 since_ns; /* meter clock when it engaged */
};

/* Provisioning (map `provision`, hash of rm_prov_key -> rm_prov_val). */
#define RM_PROV_ANY_QP   0x01 /* dest_qp is a wildcard (stored as 0) */
#define RM_PROV_ANY_PKEY 0x02 /* pkey is a wildcard (stored as 0) */

struct rm_prov_key {
	__u8 src[16];
	__u8 dst[16];
	__u32 dest_qp;
	__u16 pkey;
	__u8 family;
	__u8 wildcard; /* RM_PROV_ANY_* */
};

struct rm_prov_val {
	__u32 generation_verified; /* 1: connection generation independently established */
};

/*
 * The provisioning keys that may cover a connection key, one per form: 0
 * the exact key, RM_PROV_ANY_QP, RM_PROV_ANY_PKEY, both (the form is the
 * wildcard bits; a line stores its wildcard fields as 0). The XDP program
 * looks them up in this order; user/meter/provision.c matches lines with
 * the same keys.
 */
#define RM_PROV_FORMS 4

static __always_inline void rm_prov_probe(struct rm_prov_key *pk, const struct rm_ctx_key *k, __u8 form)
{
	__builtin_memset(pk, 0, sizeof(*pk));
	__builtin_memcpy(pk->src, k->src, 16);
	__builtin_memcpy(pk->dst, k->dst, 16);
	pk->family = k->family;
	pk->wildcard = form;
	pk->dest_qp = (form & RM_PROV_ANY_QP) ? 0 : k->dest_qp;
	pk->pkey = (form & RM_PROV_ANY_PKEY) ? 0 : k->pkey;
}

/*
 * Events on the ring buffer `events` ([SEQOBS] closures decided in the
 * datapath, and epoch starts). Every event carries a snapshot copied under
 * the context's lock.
 */
enum rm_event_type {
	RM_EV_EPOCH_START = 1, /* snapshot after the first request */
	RM_EV_EPOCH_FINAL = 2, /* final snapshot of a closed epoch */
};

struct rm_event {
	__u32 type; /* enum rm_event_type */
	__u32 _pad;
	struct rm_ctx_key key;
	struct rm_seq_counters snap;
};

/*
 * Verdict of the frame parser (bpf/parse.h rm_parse_len()). A verdict other
 * than RM_PARSE_OK with pkt->bth_ok set: the BTH was read, in a form the
 * meter does not meter (a first fragment, an unsupported encapsulation, a
 * UDP length beyond the IP payload); the verdict is the first such cause.
 *
 * RM_PARSE_VERDICTS(X) is the one list: X(suffix, stat, fl_stat)
 *   suffix   RM_PARSE_<suffix> is the verdict (in this order, from 0)
 *   stat     RM_STAT_<stat>: the meter's statistic of a frame with this
 *            verdict (RM_STATS below; bpf/meter.bpf.c)
 *   fl_stat  RM_FL_STAT_<fl_stat>: the flow-label program's (RM_FL_STATS in
 *            rocemeter/flowlabel.h; bpf/flowlabel.bpf.c, which counts
 *            RM_PARSE_OK frames on its own path)
 * The statistics' names and descriptions stay in their own tables.
 */
#define RM_PARSE_VERDICTS(X)                                                                                          \
	X(OK, ROCEV2, NOT_ROCEV2)                   /* BTH parsed: pkt fully filled in */                             \
	X(NOT_ROCEV2, NOT_ROCEV2, NOT_ROCEV2)       /* not IP/UDP with destination port 4791 */                       \
	X(ROCEV1, ROCEV1, ROCEV1)                   /* EtherType 0x8915 */                                            \
	X(FRAGMENT, IP_FRAGMENT, FRAGMENT)          /* IPv4 or IPv6 fragment */                                       \
	X(UNSUP_ENCAP, UNSUP_ENCAP, UNSUP_ENCAP)    /* too many VLAN tags / extension headers, or an unknown one */   \
	X(BAD_ETH, MALFORMED_ETH, MALFORMED_ETH)    /* truncated Ethernet or VLAN header */                           \
	X(BAD_IP, MALFORMED_IP, MALFORMED_IP)       /* truncated or inconsistent IP header or extension header */     \
	X(BAD_UDP, MALFORMED_UDP, MALFORMED_UDP)    /* truncated UDP header, UDP length < 8 + 12 or > IP payload */   \
	X(BAD_BTH, MALFORMED_BTH, MALFORMED_BTH)    /* BTH not within the frame */                                    \
	X(UNSUP_TPID, UNSUP_TPID, UNSUP_ENCAP)      /* a tag with TPID 0x9100, 0x9200 or 0x9300 */                    \
	X(BAD_MIRROR, MALFORMED_MIRROR, NOT_ROCEV2) /* GRE flags or routing, ERSPAN version or frame type not read */ \
	X(NESTED, NESTED_ENCAP, NOT_ROCEV2)         /* a mirror encapsulation inside a mirrored frame */

#define RM_PARSE_ENUM_(suffix, stat, fl_stat) RM_PARSE_##suffix,
/* clang-format off */
enum rm_parse_verdict {
	RM_PARSE_VERDICTS(RM_PARSE_ENUM_)
};
/* clang-format on */
#undef RM_PARSE_ENUM_

/*
 * Per-CPU statistics (map `stats`, per-CPU array of __u64 indexed by enum
 * rm_stat; the program increments, userspace sums over CPUs).
 *
 * RM_STATS(X) is the one list: X(suffix, name, group, description)
 *   suffix       RM_STAT_<suffix> is the array index
 *   name         the snake_case key in `status --json` and `replay
 *                --stats-json`, and the `cause` label of the metric
 *   group        RM_STAT_GROUP_<group> (RM_STAT_GROUPS below): the metric
 *                the statistic is part of
 *   description  one line for the metric's HELP and docs/json.md
 * Each frame is counted once in frames and once in one of rocev2 ..
 * malformed_bth, unsupported_tpid (its parse verdict); the others count
 * requests, closures and events.
 */
#define RM_STATS(X)                                                                                                    \
	X(FRAMES, "frames", FRAMES, "frames seen by the program")                                                      \
	X(ROCEV2, "rocev2", PARSE, "frames with UDP destination port 4791 and a full BTH, in a form that is metered")  \
	X(NOT_ROCEV2, "not_rocev2", PARSE, "not IP/UDP to port 4791: passed untouched")                                \
	X(ROCEV1, "rocev1", PARSE, "EtherType 0x8915: passed untouched")                                               \
	X(ELIGIBLE, "eligible_requests", ROCEV2, "eligible requests (SEND, RDMA WRITE) accounted to an epoch")         \
	X(RESPONSES, "responses", ROCEV2, "RC responses and acknowledgements: no state change")                        \
	X(CNP, "cnp", ROCEV2, "CNPs: no state change")                                                                 \
	X(OTHER_TRANSPORT, "other_transport", ROCEV2, "UC, RD, UD, XRC or unknown transport: not metered")             \
	X(NOT_PROVISIONED, "not_provisioned", ROCEV2, "requests of connections not provisioned")                       \
	X(VIOLATIONS, "profile_violations", ROCEV2,                                                                    \
	  "profile violations: epoch closed, connection disabled, not counted")                                        \
	X(DISABLED, "disabled_requests", ROCEV2, "requests of connections disabled by a violation or a reload")        \
	X(UNOBSERVED, "unobserved_requests", UNOBSERVED,                                                               \
	  "requests of provisioned connections in a form not metered: epoch closed with captureDiscontinuity")         \
	X(IP_FRAGMENT, "ip_fragments", PARSE, "IP fragments: not metered")                                             \
	X(UNSUP_ENCAP, "unsupported_encapsulation", PARSE,                                                             \
	  "more than 2 VLAN tags or 4 IPv6 extension headers, or an extension header that is not walked")              \
	X(UNSUP_TPID, "unsupported_tpid", PARSE, "a tag with TPID 0x9100, 0x9200 or 0x9300: not metered")              \
	X(UNATTRIBUTED, "unattributed_frames", UNATTRIBUTED,                                                           \
	  "frames that may carry a request but name no connection (capture loss with unattributed_is_loss)")           \
	X(MALFORMED_ETH, "malformed_eth", PARSE, "truncated Ethernet or VLAN header")                                  \
	X(MALFORMED_IP, "malformed_ip", PARSE,                                                                         \
	  "truncated IP header, IHL < 5, bad version, truncated extension header")                                     \
	X(MALFORMED_UDP, "malformed_udp", PARSE, "truncated UDP header, UDP length < 8 + 12 or > IP payload")          \
	X(MALFORMED_BTH, "malformed_bth", PARSE, "truncated BTH, TVer != 0, extended headers + pad + ICRC do not fit") \
	X(VLAN_METADATA, "vlan_tag_metadata", VLAN_METADATA,                                                           \
	  "frames whose outer VLAN tag came from the packet metadata")                                                 \
	X(TABLE_FULL, "table_full", TABLE_FULL, "new contexts refused: max_contexts reached")                          \
	X(EVICTIONS, "evictions", EVICTIONS, "contexts evicted (stateExhaustion)")                                     \
	X(VIOLATIONS_UNRECORDED, "violations_unrecorded", VIOLATIONS_UNRECORDED,                                       \
	  "violations that found the violations map full and no context: fail-safe engaged")                           \
	X(FAIL_SAFE_REFUSED, "fail_safe_refused", ROCEV2,                                                              \
	  "requests of new connections refused while the fail-safe is engaged")                                        \
	X(RINGBUF_DROPS, "ringbuf_drops", RINGBUF_DROPS, "events lost: ring buffer full")                              \
	X(EPOCHS_STARTED, "epochs_started", EPOCHS_STARTED, "epochs started")                                          \
	X(EPOCHS_CLOSED, "epochs_closed_in_datapath", EPOCHS_CLOSED, "epochs closed by the XDP program")               \
	X(POOL_TAKEN, "window_pool_taken", WINDOW_POOL_TAKEN,                                                          \
	  "pool windows taken: an epoch's pending positions reached more than 63 positions behind the highest")        \
	X(POOL_EXHAUSTED, "window_pool_exhausted", WINDOW_POOL_EXHAUSTED,                                              \
	  "epochs closed with stateExhaustion: the window pool had no window for them")                                \
	X(MALFORMED_MIRROR, "malformed_mirror", PARSE,                                                                 \
	  "mirror headers not read: GRE flags or routing, ERSPAN version, not Ethernet inside, inner frame too short") \
	X(NESTED_ENCAP, "nested_encapsulation", PARSE, "a mirror encapsulation inside a mirrored frame: not metered")  \
	X(MIRROR_FRAMES, "mirror_frames", MIRROR_FRAMES, "mirrored frames of a mirror session (ERSPAN, VXLAN, RSPAN)") \
	X(UNKNOWN_MIRROR, "unknown_mirror_session", UNKNOWN_MIRROR,                                                    \
	  "frames of a mirror session no observation_point names, or plain frames not accepted: not metered")          \
	X(TRUNCATED_MIRROR, "truncated_mirror", TRUNCATED_MIRROR,                                                      \
	  "mirrored copies cut by the switch: metered from their headers")                                             \
	X(MIRROR_GAPS, "mirror_sequence_gaps", MIRROR_GAPS,                                                            \
	  "GRE sequence gaps of an ERSPAN session: its observation point's epochs closed with captureDiscontinuity")   \
	X(MIRROR_REORDERED, "mirror_sequence_reordered", MIRROR_REORDERED,                                             \
	  "GRE sequence numbers at most 64 behind the session's highest: counted, metered")

#define RM_STAT_ENUM_(suffix, name, group, desc) RM_STAT_##suffix,
/* clang-format off */
enum rm_stat {
	RM_STATS(RM_STAT_ENUM_)
	RM_STAT__COUNT,
};
/* clang-format on */
#undef RM_STAT_ENUM_

/*
 * The metrics the statistics make (user/meter/, Prometheus): X(group,
 * metric, help). A group of one statistic is the counter
 * rocemeter_meter_<metric>_total{interface}; a group of several carries
 * the statistic's name as the label cause. Each frame is counted once in
 * FRAMES and once in PARSE (rocev2 or the reason it was not parsed).
 */
#define RM_STAT_GROUPS(X)                                                                                  \
	X(FRAMES, "frames", "frames seen by the XDP program")                                              \
	X(PARSE, "parsed_frames", "frames by parse verdict: rocev2, or why not metered")                   \
	X(ROCEV2, "rocev2_packets", "RoCEv2 packets by what the meter did with them")                      \
	X(UNOBSERVED, "unobserved_requests", "requests of provisioned connections in a form not metered")  \
	X(UNATTRIBUTED, "unattributed_frames", "frames that may carry a request but name no connection")   \
	X(VLAN_METADATA, "vlan_tag_metadata", "frames whose outer VLAN tag came from the packet metadata") \
	X(TABLE_FULL, "table_full", "new contexts refused: max_contexts reached")                          \
	X(EVICTIONS, "evictions", "contexts evicted (stateExhaustion)")                                    \
	X(VIOLATIONS_UNRECORDED, "violations_unrecorded",                                                  \
	  "violations that found the violations map full: fail-safe engaged")                              \
	X(RINGBUF_DROPS, "ringbuf_drops", "epoch events lost: the ring buffer was full")                   \
	X(EPOCHS_STARTED, "epochs_started", "epochs started in the datapath")                              \
	X(EPOCHS_CLOSED, "epochs_closed_in_datapath", "closures decided in the datapath")                  \
	X(WINDOW_POOL_TAKEN, "window_pool_taken",                                                          \
	  "pool windows taken: an epoch's pending positions reached beyond the inline window")             \
	X(WINDOW_POOL_EXHAUSTED, "window_pool_exhausted",                                                  \
	  "epochs closed with stateExhaustion: the window pool had no window for them")                    \
	X(MIRROR_FRAMES, "mirror_frames", "frames of a mirror session (ERSPAN, VXLAN, RSPAN)")             \
	X(UNKNOWN_MIRROR, "unknown_mirror_session_frames",                                                 \
	  "frames of a mirror session no observation point names: not metered")                            \
	X(TRUNCATED_MIRROR, "truncated_mirror_frames",                                                     \
	  "mirrored copies cut by the switch: metered from their headers")                                 \
	X(MIRROR_GAPS, "mirror_sequence_gaps",                                                             \
	  "GRE sequence gaps of an ERSPAN session (its observation point's epochs closed)")                \
	X(MIRROR_REORDERED, "mirror_sequence_reordered",                                                   \
	  "GRE sequence numbers behind the session's highest: counted, metered")

#define RM_STAT_GROUP_ENUM_(group, metric, help) RM_STAT_GROUP_##group,
enum rm_stat_group {
	RM_STAT_GROUPS(RM_STAT_GROUP_ENUM_) RM_STAT_GROUP__COUNT,
};
#undef RM_STAT_GROUP_ENUM_

/*
 * Runtime configuration (global `rm_cfg` in the program's .data; userspace
 * writes it through the skeleton, before load or while running).
 */
struct rm_config {
	__u32 window;               /* W for new epochs, 1..window ring size */
	__u32 ns_mode;              /* RM_NS_* */
	__u32 provision_all;        /* 1: every connection is provisioned (operator assertion) */
	__u32 mirror;               /* 1: XDP_DROP after metering (dedicated mirror port) */
	__u32 use_replay_clock;     /* 1 (replay): arrival time is replay_now_ns, not the kernel clock */
	__u32 replay_wire_len;      /* replay: the frame's length on the wire (capture may truncate) */
	__u64 replay_now_ns;        /* replay: capture timestamp of the frame (UNIX ns) */
	__u64 idle_timeout_ns;      /* 0: none; else a request arriving later than this after the
				* epoch's last one closes it first (finalEpoch alone) */
	__u32 unattributed_is_loss; /* 1: a frame that may carry a request of any connection makes
				     * every open epoch stale (closed with captureDiscontinuity) */
	__u32 _pad;
};

/*
 * Replay's batch (bpf/meter.bpf.c rocemeter_replay, user/meter/meter.c
 * rm_meter_replay_run()): the data of one BPF_PROG_TEST_RUN holds, from its
 * end backwards, per frame its first `len` bytes then its struct
 * rm_batch_rec (unaligned): the first frame's record ends the data. At most
 * RM_BATCH_BYTES in all, the linear part of a test run's XDP buffer (a page
 * less the headroom and the skb_shared_info), and RM_BATCH_MAX frames.
 */
#define RM_BATCH_MAX       64
#define RM_BATCH_BYTES     3520 /* 4096 - XDP_PACKET_HEADROOM 256 - skb_shared_info 320 */
#define RM_BATCH_COPY      192  /* a frame's bytes copied at most: its headers; a longer frame is shortened */
#define RM_BATCH_FRAME_MIN 14   /* an Ethernet header: shorter frames are not run (XDP needs one) */
#define RM_BATCH_SHORT     0x1  /* rm_batch_rec flags: the copy is shorter than the captured frame */

struct rm_batch_rec {
	__u64 ts_ns;    /* the meter's clock for this frame (capture time, UNIX ns) */
	__u32 wire_len; /* the frame's length on the wire */
	__u16 len;      /* bytes of the frame just before this record */
	__u16 flags;    /* RM_BATCH_SHORT */
};

/*
 * Control requests for the program `rocemeter_ctl` (an XDP program run only
 * with BPF_PROG_TEST_RUN, never attached): the frame data is one struct
 * rm_ctl; the program takes the context's lock, acts, and writes the result
 * back into the same bytes (data_out). Every closure of a stale epoch (open
 * when an unattributed frame arrived, with unattributed_is_loss) carries
 * captureDiscontinuity besides its own reason.
 */
enum rm_ctl_op {
	RM_CTL_CLOSE = 1,           /* close the open epoch with `reason`; snapshot -> out */
	RM_CTL_SNAPSHOT = 2,        /* copy the state without changing it */
	RM_CTL_REPROVISION = 3,     /* after a reload: metered iff provisioned now and not violated */
	RM_CTL_CLOSE_IDLE = 4,      /* close (finalEpoch alone) only if the last request is older than idle_before_ns */
	RM_CTL_EVICT = 5,           /* close with stateExhaustion, remove the context, free its slot */
	RM_CTL_REENABLE = 6,        /* forget the key's violation (map and context): metered iff
				     * provisioned; RM_CTL_OK also without a context */
	RM_CTL_CLOSE_STALE = 7,     /* close with captureDiscontinuity only an epoch open before the
				     * last unattributed frame (rm_capture_gen) */
	RM_CTL_CLEAR_FAIL_SAFE = 8, /* leave the violations fail-safe (key unused) */
};

/* Result of a control request (struct rm_ctl `status`). */
enum rm_ctl_status {
	RM_CTL_OK = 0,
	RM_CTL_FAILED = -1,       /* unknown op, or the context's window or the scratch not found */
	RM_CTL_NO_CONTEXT = -2,   /* no context has this key */
	RM_CTL_NO_EPOCH = -3,     /* the context has no open epoch */
	RM_CTL_NOT_IDLE = -4,     /* RM_CTL_CLOSE_IDLE: a request arrived at or after idle_before_ns;
				   * RM_CTL_CLOSE_STALE: the epoch is not stale */
	RM_CTL_NOT_VIOLATED = -5, /* RM_CTL_REENABLE: the key had no violation to forget */
};

struct rm_ctl {
	__u32 op;     /* enum rm_ctl_op */
	__u16 reason; /* RM_FLAG_* closure bits for RM_CTL_CLOSE */
	__u16 _pad;
	__u64 idle_before_ns; /* RM_CTL_CLOSE_IDLE: meter clock */
	struct rm_ctx_key key;
	/* results */
	__s32 status; /* enum rm_ctl_status */
	__u32 _pad2;
	struct rm_seq_counters snap;
};

#endif /* ROCEMETER_METER_H */
