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
 * Mirrored copies (docs/deployment.md), when the loader sets rm_capture_encap:
 * an RSPAN VLAN's tag is taken off; ERSPAN I, II and III (GRE over IPv4 or
 * IPv6) and VXLAN are taken off and the inner frame is parsed as a frame of
 * its own, its lengths checked against the outer payload's end (a copy the
 * switch truncated is read to its BTH: pkt->truncated). The session that
 * carried it is in pkt->mirror, session, gre_seq. A mirror inside a mirror
 * is RM_PARSE_NESTED; a mirror header that is not read RM_PARSE_BAD_MIRROR.
 *
 * One function per header (parse_eth, parse_rspan, parse_ipv4, parse_ipv6,
 * parse_gre, parse_erspan, parse_vxlan, parse_udp, parse_bth) moves a
 * struct rm_cursor and returns a verdict; rm_parse_len() chains them. All are __always_inline; RM_PARSE_GLOBAL makes the chain one
 * global BPF function for a program too big to verify it inline (the meter).
 */
#ifndef ROCEMETER_BPF_PARSE_H
#define ROCEMETER_BPF_PARSE_H

#include <bpf/bpf_endian.h>
#include "rocemeter/meter.h"

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
#define RM_IPPROTO_GRE      47
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

/* Mirror encapsulations (RFC 2784 / RFC 2890 GRE, the ERSPAN headers of
 * draft-foschiano-erspan, RFC 7348 VXLAN). */
#define RM_GRE_C          0x8000                           /* checksum present (4 bytes with Reserved1) */
#define RM_GRE_R          0x4000                           /* routing present (RFC 1701): not read */
#define RM_GRE_K          0x2000                           /* key present (4 bytes) */
#define RM_GRE_S          0x1000                           /* sequence number present (4 bytes) */
#define RM_GRE_KNOWN      (RM_GRE_C | RM_GRE_K | RM_GRE_S) /* every other bit: strict route, recursion, flags, version */
#define RM_GRE_P_ERSPAN   0x88BE                           /* ERSPAN type I (no S bit, no header) and type II */
#define RM_GRE_P_ERSPAN3  0x22EB                           /* ERSPAN type III */
#define RM_ERSPAN2_LEN    8
#define RM_ERSPAN3_LEN    12
#define RM_ERSPAN3_PLAT   8 /* the platform-specific sub-header (O bit) */
#define RM_VXLAN_LEN      8
#define RM_VXLAN_I        0x08 /* VXLAN flags: the VNI is valid */
#define RM_MIRROR_OFF_MAX 1024 /* an inner frame starting further in is not read (offsets stay < 2^15) */

/* Set by the loader before load (rocemeter/meter.h RM_ENCAP_*): what this
 * attachment decapsulates. 0 (every program but a mirror meter's): plain
 * frames, and the verifier drops the decapsulation as dead code. */
const volatile __u32 rm_capture_encap = 0;
const volatile __u32 rm_capture_vxlan_port = RM_VXLAN_PORT;
const volatile __u32 rm_capture_rspan_vlan = 0; /* RSPAN VLAN ID; 0: none */

/* enum rm_parse_verdict is in rocemeter/meter.h (replay reads it). */

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
	__u16 l4_off;                  /* the header after IPv4 or IPv6 and its extension headers */
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
	/* A mirrored frame (rm_capture_encap): the headers above are the inner
	 * frame's, the mirror session's are here. */
	__u8 mirror;         /* enum rm_mirror_kind; RM_MIRROR_NONE: a plain frame */
	__u8 encap;          /* the RM_ENCAP_* bit of its encapsulation */
	__u8 has_seq;        /* gre_seq is valid (GRE S bit) */
	__u8 truncated;      /* a truncated copy: ERSPAN T bit, or shorter than its IP length */
	__u8 outer_family;   /* ERSPAN: 4 or 6 */
	__u8 obs;            /* not the parser's: the meter's observation point of the frame (rm_ctx_key obs) */
	__u16 outer_src_off; /* ERSPAN: the outer source address */
	__u16 inner_off;     /* where the inner frame starts (RM_PARSE_INNER) */
	__u32 inner_end;     /* where it ends: the outer payload's end */
	__u32 session;       /* ERSPAN session ID, VXLAN VNI or RSPAN VLAN ID */
	__u32 gre_seq;       /* GRE sequence number, host order */
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
	__u32 frame_len; /* inside a mirror: the offset where the outer packet's payload ends */
	struct rm_pkt *pkt;
	int inner; /* in a decapsulated frame: lengths may exceed frame_len (a truncated copy) */
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

