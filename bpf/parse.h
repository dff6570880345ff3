/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * parse.h - RoCEv2 frame parser shared by the XDP meter and the tc
 * flow-label program (BPF only). Works on any [data, data_end) packet
 * range, so both xdp_md and __sk_buff callers use it.
 *
 * Ethernet, up to RM_VLAN_DEPTH_MAX 802.1Q/802.1ad tags, IPv4 (options
 * honoured, fragments not parsed further) or IPv6 (bounded walk over at
 * most RM_IPV6_EXT_MAX hop-by-hop, routing, destination-options and
 * fragment headers), UDP with destination port 4791 (the source port never
 * selects RoCEv2), and the 12-byte BTH (seed 001, "Base Transport Header").
 * Every read is bounds-checked against data_end; a frame that cannot be
 * parsed gets a verdict and nothing is read at a guessed offset.
 *
 * Lengths in the headers (IPv4 total length, IPv6 payload length, UDP
 * length) are checked against frame_len, the frame's full length, which may
 * exceed data_end - data: the headers of a multi-buffer XDP frame or a
 * non-linear skb are in the linear part, the payload need not be; a frame
 * replayed from a capture truncated by its snap length has its wire length.
 */
#ifndef ROCEMETER_BPF_PARSE_H
#define ROCEMETER_BPF_PARSE_H

#include <bpf/bpf_endian.h>
#include "rocemeter/common.h"

#define RM_ETH_P_IP     0x0800
#define RM_ETH_P_IPV6   0x86DD
#define RM_ETH_P_8021Q  0x8100
#define RM_ETH_P_8021AD 0x88A8
#define RM_ETH_P_ROCEV1 0x8915

#define RM_IPPROTO_HOPOPTS  0
#define RM_IPPROTO_UDP      17
#define RM_IPPROTO_ROUTING  43
#define RM_IPPROTO_FRAGMENT 44
#define RM_IPPROTO_DSTOPTS  60
#define RM_IPPROTO_AH       51
#define RM_IPPROTO_MH       135
#define RM_IPPROTO_HIP      139
#define RM_IPPROTO_SHIM6    140
#define RM_IPPROTO_EXP1     253
#define RM_IPPROTO_EXP2     254

/* enum rm_parse_verdict is in rocemeter/common.h (replay reads it). */

/* What the parser found. Pointers point into the packet. */
struct rm_pkt {
	__u8 family;          /* 4 or 6 */
	__u8 nvlan;           /* VLAN tags seen */
	__u16 vlan[RM_VLAN_DEPTH_MAX]; /* VLAN IDs, outer first */
	__u8 *ip;             /* IPv4 or IPv6 header */
	__u8 *src;            /* source address (4 or 16 bytes) */
	__u8 *dst;            /* destination address */
	__u8 *bth;            /* the 12-byte BTH */
	__u32 bth_payload;    /* UDP payload bytes after the BTH (ext headers, payload, ICRC) */
	__u8 opcode;          /* BTH OpCode */
	__u8 tver;            /* BTH TVer (must be 0) */
	__u16 pkey;           /* BTH P_Key, host order */
	__u32 dest_qp;        /* BTH DestQP, 24 bits, host order */
	__u32 psn;            /* BTH PSN, 24 bits, host order */
};

struct rm_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/*
 * Parse one frame of frame_len bytes whose first data_end - data bytes are
 * readable. Returns an enum rm_parse_verdict; on RM_PARSE_OK every field of
 * *pkt is valid and pkt->bth + RM_BTH_LEN <= data_end.
 */
static __always_inline int rm_parse_len(void *data, void *data_end, __u32 frame_len, struct rm_pkt *pkt)
{
	struct ethhdr *eth = data;
	__u8 *cur;
	__u16 proto;
	__u32 ip_payload; /* bytes after the IP header(s), as the IP header says */
	__u8 l4;

	if ((void *)(eth + 1) > data_end)
		return RM_PARSE_BAD_ETH;
	proto = bpf_ntohs(eth->h_proto);
	cur = (__u8 *)(eth + 1);
	pkt->nvlan = 0;
	pkt->vlan[0] = 0;
	pkt->vlan[1] = 0;

#pragma unroll
	for (int i = 0; i < RM_VLAN_DEPTH_MAX; i++) {
		struct rm_vlan_hdr *vh = (struct rm_vlan_hdr *)cur;

		if (proto != RM_ETH_P_8021Q && proto != RM_ETH_P_8021AD)
			break;
		if ((void *)(vh + 1) > data_end)
			return RM_PARSE_BAD_ETH;
		pkt->vlan[i] = bpf_ntohs(vh->tci) & 0x0fff;
		pkt->nvlan = i + 1;
		proto = bpf_ntohs(vh->proto);
		cur = (__u8 *)(vh + 1);
	}
	if (proto == RM_ETH_P_8021Q || proto == RM_ETH_P_8021AD)
		return RM_PARSE_UNSUP_ENCAP;
	if (proto == RM_ETH_P_ROCEV1)
		return RM_PARSE_ROCEV1;

	pkt->ip = cur;
	if (proto == RM_ETH_P_IP) {
		struct iphdr *ip4 = (struct iphdr *)cur;
		__u32 ihl, tot;

		if ((void *)(ip4 + 1) > data_end)
			return RM_PARSE_BAD_IP;
		ihl = (__u32)(ip4->ihl) * 4;
		tot = bpf_ntohs(ip4->tot_len);
		if (ip4->version != 4 || ihl < 20 || tot < ihl)
			return RM_PARSE_BAD_IP;
		if ((void *)(cur + ihl) > data_end || (__u32)(cur - (__u8 *)data) + tot > frame_len)
			return RM_PARSE_BAD_IP;
		if (ip4->frag_off & bpf_htons(0x3fff)) /* MF or offset */
			return RM_PARSE_FRAGMENT;
		pkt->family = 4;
		pkt->src = (__u8 *)&ip4->saddr;
		pkt->dst = (__u8 *)&ip4->daddr;
		l4 = ip4->protocol;
		ip_payload = tot - ihl;
		cur += ihl & 0x3c;
	} else if (proto == RM_ETH_P_IPV6) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)cur;
		__u32 ext = 0;

		if ((void *)(ip6 + 1) > data_end)
			return RM_PARSE_BAD_IP;
		if (ip6->version != 6)
			return RM_PARSE_BAD_IP;
		ip_payload = bpf_ntohs(ip6->payload_len);
		if ((__u32)((__u8 *)(ip6 + 1) - (__u8 *)data) + ip_payload > frame_len)
			return RM_PARSE_BAD_IP;
		pkt->family = 6;
		pkt->src = (__u8 *)&ip6->saddr;
		pkt->dst = (__u8 *)&ip6->daddr;
		l4 = ip6->nexthdr;
		cur = (__u8 *)(ip6 + 1);
