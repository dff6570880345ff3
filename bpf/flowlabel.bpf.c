// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flowlabel.bpf.c - tc (clsact ingress or egress) program `rocemeter_fl`:
 * the ingress-device relabeling of [FLOWLABEL] ("Where the Flow Label is
 * Modified"). For IPv6 RoCEv2 (UDP 4791 + BTH, optionally + DETH) with a
 * zero Flow Label it writes the low 20 bits of the hash of
 * include/rocemeter/flowlabel.h into the Flow Label. A non-zero arriving
 * label is never changed ([FLOWLABEL] rule 2); a computed label of 0 is written
 * as RM_FL_ZERO_SUBSTITUTE (rm_fl_label_written()), since 0 would leave the
 * connection unlabelled. Version and Traffic Class are untouched. No checksum or
 * ICRC fix-up: the RoCEv2 ICRC masks the Flow Label and the UDP pseudo-header
 * does not contain it (docs/flowlabel.md). Always TC_ACT_OK.
 *
 * Load-time configuration (.rodata, set by user/flowlabel/flowlabel.c before load):
 * fl_variant, fl_mix, fl_seed and fl_tabs (rm_fl_sliced_init() of the three).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "parse.h"
#include "rocemeter/flowlabel.h"

#define TC_ACT_OK 0
/* Bytes made linear before parsing when the skb's head is shorter. */
#define RM_FL_PULL_LEN 256

const volatile __u32 fl_variant = RM_FL_LITERAL; /* enum rm_fl_variant */
const volatile __u32 fl_mix = 0;                 /* 1: murmur3 finalizer */
const volatile __u32 fl_seed = 0;                /* XORed into the initial register */
const volatile struct rm_fl_sliced fl_tabs = {}; /* CRC position tables of variant + seed */

/* Per-CPU counters, __u64 per enum rm_fl_stat (flowlabel.h); one per frame. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RM_FL_STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} fl_stats SEC(".maps");

static __always_inline int count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&fl_stats, &idx);

	if (v)
		*v += 1;
	return TC_ACT_OK;
}

/* The statistic of a parse verdict other than RM_PARSE_OK (RM_PARSE_VERDICTS in rocemeter/meter.h). */
static __always_inline __u32 verdict_stat(int verdict)
{
#define RM_VERDICT_STAT_(suffix, stat, fl_stat) \
	case RM_PARSE_##suffix:                 \
		return RM_FL_STAT_##fl_stat;
	switch (verdict) {
		/* clang-format off */
		RM_PARSE_VERDICTS(RM_VERDICT_STAT_)
		/* clang-format on */
	default:
		return RM_FL_STAT_NOT_ROCEV2;
	}
#undef RM_VERDICT_STAT_
}

SEC("tc")
int rocemeter_fl(struct __sk_buff *skb)
{
	const struct rm_fl_params params = { .variant = fl_variant, .mix = fl_mix, .seed = fl_seed };
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	const struct rm_fl_sliced *tabs;
	struct rm_pkt pkt;
	struct ipv6hdr *ip6;
	__u8 *fl, in[RM_FL_INPUT_MAX];
	__u32 sqp = 0, len, label, stat;
	int verdict, deth;

	if (fl_tabs.tab[0][1] == 0) /* non-zero for every variant once loaded */
		return count(RM_FL_STAT_NOT_CONFIGURED);

	/* Non-linear skb (e.g. GSO/GRO): make the headers readable first. */
	if (data + RM_FL_PULL_LEN > data_end && skb->len > (__u32)(data_end - data)) {
		bpf_skb_pull_data(skb, skb->len < RM_FL_PULL_LEN ? skb->len : RM_FL_PULL_LEN);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}

	/* Lengths in the headers are checked against the whole frame, not the linear part. */
	verdict = rm_parse_len(data, data_end, skb->len, &pkt);
	if (verdict != RM_PARSE_OK)
		return count(verdict_stat(verdict));
	if (pkt.family != 6)
		return count(RM_FL_STAT_IPV4);
	if (pkt.tver != 0)
		return count(RM_FL_STAT_MALFORMED_BTH);

	ip6 = (struct ipv6hdr *)((__u8 *)data + (pkt.ip_off & RM_PKT_OFF_MASK));
	if ((void *)(ip6 + 1) > data_end) /* checked by rm_parse; for the verifier */
		return count(RM_FL_STAT_MALFORMED_IP);
	fl = (__u8 *)ip6; /* bytes 1..3: low 4 bits of Traffic Class | Flow Label */
	if ((fl[1] & 0x0f) | fl[2] | fl[3])
		return count(RM_FL_STAT_LABEL_PRESENT);

	deth = rm_opcode_has_deth(pkt.opcode);
	if (deth) {
		__u8 *d = (__u8 *)data + ((pkt.bth_off + RM_BTH_LEN) & RM_PKT_OFF_MASK);

		if ((void *)(d + RM_DETH_LEN) > data_end || pkt.bth_payload < RM_DETH_LEN)
			return count(RM_FL_STAT_MALFORMED_DETH);
		sqp = rm_deth_src_qp(d);
	}
	len = rm_fl_input(in, deth, sqp, pkt.dest_qp, &ip6->saddr.in6_u.u6_addr8[14], &ip6->daddr.in6_u.u6_addr8[14]);
	/*
	 * Without volatile, clang would see a zero-initialised const object and
	 * fold the reads at constant offsets (base[len]) to 0: hide the origin.
	 */
	tabs = (const struct rm_fl_sliced *)&fl_tabs;
	barrier_var(tabs);
	/* constant lengths, so each call unrolls into independent lookups */
	if (len == RM_FL_INPUT_MAX)
		label = rm_fl_label(rm_fl_crc_sliced(&params, tabs, in, RM_FL_INPUT_MAX));
	else
		label = rm_fl_label(rm_fl_crc_sliced(&params, tabs, in, RM_FL_INPUT_RC));
	stat = label == 0 ? RM_FL_STAT_ZERO_HASH : deth ? RM_FL_STAT_REWRITTEN_UD : RM_FL_STAT_REWRITTEN_RC;
	label = rm_fl_label_written(label);

	fl[1] = (fl[1] & 0xf0) | (__u8)(label >> 16);
	fl[2] = (__u8)(label >> 8);
	fl[3] = (__u8)label;
	bpf_set_hash_invalid(skb);
	return count(stat);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