/*
 * Keep pos's offset in *off (a field of pkt), and return data + that
 * offset read back: the same place, but the verifier does not track what
 * map or argument memory holds, so every path that reached this header (the
 * tag counts, IPv4 options, extension headers) continues from one state,
 * verified once instead of once per path (docs/benchmarks.md "Replay
 * start-up"). The next header checks pos against data_end, as always.
 */
static __always_inline __u8 *anchor(const struct rm_cursor *c, __u8 *pos, __u16 *off)
{
	*(volatile __u16 *)off = (__u16)(pos - (__u8 *)c->data);
	return (__u8 *)c->data + (*(volatile __u16 *)off & RM_PKT_OFF_MASK);
}

static __always_inline void cursor_anchor(struct rm_cursor *c, __u16 *off)
{
	c->pos = anchor(c, c->pos, off);
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
 * The outermost 802.1Q tag when its VLAN ID is the RSPAN VLAN: it marks a
 * mirrored frame, not a tenant, so it is taken off (no VLAN ID of the key,
 * no tag of the depth) and names the session. Returns where the next tag
 * or the EtherType's header starts; *type: the EtherType after it.
 */
static __always_inline __u8 *parse_rspan(struct rm_cursor *c, struct rm_pkt *pkt, __u8 *cur, __u16 *type)
{
	struct rm_vlan_hdr *vh = (struct rm_vlan_hdr *)cur;
	__u16 vid;

	if ((void *)(vh + 1) > c->data_end)
		return cur; /* parse_eth says it is truncated */
	vid = bpf_ntohs(vh->tci) & RM_VLAN_VID_MASK;
	if (!vid || vid != rm_capture_rspan_vlan)
		return cur;
	pkt->mirror = RM_MIRROR_RSPAN;
	pkt->encap = RM_ENCAP_RSPAN;
	pkt->session = vid;
	*type = bpf_ntohs(vh->proto);
	return (__u8 *)(vh + 1);
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
	if ((rm_capture_encap & RM_ENCAP_RSPAN) && !c->inner && type == RM_ETH_P_8021Q)
		cur = parse_rspan(c, pkt, cur, &type);

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
	if ((void *)(c->pos + ihl) > c->data_end || cursor_offset(c) + ihl > c->frame_len)
		return RM_PARSE_BAD_IP;
	if (cursor_offset(c) + tot > c->frame_len) {
		if (!c->inner)
			return RM_PARSE_BAD_IP;
		pkt->truncated = 1; /* a switch cut the mirrored copy: the headers are what is metered */
	}
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

/*
 * Extension headers the walk steps over (RFC 8200, "IPv6 Extension
 * Headers"). One test of a bit mask (all four are below 64), not four
 * comparisons: the verifier then does not walk the extension header once
 * per value of nexthdr.
 */
#define RM_IPV6_EXT_WALKED                                                                            \
	((1ULL << RM_IPPROTO_HOPOPTS) | (1ULL << RM_IPPROTO_ROUTING) | (1ULL << RM_IPPROTO_DSTOPTS) | \
	 (1ULL << RM_IPPROTO_FRAGMENT))

static __always_inline int ipv6_ext_walked(__u8 nexthdr)
{
	return nexthdr < 64 && ((1ULL << (nexthdr & 63)) & RM_IPV6_EXT_WALKED);
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
	if (cursor_offset(c) + (__u32)sizeof(*ip6) + plen > c->frame_len) {
		if (!c->inner || cursor_offset(c) + (__u32)sizeof(*ip6) > c->frame_len)
			return RM_PARSE_BAD_IP;
		pkt->truncated = 1;
	}
	pkt->family = 6;
	pkt->src_off = (__u16)((__u8 *)&ip6->saddr - (__u8 *)c->data);
	pkt->dst_off = (__u16)((__u8 *)&ip6->daddr - (__u8 *)c->data);
	nexthdr = ip6->nexthdr;
	cur = (__u8 *)(ip6 + 1);
#pragma unroll
	for (int i = 0; i < RM_IPV6_EXT_READ_MAX; i++) {
		__u8 *eh = anchor(c, cur, &pkt->l4_off); /* one state per header, whatever came before */
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
	cur = anchor(c, cur, &pkt->l4_off); /* one state after the walk, however it ended */
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

	if ((void *)(udp + 1) > c->data_end || (c->inner && cursor_offset(c) + sizeof(*udp) > c->frame_len))
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

	if ((void *)(bth + RM_BTH_LEN) > c->data_end || (c->inner && cursor_offset(c) + RM_BTH_LEN > c->frame_len))
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

/* Not a verdict: the outer headers of a mirror were read, the inner frame follows at pos. */
#define RM_PARSE_INNER 0xff

/*
 * The inner frame starts at pos and ends at end (an offset: the end of the
 * outer packet's payload). Shorter than an Ethernet header: a malformed
 * mirror; else the cursor moves into it.
 */
static __always_inline int enter_inner(struct rm_cursor *c, __u32 end)
{
	__u32 off = cursor_offset(c);

	if (off > RM_MIRROR_OFF_MAX || end < off + (__u32)sizeof(struct ethhdr))
		return RM_PARSE_BAD_MIRROR;
	c->pkt->inner_off = (__u16)off;
	c->pkt->inner_end = end;
	return RM_PARSE_INNER;
}

/*
 * GRE (RFC 2784, with RFC 2890's key and sequence number) carrying ERSPAN.
 * *proto: the protocol type. Another protocol is not a mirror
 * (RM_PARSE_NOT_ROCEV2); routing (R), strict source route, recursion, the
 * other flag bits or a version other than 0 are not read
 * (RM_PARSE_BAD_MIRROR). The sequence number goes to pkt->gre_seq.
 */
static __always_inline int parse_gre(struct rm_cursor *c, struct rm_pkt *pkt, __u16 *proto)
{
	__u8 *g = c->pos;
	__u32 len = 4;
	__u16 flags;

	if ((void *)(g + 4) > c->data_end)
		return RM_PARSE_BAD_MIRROR;
	flags = (__u16)(g[0] << 8 | g[1]);
	*proto = (__u16)(g[2] << 8 | g[3]);
	if (*proto != RM_GRE_P_ERSPAN && *proto != RM_GRE_P_ERSPAN3)
		return RM_PARSE_NOT_ROCEV2;
	if (flags & ~RM_GRE_KNOWN)
		return RM_PARSE_BAD_MIRROR;
	if (flags & RM_GRE_C)
		len += 4;
	if (flags & RM_GRE_K)
		len += 4;
	if (flags & RM_GRE_S) {
		if ((void *)(g + len + 4) > c->data_end)
			return RM_PARSE_BAD_MIRROR;
		pkt->gre_seq = (__u32)g[len] << 24 | (__u32)g[len + 1] << 16 | (__u32)g[len + 2] << 8 | g[len + 3];
		pkt->has_seq = 1;
		len += 4;
	}
	c->pos = g + len;
	return RM_PARSE_OK;
}

/*
 * The ERSPAN header after GRE: none for type I (0x88BE without a sequence
 * number), 8 bytes of version 1 for type II (0x88BE), 12 bytes of version 2
 * for type III (0x22EB) and its 8-byte platform sub-header when O is set.
 * A type this attachment does not accept is not a mirror; another version,
 * or a type III frame type other than Ethernet, is not read. Session ID and
 * T (truncated) to pkt.
 */
static __always_inline int parse_erspan(struct rm_cursor *c, struct rm_pkt *pkt, __u16 proto)
{
	__u8 *h = c->pos;
	__u32 ver, len = RM_ERSPAN2_LEN;

	pkt->mirror = RM_MIRROR_ERSPAN;
	if (proto == RM_GRE_P_ERSPAN && !pkt->has_seq) {
		if (!(rm_capture_encap & RM_ENCAP_ERSPAN1))
			return RM_PARSE_NOT_ROCEV2;
		pkt->encap = RM_ENCAP_ERSPAN1;
		return RM_PARSE_OK;
	}
	if ((void *)(h + RM_ERSPAN2_LEN) > c->data_end)
		return RM_PARSE_BAD_MIRROR;
	ver = h[0] >> 4;
	pkt->session = (__u32)(h[2] & 0x03) << 8 | h[3];
	if (h[2] & 0x04)
		pkt->truncated = 1;
	if (proto == RM_GRE_P_ERSPAN) {
		if (ver != 1)
			return RM_PARSE_BAD_MIRROR;
		if (!(rm_capture_encap & RM_ENCAP_ERSPAN2))
			return RM_PARSE_NOT_ROCEV2;
		pkt->encap = RM_ENCAP_ERSPAN2;
	} else {
		if (ver != 2)
			return RM_PARSE_BAD_MIRROR;
		if (!(rm_capture_encap & RM_ENCAP_ERSPAN3))
			return RM_PARSE_NOT_ROCEV2;
		if ((void *)(h + RM_ERSPAN3_LEN) > c->data_end || ((h[10] >> 2) & 0x1f) != 0)
			return RM_PARSE_BAD_MIRROR; /* truncated, or FT is not Ethernet */
		len = RM_ERSPAN3_LEN + ((h[11] & 0x01) ? RM_ERSPAN3_PLAT : 0);
		pkt->encap = RM_ENCAP_ERSPAN3;
	}
	c->pos = h + len;
	return RM_PARSE_OK;
}

/* A UDP header to the VXLAN port (rm_capture_vxlan_port) at pos. */
static __always_inline int udp_to_vxlan(const struct rm_cursor *c)
{
	struct udphdr *udp = (struct udphdr *)c->pos;

	return (void *)(udp + 1) <= c->data_end && udp->dest == bpf_htons((__u16)rm_capture_vxlan_port);
}

/*
 * UDP and the 8-byte VXLAN header (RFC 7348): the I flag set, the VNI to
 * pkt->session. *end: where the UDP datagram ends (an offset).
 */
static __always_inline int parse_vxlan(struct rm_cursor *c, struct rm_pkt *pkt, __u32 ip_payload, __u32 *end)
{
	struct udphdr *udp = (struct udphdr *)c->pos;
	__u8 *v = (__u8 *)(udp + 1);
	__u32 ulen;

	if ((void *)(v + RM_VXLAN_LEN) > c->data_end)
		return RM_PARSE_BAD_MIRROR;
	ulen = bpf_ntohs(udp->len);
	if (ulen < sizeof(*udp) + RM_VXLAN_LEN || ulen > ip_payload || !(v[0] & RM_VXLAN_I))
		return RM_PARSE_BAD_MIRROR;
	pkt->mirror = RM_MIRROR_VXLAN;
	pkt->encap = RM_ENCAP_VXLAN;
	pkt->session = (__u32)v[4] << 16 | (__u32)v[5] << 8 | v[6];
	*end = cursor_offset(c) + ulen;
	c->pos = v + RM_VXLAN_LEN;
	return RM_PARSE_OK;
}

/*
 * A mirror's headers after the outer IP header (l4, ip_payload bytes):
 * GRE + ERSPAN, or UDP + VXLAN. RM_PARSE_INNER: the inner frame follows;
 * RM_PARSE_OK: not a mirror this attachment takes off (plain UDP goes on);
 * else a verdict. Inside a mirror, a mirror is RM_PARSE_NESTED.
 */
static __always_inline int parse_mirror(struct rm_cursor *c, struct rm_pkt *pkt, __u8 l4, __u32 ip_payload)
{
	__u32 end = cursor_offset(c) + ip_payload;
	__u16 proto;
	int v;

	if (l4 == RM_IPPROTO_GRE && (rm_capture_encap & (RM_ENCAP_ERSPAN1 | RM_ENCAP_ERSPAN2 | RM_ENCAP_ERSPAN3))) {
		if (c->inner || pkt->mirror)
			return RM_PARSE_NESTED;
		pkt->outer_family = pkt->family;
		pkt->outer_src_off = pkt->src_off;
		v = parse_gre(c, pkt, &proto);
		if (v == RM_PARSE_OK)
			v = parse_erspan(c, pkt, proto);
		return v == RM_PARSE_OK ? enter_inner(c, end) : v;
	}
	if (l4 == RM_IPPROTO_UDP && (rm_capture_encap & RM_ENCAP_VXLAN) && udp_to_vxlan(c)) {
		if (c->inner || pkt->mirror)
			return RM_PARSE_NESTED;
		v = parse_vxlan(c, pkt, ip_payload, &end);
		return v == RM_PARSE_OK ? enter_inner(c, end) : v;
	}
	return RM_PARSE_OK;
}

/* The chain of headers; returns where it stopped (RM_PARSE_OK: at the BTH's
 * end; RM_PARSE_INNER: at a mirrored frame's start). */
static __always_inline int parse_headers(struct rm_cursor *c, struct rm_pkt *pkt)
{
	__u32 ip_payload;
	__u16 proto;
	__u8 l4;
	int verdict;

	verdict = parse_eth(c, pkt, &proto);
	if (verdict != RM_PARSE_OK)
		return verdict;
	cursor_anchor(c, &pkt->ip_off);
	if (proto == RM_ETH_P_IP)
		verdict = parse_ipv4(c, pkt, &l4, &ip_payload);
	else if (proto == RM_ETH_P_IPV6)
		verdict = parse_ipv6(c, pkt, &l4, &ip_payload);
	else
		return RM_PARSE_NOT_ROCEV2;
	if (verdict != RM_PARSE_OK)
		return verdict;
	cursor_anchor(c, &pkt->l4_off);
	if (rm_capture_encap & RM_ENCAP_MIRROR) {
		verdict = parse_mirror(c, pkt, l4, ip_payload);
		if (verdict != RM_PARSE_OK)
			return verdict;
	}
	if (l4 != RM_IPPROTO_UDP)
		return RM_PARSE_NOT_ROCEV2;
	verdict = parse_udp(c, ip_payload, pkt);
	if (verdict != RM_PARSE_OK)
		return verdict;
	return parse_bth(c, pkt);
}

/*
 * A mirrored frame, from pkt->inner_off to pkt->inner_end (RM_PARSE_INNER):
 * its tags, addresses and BTH replace the outer ones (its VLAN tags are the
 * tenant's, the outer ones the mirror transport's). Returns its verdict.
 */
static __always_inline int rm_parse_inner(void *data, void *data_end, struct rm_pkt *pkt)
{
	struct rm_cursor c = {
		.data = data, .data_end = data_end, .frame_len = pkt->inner_end, .pkt = pkt, .inner = 1
	};
	__u32 off = pkt->inner_off;
	int verdict;

	if (off > RM_MIRROR_OFF_MAX)
		return RM_PARSE_BAD_MIRROR;
	c.pos = (__u8 *)data + off;
	pkt->nvlan = 0;
	pkt->nvid = 0;
	pkt->vlan[0] = 0;
	pkt->vlan[1] = 0;
	pkt->rocev2_port = 0;
	verdict = parse_headers(&c, pkt);
	return verdict == RM_PARSE_INNER ? RM_PARSE_NESTED : verdict;
}

/* The outer headers: a verdict, or RM_PARSE_INNER for a mirror (rm_parse_inner() goes on). */
static __always_inline int rm_parse_outer(void *data, void *data_end, __u32 frame_len, struct rm_pkt *pkt)
{
	struct rm_cursor c = { .data = data, .data_end = data_end, .pos = data, .frame_len = frame_len, .pkt = pkt };

	__builtin_memset(pkt, 0, sizeof(*pkt));
	return parse_headers(&c, pkt);
}

/* Where the parser stopped into pkt->stop; the frame's verdict. */
static __always_inline int rm_parse_done(struct rm_pkt *pkt, int stop)
{
	pkt->stop = (__u8)stop;
	return pkt->irregular ? pkt->irregular : stop;
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
	int stop = rm_parse_outer(data, data_end, frame_len, pkt);

	if (stop == RM_PARSE_INNER)
		stop = rm_parse_inner(data, data_end, pkt);
	return rm_parse_done(pkt, stop);
}

/*
 * Define int NAME(CTX_TYPE *ctx, __u32 frame_len, struct rm_pkt *pkt):
 * rm_parse_len() over the context's packet as a global BPF function, and
 * NAME_inner() for a mirrored frame's inner headers as another one (each
 * verified alone: the decapsulating parser in one would pass the limit). The
 * verifier checks a global function once, on its own, and continues the
 * caller with its result unknown; inlined, every path through the parser
 * (tags, extension headers, the forms read but not metered) would multiply
 * the paths of the caller -- the meter would pass the verifier's limit.
 */
#define RM_PARSE_GLOBAL(name, ctx_type)                                                                      \
	__noinline int name##_inner(ctx_type *ctx, struct rm_pkt *pkt)                                       \
	{                                                                                                    \
		if (!pkt)                                                                                    \
			return RM_PARSE_BAD_MIRROR;                                                          \
		return rm_parse_inner((void *)(long)ctx->data, (void *)(long)ctx->data_end, pkt);            \
	}                                                                                                    \
	__noinline int name(ctx_type *ctx, __u32 frame_len, struct rm_pkt *pkt)                              \
	{                                                                                                    \
		int stop;                                                                                    \
		if (!pkt)                                                                                    \
			return RM_PARSE_BAD_ETH;                                                             \
		stop = rm_parse_outer((void *)(long)ctx->data, (void *)(long)ctx->data_end, frame_len, pkt); \
		if (stop == RM_PARSE_INNER)                                                                  \
			stop = name##_inner(ctx, pkt);                                                       \
		return rm_parse_done(pkt, stop);                                                             \
	}

/* rm_parse_len() for a frame that is entirely within [data, data_end). */
static __always_inline int rm_parse(void *data, void *data_end, struct rm_pkt *pkt)
{
	return rm_parse_len(data, data_end, (__u32)((__u8 *)data_end - (__u8 *)data), pkt);
}

#endif /* ROCEMETER_BPF_PARSE_H */
