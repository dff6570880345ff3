// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * census.bpf.c - the connection census: every frame parsed by bpf/parse.h,
 * its BTH counted per connection key (include/rocemeter/census.h) by opcode
 * class, with the opcodes seen and the first and last time. Nothing is
 * metered, nothing is changed: it tells an operator which connections the
 * profile of [SEQOBS] "Applicability and Provisioning" can cover.
 *
 * Programs:
 *   rocemeter_census      tc (clsact ingress), live: `connections --live`
 *                         and `attach --census`; the kernel's monotonic
 *                         clock; returns TC_ACT_UNSPEC, so the filters after
 *                         it (the flow-label program) still run.
 *   rocemeter_census_xdp  never attached: `connections FILE...` runs each
 *                         captured frame through it with BPF_PROG_TEST_RUN,
 *                         capture time and wire length from census_cfg.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "parse.h"
#include "mirror.h"
#include "rocemeter/census.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TC_ACT_UNSPEC (-1)
/* Bytes made linear before parsing when the skb's head is shorter (as the flow-label program). */
#define RM_CENSUS_PULL_LEN 256

/* Replay: the frame's capture time and wire length; written by userspace before each run. */
struct rm_census_cfg census_cfg;

/* census: rm_ctx_key -> rm_census_val, per CPU; written by both programs,
 * summed by user/census/census.c. max_entries = the table size, set at load. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct rm_ctx_key);
	__type(value, struct rm_census_val);
} census SEC(".maps");

/* census_stats: 0 -> per-CPU counters indexed by enum rm_census_stat. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_census_stats);
} census_stats SEC(".maps");

/* census_pkt: per-CPU room for the parsed headers (the global parsers take map memory). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rm_pkt);
} census_pkt SEC(".maps");

/* The parser, verified once per program type (see RM_PARSE_GLOBAL). */
RM_PARSE_GLOBAL(rm_parse_census_tc, struct __sk_buff)
RM_PARSE_GLOBAL(rm_parse_census_xdp, struct xdp_md)

/*
 * The observation point of a frame (0: plain), or -1 when the meter would
 * not meter it (bpf/meter.bpf.c rm_mirror_point()): a mirror session no
 * line names with mirror_sessions = table (counted per session in
 * mirror_unknown), or a plain frame when [capture] takes mirrors only.
 */
static __always_inline int census_obs(void *data, void *data_end, const struct rm_pkt *pkt)
{
	struct rm_mirror_session *s;
	struct rm_mirror_key mk;

	if (!rm_capture_encap)
		return 0;
	if (pkt->mirror == RM_MIRROR_NONE)
		return rm_capture_encap & RM_ENCAP_PLAIN ? 0 : -1;
	if (rm_mirror_key_of(data, data_end, pkt, &mk))
		return -1;
	s = rm_mirror_session_of(&mk);
	if (!s) {
		rm_mirror_unknown_count(&mk);
		return -1;
	}
	return s->obs;
}

/* An RC request the meter would close with profileViolation as malformed (docs/meter.md). */
static __always_inline int malformed(const struct rm_pkt *pkt)
{
	if (!rm_opcode_is_rc_request(pkt->opcode))
		return 0;
	if (pkt->irregular == RM_PARSE_BAD_UDP)
		return 1;
	return !pkt->irregular &&
	       (pkt->tver != 0 || rm_rc_request_trailer(pkt->opcode, pkt->padcnt) > pkt->bth_payload);
}

/*
 * The UDP source port, the IPv6 Flow Label and the DETH Src_QP of the
 * frame into v (its first frame), or the RM_CENSUS_VARIES_* bits where a
 * later frame differs.
 */
static __always_inline void hash_fields(void *data, void *data_end, const struct rm_pkt *pkt, struct rm_census_val *v)
{
	__u8 *udp = (__u8 *)data + ((pkt->bth_off - 8) & RM_PKT_OFF_MASK);
	__u8 *ip = (__u8 *)data + (pkt->ip_off & RM_PKT_OFF_MASK);
	__u8 *deth = (__u8 *)data + ((pkt->bth_off + RM_BTH_LEN) & RM_PKT_OFF_MASK);
	__u32 label = 0, sqp = 0;
	__u16 sport;
	int has_sqp = 0;

	if ((void *)(udp + 2) > data_end)
		return; /* read by the parser; for the verifier */
	sport = (__u16)(udp[0] << 8 | udp[1]);
	if (pkt->family == 6 && (void *)(ip + 4) <= data_end)
		label = (__u32)(ip[1] & 0x0f) << 16 | (__u32)ip[2] << 8 | ip[3];
	if (rm_opcode_has_deth(pkt->opcode) && pkt->bth_payload >= RM_DETH_LEN &&
	    (void *)(deth + RM_DETH_LEN) <= data_end) {
		sqp = rm_deth_src_qp(deth);
		has_sqp = 1;
	}
	if (!v->frames) {
		v->udp_sport = sport;
		v->flow_label = label;
		v->src_qp = sqp;
		v->has_src_qp = (__u8)has_sqp;
		return;
	}
	if (sport != v->udp_sport)
		v->varies |= RM_CENSUS_VARIES_SPORT;
	if (label != v->flow_label)
		v->varies |= RM_CENSUS_VARIES_LABEL;
	if (has_sqp && !v->has_src_qp) {
		v->src_qp = sqp;
		v->has_src_qp = 1;
	} else if (has_sqp && sqp != v->src_qp) {
		v->varies |= RM_CENSUS_VARIES_SQP;
	}
}

