/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * parse.h - RoCEv2 frame parser shared by the XDP meter and the tc
 * flow-label program (BPF only). Works on any [data, data_end) packet
 * range, so both xdp_md and __sk_buff callers use it.
 *
 * Ethernet, 802.1Q/802.1ad tags, IPv4 (options honoured) or IPv6 (a bounded
 * walk over hop-by-hop, routing, destination-options and fragment headers),
 * UDP with destination port 4791 (the source port never selects RoCEv2),
 * and the 12-byte BTH ([IBPKT] "Base Transport Header"). Every read is
 * bounds-checked against data_end; a frame that cannot be parsed gets a
 * verdict and nothing is read at a guessed offset.
 *
 * Two kinds of verdict. A frame the parser cannot read on stops it: the
 * verdict says where (pkt->stop), no BTH. A frame in a form the meter does
 * not meter, but whose headers can still be read -- more than
 * RM_VLAN_DEPTH_MAX tags (up to RM_VLAN_READ_MAX), a tag of TPID 0x9100,
 * 0x9200 or 0x9300, more than RM_IPV6_EXT_MAX extension headers (up to
 * RM_IPV6_EXT_READ_MAX), a first fragment, a UDP length beyond the IP
 * payload -- is read on to the BTH: the first such cause is the verdict
 * (pkt->irregular) and pkt->bth_ok says that the BTH was read, so that the
 * request can be attributed to its connection (docs/meter.md "Requests the
 * meter cannot meter").
 *
 * Lengths in the headers (IPv4 total length, IPv6 payload length, UDP
 * length) are checked against frame_len, the frame's full length, which may
 * exceed data_end - data: the headers of a multi-buffer XDP frame or a
 * non-linear skb are in the linear part, the payload need not be; a frame
 * replayed from a capture truncated by its snap length has its wire length.
 *
 * One function per header (parse_eth, parse_ipv4, parse_ipv6, parse_udp,
 * parse_bth) moves a struct rm_cursor and returns a verdict; rm_parse_len()
 * chains them. All are __always_inline; RM_PARSE_GLOBAL makes the chain one
 * global BPF function for a program too big to verify it inline (the meter).
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
/* Tags the parser reads but does not meter: the pre-802.1ad QinQ TPIDs. */
#define RM_ETH_P_QINQ1 0x9100
#define RM_ETH_P_QINQ2 0x9200
#define RM_ETH_P_QINQ3 0x9300

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

#define RM_VLAN_VID_MASK    0x0fff /* 802.1Q TCI: the VLAN ID */
#define RM_IP_FRAG_MASK     0x3fff /* IPv4 flags and fragment offset: MF | offset */
#define RM_IP_OFFSET_MASK   0x1fff /* IPv4 fragment offset: non-zero, not the first fragment */
#define RM_IP6_OFFSET_MASK  0xfff8 /* IPv6 Fragment header: fragment offset */
#define RM_IP6_MORE_FRAGS   0x0001 /* IPv6 Fragment header: M */
#define RM_IP6_EXT_UNIT     8      /* IPv6 Hdr Ext Len counts 8-byte units after the first 8 */
#define RM_IP6_EXT_LEN_MASK 0xff8  /* (Hdr Ext Len + 1) * 8 <= 2048: the mask keeps it for the verifier */
#define RM_UDP_BTH_MIN      20     /* UDP header + BTH */
/* Every offset in struct rm_pkt is below 2^15 (14 + 4 tags + 40 + 8 extension
 * headers of at most 2048 + 8 < 32768): masking with this bounds a pointer
 * data + offset for the verifier without changing it. */
#define RM_PKT_OFF_MASK 0x7fff

/* enum rm_parse_verdict is in rocemeter/common.h (replay reads it). */

/*
 * What the parser found. Positions are offsets from the frame's start, not
 * pointers, so that rm_pkt can leave a global BPF function (RM_PARSE_GLOBAL);
 * a caller re-derives a pointer and checks it against data_end.
 */
struct rm_pkt {
	__u8 family;                   /* 4 or 6 */
	__u8 nvlan;                    /* tags seen, priority tags included */
	__u8 nvid;                     /* VLAN IDs seen: tags whose VLAN ID is not 0 */
	__u8 odd_tpid;                 /* a tag of TPID 0x9100, 0x9200 or 0x9300 was seen */
	__u16 vlan[RM_VLAN_DEPTH_MAX]; /* the first VLAN IDs, outer first; priority tags (VLAN ID 0,
					* IEEE 802.1Q) name no VLAN and are left out */
	__u8 bth_ok;                   /* the BTH was read: opcode .. psn are valid */
	__u8 rocev2_port;              /* a UDP header to port 4791 was read */
	__u8 irregular;                /* the first cause of a form not metered (enum rm_parse_verdict), 0: none */
	__u8 stop;                     /* where the parser stopped: RM_PARSE_OK if it read the BTH */
	__u16 ip_off;                  /* IPv4 or IPv6 header */
	__u16 src_off;                 /* source address (4 or 16 bytes) */
	__u16 dst_off;                 /* destination address */
	__u16 bth_off;                 /* the 12-byte BTH */
	__u8 padcnt;                   /* BTH PadCnt */
	__u32 bth_payload;             /* UDP payload bytes after the BTH (ext headers, payload, ICRC) */
	__u8 opcode;                   /* BTH OpCode */
	__u8 tver;                     /* BTH TVer (must be 0) */
	__u16 pkey;                    /* BTH P_Key, host order */
	__u32 dest_qp;                 /* BTH DestQP, 24 bits, host order */
	__u32 psn;                     /* BTH PSN, 24 bits, host order */
};

/*
 * Parse position: the next header starts at pos; [data, data_end) is
 * readable; the frame is frame_len bytes long. Each parse_* function reads
 * one header at pos, returns an enum rm_parse_verdict and, on RM_PARSE_OK
 * only, moves pos past the header; a form it reads but that is not metered
 * it notes with irregular() and still returns RM_PARSE_OK.
 */
struct rm_cursor {
	void *data;
	void *data_end;
	__u8 *pos;
	__u32 frame_len;
	struct rm_pkt *pkt;
};

/* Note a form that is read but not metered; the first cause is kept. */
static __always_inline void irregular(struct rm_cursor *c, __u8 verdict)
{
	if (!c->pkt->irregular)
		c->pkt->irregular = verdict;
}

struct rm_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Bytes of the frame before pos. */
static __always_inline __u32 cursor_offset(const struct rm_cursor *c)
{
	return (__u32)(c->pos - (__u8 *)c->data);
}

/* 802.1Q and 802.1ad tags are metered; the older QinQ TPIDs only read. */
static __always_inline int tpid_metered(__u16 type)
{
	return type == RM_ETH_P_8021Q || type == RM_ETH_P_8021AD;
}

static __always_inline int tpid_odd(__u16 type)
{
	return type == RM_ETH_P_QINQ1 || type == RM_ETH_P_QINQ2 || type == RM_ETH_P_QINQ3;
}

/*
 * Ethernet and up to RM_VLAN_READ_MAX tags (RM_VLAN_DEPTH_MAX metered); the
 * VLAN IDs go to pkt->vlan. *proto: the EtherType after the tags.
 */
static __always_inline int parse_eth(struct rm_cursor *c, struct rm_pkt *pkt, __u16 *proto)
{
	struct ethhdr *eth = (struct ethhdr *)c->pos;
	__u8 *cur;
	__u16 type;

	if ((void *)(eth + 1) > c->data_end)
		return RM_PARSE_BAD_ETH;
	type = bpf_ntohs(eth->h_proto);
	cur = (__u8 *)(eth + 1);

#pragma unroll
	for (int i = 0; i < RM_VLAN_READ_MAX; i++) {
		struct rm_vlan_hdr *vh = (struct rm_vlan_hdr *)cur;
		__u16 vid;

		if (!tpid_metered(type) && !tpid_odd(type))
			break;
		if ((void *)(vh + 1) > c->data_end)
			return RM_PARSE_BAD_ETH;
		if (tpid_odd(type)) {
			pkt->odd_tpid = 1;
			irregular(c, RM_PARSE_UNSUP_TPID);
		}
		if (i >= RM_VLAN_DEPTH_MAX)
			irregular(c, RM_PARSE_UNSUP_ENCAP);
		vid = bpf_ntohs(vh->tci) & RM_VLAN_VID_MASK;
		if (vid) {
			if (pkt->nvid == 0)
				pkt->vlan[0] = vid;
			else if (pkt->nvid == 1)
				pkt->vlan[1] = vid;
			pkt->nvid++;
		}
		pkt->nvlan = i + 1;
		type = bpf_ntohs(vh->proto);
		cur = (__u8 *)(vh + 1);
	}
	if (tpid_metered(type) || tpid_odd(type))
		return RM_PARSE_UNSUP_ENCAP;
	if (type == RM_ETH_P_ROCEV1)
		return RM_PARSE_ROCEV1;
	c->pos = cur;
	*proto = type;
	return RM_PARSE_OK;
}

/*
 * IPv4 with its options. *l4: the protocol; *ip_payload: the bytes after
 * the header as Total Length says (checked against frame_len). A first
 * fragment (MF, offset 0) is read on: it holds the UDP header and the BTH;
 * a later fragment holds neither.
 */
static __always_inline int parse_ipv4(struct rm_cursor *c, struct rm_pkt *pkt, __u8 *l4, __u32 *ip_payload)
{
	struct iphdr *ip4 = (struct iphdr *)c->pos;
	__u32 ihl, tot;

	if ((void *)(ip4 + 1) > c->data_end)
		return RM_PARSE_BAD_IP;
	ihl = (__u32)(ip4->ihl) * 4;
	tot = bpf_ntohs(ip4->tot_len);
	if (ip4->version != 4 || ihl < sizeof(*ip4) || tot < ihl)
		return RM_PARSE_BAD_IP;
	if ((void *)(c->pos + ihl) > c->data_end || cursor_offset(c) + tot > c->frame_len)
		return RM_PARSE_BAD_IP;
	if (ip4->frag_off & bpf_htons(RM_IP_FRAG_MASK)) {
		if (ip4->frag_off & bpf_htons(RM_IP_OFFSET_MASK))
			return RM_PARSE_FRAGMENT;
		irregular(c, RM_PARSE_FRAGMENT);
	}
	pkt->family = 4;
	pkt->src_off = (__u16)((__u8 *)&ip4->saddr - (__u8 *)c->data);
	pkt->dst_off = (__u16)((__u8 *)&ip4->daddr - (__u8 *)c->data);
	*l4 = ip4->protocol;
	*ip_payload = tot - ihl;
	c->pos += ihl & 0x3c; /* ihl <= 60: the mask bounds it for the verifier */
	return RM_PARSE_OK;
}

/* Extension headers the walk steps over (RFC 8200, "IPv6 Extension Headers"). */
static __always_inline int ipv6_ext_walked(__u8 nexthdr)
{
	return nexthdr == RM_IPPROTO_HOPOPTS || nexthdr == RM_IPPROTO_ROUTING || nexthdr == RM_IPPROTO_DSTOPTS ||
	       nexthdr == RM_IPPROTO_FRAGMENT;
}

/*
 * Extension headers that are not walked (IANA "IPv6 Extension Header
 * Types": AH, Mobility, HIP, Shim6, experimental) hide what follows.
 */
static __always_inline int ipv6_ext_opaque(__u8 nexthdr)
{
	return nexthdr == RM_IPPROTO_AH || nexthdr == RM_IPPROTO_MH || nexthdr == RM_IPPROTO_HIP ||
	       nexthdr == RM_IPPROTO_SHIM6 || nexthdr == RM_IPPROTO_EXP1 || nexthdr == RM_IPPROTO_EXP2;
}

/*
 * IPv6 and a bounded walk over at most RM_IPV6_EXT_READ_MAX hop-by-hop,
 * routing, destination-options and fragment headers (RM_IPV6_EXT_MAX
 * metered; an atomic fragment header counts as one, a first fragment is read
 * on, a later one stops). *l4: the upper-layer protocol; *ip_payload: the
 * bytes after the extension headers as Payload Length says (checked against
 * frame_len).
 */
static __always_inline int parse_ipv6(struct rm_cursor *c, struct rm_pkt *pkt, __u8 *l4, __u32 *ip_payload)
{
	struct ipv6hdr *ip6 = (struct ipv6hdr *)c->pos;
	__u32 plen, ext = 0;
	__u8 *cur, nexthdr;

	if ((void *)(ip6 + 1) > c->data_end)
		return RM_PARSE_BAD_IP;
	if (ip6->version != 6)
		return RM_PARSE_BAD_IP;
	plen = bpf_ntohs(ip6->payload_len);
	if (cursor_offset(c) + (__u32)sizeof(*ip6) + plen > c->frame_len)
		return RM_PARSE_BAD_IP;
	pkt->family = 6;
	pkt->src_off = (__u16)((__u8 *)&ip6->saddr - (__u8 *)c->data);
	pkt->dst_off = (__u16)((__u8 *)&ip6->daddr - (__u8 *)c->data);
	nexthdr = ip6->nexthdr;
	cur = (__u8 *)(ip6 + 1);
#pragma unroll
	for (int i = 0; i < RM_IPV6_EXT_READ_MAX; i++) {
		__u8 *eh = cur;
		__u32 len;

		if (!ipv6_ext_walked(nexthdr))
			break;
		if ((void *)(eh + RM_IP6_EXT_UNIT) > c->data_end)
			return RM_PARSE_BAD_IP;
		if (nexthdr == RM_IPPROTO_FRAGMENT) {
			__u16 fo = (__u16)(eh[2] << 8 | eh[3]);

			if (fo & RM_IP6_OFFSET_MASK)
				return RM_PARSE_FRAGMENT; /* not the first fragment: no UDP header */
			if (fo & RM_IP6_MORE_FRAGS)
				irregular(c, RM_PARSE_FRAGMENT);
			len = RM_IP6_EXT_UNIT;
		} else {
			len = ((__u32)eh[1] + 1) * RM_IP6_EXT_UNIT; /* up to 2048 */
		}
		ext += len;
		if (ext > plen)
			return RM_PARSE_BAD_IP;
		if (i >= RM_IPV6_EXT_MAX)
			irregular(c, RM_PARSE_UNSUP_ENCAP);
		nexthdr = eh[0];
		cur = eh + (len & RM_IP6_EXT_LEN_MASK);
	}
	if (ipv6_ext_walked(nexthdr) || ipv6_ext_opaque(nexthdr))
		return RM_PARSE_UNSUP_ENCAP;
	c->pos = cur;
	*l4 = nexthdr;
	*ip_payload = plen - ext;
	return RM_PARSE_OK;
}

/*
 * UDP to destination port 4791 (the source port never selects RoCEv2),
 * long enough for a BTH, whose BTH lies within the IP payload. A UDP length
 * beyond the IP payload is read on (a malformed request; in a first
 * fragment, the datagram's length).
 */
static __always_inline int parse_udp(struct rm_cursor *c, __u32 ip_payload, struct rm_pkt *pkt)
{
	struct udphdr *udp = (struct udphdr *)c->pos;
	__u32 ulen;

	if ((void *)(udp + 1) > c->data_end)
		return RM_PARSE_BAD_UDP;
	if (udp->dest != bpf_htons(RM_ROCEV2_UDP_PORT))
		return RM_PARSE_NOT_ROCEV2;
	pkt->rocev2_port = 1;
	ulen = bpf_ntohs(udp->len);
	if (ulen < RM_UDP_BTH_MIN || ip_payload < RM_UDP_BTH_MIN)
		return RM_PARSE_BAD_UDP;
	if (ulen > ip_payload)
		irregular(c, RM_PARSE_BAD_UDP);
	pkt->bth_payload = ulen - RM_UDP_BTH_MIN;
	c->pos = (__u8 *)(udp + 1);
	return RM_PARSE_OK;
}

/* The 12-byte BTH ([IBPKT] "Base Transport Header"); its fields to *pkt. */
static __always_inline int parse_bth(struct rm_cursor *c, struct rm_pkt *pkt)
{
	__u8 *bth = c->pos;

	if ((void *)(bth + RM_BTH_LEN) > c->data_end)
		return RM_PARSE_BAD_BTH;
	pkt->bth_off = (__u16)cursor_offset(c);
	pkt->padcnt = rm_bth_padcnt(bth);
	pkt->opcode = bth[0];
	pkt->tver = rm_bth_tver(bth);
	pkt->pkey = rm_bth_pkey(bth);
	pkt->dest_qp = rm_bth_dest_qp(bth);
	pkt->psn = rm_bth_psn(bth);
	pkt->bth_ok = 1;
	c->pos = bth + RM_BTH_LEN;
	return RM_PARSE_OK;
}

/* The chain of headers; returns where it stopped (RM_PARSE_OK: at the BTH's end). */
static __always_inline int parse_headers(struct rm_cursor *c, struct rm_pkt *pkt)
{
	__u32 ip_payload;
	__u16 proto;
	__u8 l4;
	int verdict;

	verdict = parse_eth(c, pkt, &proto);
	if (verdict != RM_PARSE_OK)
		return verdict;
	pkt->ip_off = (__u16)cursor_offset(c);
	if (proto == RM_ETH_P_IP)
		verdict = parse_ipv4(c, pkt, &l4, &ip_payload);
	else if (proto == RM_ETH_P_IPV6)
		verdict = parse_ipv6(c, pkt, &l4, &ip_payload);
	else
		return RM_PARSE_NOT_ROCEV2;
	if (verdict != RM_PARSE_OK)
		return verdict;
	if (l4 != RM_IPPROTO_UDP)
		return RM_PARSE_NOT_ROCEV2;
	verdict = parse_udp(c, ip_payload, pkt);
	if (verdict != RM_PARSE_OK)
		return verdict;
	return parse_bth(c, pkt);
}

/*
 * Parse one frame of frame_len bytes whose first data_end - data bytes are
 * readable. Returns an enum rm_parse_verdict: the first form read but not
 * metered (pkt->irregular) if there is one, else where the parser stopped
 * (pkt->stop). pkt->bth_ok: the BTH fields of *pkt are valid and bth_off +
 * RM_BTH_LEN <= data_end - data (always so on RM_PARSE_OK).
 */
static __always_inline int rm_parse_len(void *data, void *data_end, __u32 frame_len, struct rm_pkt *pkt)
{
	struct rm_cursor c = { .data = data, .data_end = data_end, .pos = data, .frame_len = frame_len, .pkt = pkt };

	__builtin_memset(pkt, 0, sizeof(*pkt));
	pkt->stop = (__u8)parse_headers(&c, pkt);
	return pkt->irregular ? pkt->irregular : pkt->stop;
}

/*
 * Define int NAME(CTX_TYPE *ctx, __u32 frame_len, struct rm_pkt *pkt):
 * rm_parse_len() over the context's packet as a global BPF function. The
 * verifier checks a global function once, on its own, and continues the
 * caller with its result unknown; inlined, every path through the parser
 * (tags, extension headers, the forms read but not metered) would multiply
 * the paths of the caller -- the meter would pass the verifier's limit.
 */
#define RM_PARSE_GLOBAL(name, ctx_type)                                                                    \
	__noinline int name(ctx_type *ctx, __u32 frame_len, struct rm_pkt *pkt)                            \
	{                                                                                                  \
		if (!pkt)                                                                                  \
			return RM_PARSE_BAD_ETH;                                                           \
		return rm_parse_len((void *)(long)ctx->data, (void *)(long)ctx->data_end, frame_len, pkt); \
	}

/* rm_parse_len() for a frame that is entirely within [data, data_end). */
static __always_inline int rm_parse(void *data, void *data_end, struct rm_pkt *pkt)
{
	return rm_parse_len(data, data_end, (__u32)((__u8 *)data_end - (__u8 *)data), pkt);
}

#endif /* ROCEMETER_BPF_PARSE_H */