#pragma unroll
		for (int i = 0; i < RM_IPV6_EXT_MAX; i++) {
			__u8 *eh = cur;
			__u32 len;

			if (l4 != RM_IPPROTO_HOPOPTS && l4 != RM_IPPROTO_ROUTING && l4 != RM_IPPROTO_DSTOPTS &&
			    l4 != RM_IPPROTO_FRAGMENT)
				break;
			if ((void *)(eh + 8) > data_end)
				return RM_PARSE_BAD_IP;
			if (l4 == RM_IPPROTO_FRAGMENT) {
				/* offset or M flag set: a real fragment */
				if ((eh[2] << 8 | eh[3]) & 0xfff9)
					return RM_PARSE_FRAGMENT;
				len = 8;
			} else {
				len = ((__u32)eh[1] + 1) * 8;
			}
			ext += len;
			if (ext > ip_payload)
				return RM_PARSE_BAD_IP;
			l4 = eh[0];
			cur = eh + (len & 0x7f8);
		}
		if (l4 == RM_IPPROTO_HOPOPTS || l4 == RM_IPPROTO_ROUTING || l4 == RM_IPPROTO_DSTOPTS ||
		    l4 == RM_IPPROTO_FRAGMENT)
			return RM_PARSE_UNSUP_ENCAP;
		/* Extension headers that are not walked (IANA "IPv6 Extension Header
		 * Types": AH, Mobility, HIP, Shim6, experimental) hide what follows. */
		if (l4 == RM_IPPROTO_AH || l4 == RM_IPPROTO_MH || l4 == RM_IPPROTO_HIP || l4 == RM_IPPROTO_SHIM6 ||
		    l4 == RM_IPPROTO_EXP1 || l4 == RM_IPPROTO_EXP2)
			return RM_PARSE_UNSUP_ENCAP;
		ip_payload -= ext;
	} else {
		return RM_PARSE_NOT_ROCEV2;
	}

	if (l4 != RM_IPPROTO_UDP)
		return RM_PARSE_NOT_ROCEV2;
	{
		struct udphdr *udp = (struct udphdr *)cur;
		__u32 ulen;

		if ((void *)(udp + 1) > data_end)
			return RM_PARSE_BAD_UDP;
		if (udp->dest != bpf_htons(RM_ROCEV2_UDP_PORT))
			return RM_PARSE_NOT_ROCEV2;
		ulen = bpf_ntohs(udp->len);
		if (ulen < 8 + RM_BTH_LEN || ulen > ip_payload)
			return RM_PARSE_BAD_UDP;
		pkt->bth = (__u8 *)(udp + 1);
		pkt->bth_payload = ulen - 8 - RM_BTH_LEN;
	}
	if ((void *)(pkt->bth + RM_BTH_LEN) > data_end)
		return RM_PARSE_BAD_BTH;
	pkt->opcode = pkt->bth[0];
	pkt->tver = rm_bth_tver(pkt->bth);
	pkt->pkey = rm_bth_pkey(pkt->bth);
	pkt->dest_qp = rm_bth_dest_qp(pkt->bth);
	pkt->psn = rm_bth_psn(pkt->bth);
	return RM_PARSE_OK;
}

/* rm_parse_len() for a frame that is entirely within [data, data_end). */
static __always_inline int rm_parse(void *data, void *data_end, struct rm_pkt *pkt)
{
	return rm_parse_len(data, data_end, (__u32)((__u8 *)data_end - (__u8 *)data), pkt);
}

#endif /* ROCEMETER_BPF_PARSE_H */