/*
 * Count one frame of frame_len bytes whose first data_end - data are
 * readable, at time now; meta_vid: the VLAN ID of a tag the packet metadata
 * holds (0: none).
 */
static __always_inline void count(void *data, void *data_end, const struct rm_pkt *pktp, __u16 meta_vid, __u64 now)
{
	__u32 zero = 0, cls;
	struct rm_census_stats *stats = bpf_map_lookup_elem(&census_stats, &zero);
	struct rm_census_val *v;
	struct rm_ctx_key key;
	struct rm_pkt pkt;
	__u8 *src, *dst, op;
	int obs;

	if (!stats)
		return;
	stats->v[RM_CENSUS_STAT_FRAMES]++;
	__builtin_memcpy(&pkt, pktp, sizeof(pkt));
	if (!pkt.bth_ok) {
		stats->v[RM_CENSUS_STAT_NO_BTH_FRAMES]++;
		return;
	}
	stats->v[RM_CENSUS_STAT_BTH_FRAMES]++;

	__builtin_memset(&key, 0, sizeof(key));
	key.family = pkt.family;
	src = (__u8 *)data + (pkt.src_off & RM_PKT_OFF_MASK);
	dst = (__u8 *)data + (pkt.dst_off & RM_PKT_OFF_MASK);
	if (pkt.family == 4) {
		if ((void *)(src + 4) > data_end || (void *)(dst + 4) > data_end)
			return; /* checked by the parser; for the verifier */
		__builtin_memcpy(key.src, src, 4);
		__builtin_memcpy(key.dst, dst, 4);
	} else {
		if ((void *)(src + 16) > data_end || (void *)(dst + 16) > data_end)
			return;
		__builtin_memcpy(key.src, src, 16);
		__builtin_memcpy(key.dst, dst, 16);
	}
	key.dest_qp = pkt.dest_qp;
	key.pkey = pkt.pkey;
	obs = census_obs(data, data_end, &pkt);
	if (obs < 0) {
		stats->v[RM_CENSUS_STAT_UNKNOWN_MIRROR]++;
		return;
	}
	key.obs = (__u8)obs;
	/* The meter's namespace = vlan key: the metadata's tag is the outermost. */
	if (meta_vid) {
		key.vlan[0] = meta_vid;
		key.vlan[1] = pkt.vlan[0];
	} else {
		key.vlan[0] = pkt.vlan[0];
		key.vlan[1] = pkt.vlan[1];
	}

	v = bpf_map_lookup_elem(&census, &key);
	if (!v) {
		struct rm_census_val init;

		__builtin_memset(&init, 0, sizeof(init));
		/* Another CPU may insert the key first (EEXIST): our value is then zero too. */
		bpf_map_update_elem(&census, &key, &init, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&census, &key);
		if (!v) {
			stats->v[RM_CENSUS_STAT_TABLE_FULL]++;
			return;
		}
	}
	op = pkt.opcode;
	cls = rm_census_class(op);
	if (cls < RM_CENSUS_CLASS__COUNT)
		v->packets[cls]++;
	v->opcodes[(op >> 6) & 3] |= 1ull << (op & 63);
	if (malformed(&pkt))
		v->malformed++;
	hash_fields(data, data_end, &pkt, v);
	if (!v->frames || now < v->first_ns)
		v->first_ns = now;
	if (now > v->last_ns)
		v->last_ns = now;
	v->frames++;
}

SEC("tc")
int rocemeter_census(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 zero = 0;
	struct rm_pkt *pkt = bpf_map_lookup_elem(&census_pkt, &zero);

	/* Non-linear skb (e.g. GRO): make the headers readable first. */
	if (data + RM_CENSUS_PULL_LEN > data_end && skb->len > (__u32)(data_end - data)) {
		bpf_skb_pull_data(skb, skb->len < RM_CENSUS_PULL_LEN ? skb->len : RM_CENSUS_PULL_LEN);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	if (!pkt)
		return TC_ACT_UNSPEC;
	/* Lengths in the headers are checked against the whole frame, not the linear part. */
	rm_parse_census_tc(skb, skb->len, pkt);
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	count(data, data_end, pkt, skb->vlan_present ? (__u16)(skb->vlan_tci & RM_VLAN_VID_MASK) : 0,
	      bpf_ktime_get_ns());
	return TC_ACT_UNSPEC;
}

SEC("xdp.frags")
int rocemeter_census_xdp(struct xdp_md *xdp)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	__u32 frame_len = census_cfg.wire_len ? census_cfg.wire_len : bpf_xdp_get_buff_len(xdp), zero = 0;
	struct rm_pkt *pkt = bpf_map_lookup_elem(&census_pkt, &zero);

	if (!pkt)
		return XDP_PASS;
	rm_parse_census_xdp(xdp, frame_len, pkt);
	count(data, data_end, pkt, 0, census_cfg.now_ns);
	return XDP_PASS;
}
