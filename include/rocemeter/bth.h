/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bth.h - the InfiniBand transport headers as RoCEv2 carries them ([IBPKT],
 * "Base Transport Header", "BTH Opcode master table", "Operation -> Extended
 * Header"): header lengths, field accessors, the opcodes the project uses and
 * predicates over them. One definition for the BPF programs (bpf/parse.h,
 * bpf/meter.bpf.c, bpf/flowlabel.bpf.c) and the host (tests, selftests).
 */
#ifndef ROCEMETER_BTH_H
#define ROCEMETER_BTH_H

#include "types.h"

#define RM_ROCEV2_UDP_PORT 4791 /* UDP destination port of RoCEv2 (IANA) */

/* Header lengths in bytes ([IBPKT]). */
#define RM_BTH_LEN       12 /* Base Transport Header */
#define RM_DETH_LEN      8  /* Datagram ETH: Q_Key, SrcQP */
#define RM_RETH_LEN      16 /* RDMA ETH: VA, R_Key, DMALen */
#define RM_IMMDT_LEN     4  /* Immediate Data */
#define RM_ATOMICETH_LEN 28 /* Atomic ETH: VA, R_Key, Swap/Add data, Compare data */
#define RM_IETH_LEN      4  /* Invalidate ETH: the R_Key to invalidate */
#define RM_ICRC_LEN      4  /* invariant CRC after the payload */

/*
 * BTH layout: OpCode | SE M PadCnt(2) TVer(4) | P_Key(16) | F B rsvd |
 * DestQP(24) | A rsvd | PSN(24). Offsets in bytes from the BTH's start.
 */
#define RM_BTH_OFF_FLAGS    1 /* SE, M, PadCnt, TVer */
#define RM_BTH_OFF_PKEY     2
#define RM_BTH_OFF_DEST_QP  5
#define RM_BTH_OFF_PSN      9
#define RM_BTH_PADCNT_SHIFT 4
#define RM_BTH_PADCNT_MASK  0x3
#define RM_BTH_TVER_MASK    0x0f
#define RM_DETH_OFF_SRC_QP  5 /* after the 4-byte Q_Key and a reserved byte */

/* OpCode bits 7..5: the transport service ([IBPKT], transport prefixes). */
#define RM_OPCODE_TRANSPORT_MASK 0xe0
enum rm_bth_transport {
	RM_TRANSPORT_RC = 0x00,  /* Reliable Connection, 0x00..0x1F */
	RM_TRANSPORT_UC = 0x20,  /* Unreliable Connection */
	RM_TRANSPORT_RD = 0x40,  /* Reliable Datagram */
	RM_TRANSPORT_UD = 0x60,  /* Unreliable Datagram */
	RM_TRANSPORT_CNP = 0x80, /* Congestion Notification (RoCEv2) */
	RM_TRANSPORT_XRC = 0xa0, /* Extended Reliable Connection */
};

/* The opcodes the project names ([IBPKT] "BTH Opcode master table"). */
enum rm_bth_opcode {
	RM_OPCODE_RC_SEND_FIRST = 0x00,
	RM_OPCODE_RC_SEND_MIDDLE = 0x01,
	RM_OPCODE_RC_SEND_LAST = 0x02,
	RM_OPCODE_RC_SEND_LAST_IMM = 0x03,
	RM_OPCODE_RC_SEND_ONLY = 0x04,
	RM_OPCODE_RC_SEND_ONLY_IMM = 0x05,
	RM_OPCODE_RC_RDMA_WRITE_FIRST = 0x06,
	RM_OPCODE_RC_RDMA_WRITE_MIDDLE = 0x07,
	RM_OPCODE_RC_RDMA_WRITE_LAST = 0x08,
	RM_OPCODE_RC_RDMA_WRITE_LAST_IMM = 0x09,
	RM_OPCODE_RC_RDMA_WRITE_ONLY = 0x0a,
	RM_OPCODE_RC_RDMA_WRITE_ONLY_IMM = 0x0b,
	RM_OPCODE_RC_RDMA_READ_REQUEST = 0x0c,
	RM_OPCODE_RC_RDMA_READ_RESPONSE_FIRST = 0x0d,
	RM_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE = 0x0e,
	RM_OPCODE_RC_RDMA_READ_RESPONSE_LAST = 0x0f,
	RM_OPCODE_RC_RDMA_READ_RESPONSE_ONLY = 0x10,
	RM_OPCODE_RC_ACKNOWLEDGE = 0x11,
	RM_OPCODE_RC_ATOMIC_ACKNOWLEDGE = 0x12,
	RM_OPCODE_RC_COMPARE_SWAP = 0x13,
	RM_OPCODE_RC_FETCH_ADD = 0x14,
	RM_OPCODE_RC_SEND_LAST_INV = 0x16,
	RM_OPCODE_RC_SEND_ONLY_INV = 0x17,
	RM_OPCODE_UD_SEND_ONLY = 0x64,
	RM_OPCODE_UD_SEND_ONLY_IMM = 0x65,
	RM_OPCODE_CNP = 0x81, /* the RoCEv2 Congestion Notification Packet */
};

/* Big-endian 24-bit field (DestQP, PSN, SrcQP) at p, host order. */
static __always_inline __u32 rm_be24(const __u8 *p)
{
	return ((__u32)p[0] << 16) | ((__u32)p[1] << 8) | p[2];
}

/* Fields of the 12 readable bytes at bth, in host order. */
static __always_inline __u8 rm_bth_tver(const __u8 *bth)
{
	return bth[RM_BTH_OFF_FLAGS] & RM_BTH_TVER_MASK;
}

static __always_inline __u8 rm_bth_padcnt(const __u8 *bth)
{
	return (bth[RM_BTH_OFF_FLAGS] >> RM_BTH_PADCNT_SHIFT) & RM_BTH_PADCNT_MASK;
}

static __always_inline __u16 rm_bth_pkey(const __u8 *bth)
{
	return ((__u16)bth[RM_BTH_OFF_PKEY] << 8) | bth[RM_BTH_OFF_PKEY + 1];
}

static __always_inline __u32 rm_bth_dest_qp(const __u8 *bth)
{
	return rm_be24(bth + RM_BTH_OFF_DEST_QP);
}

static __always_inline __u32 rm_bth_psn(const __u8 *bth)
{
	return rm_be24(bth + RM_BTH_OFF_PSN);
}

/* SrcQP of the 8 readable bytes of a DETH, host order. */
static __always_inline __u32 rm_deth_src_qp(const __u8 *deth)
{
	return rm_be24(deth + RM_DETH_OFF_SRC_QP);
}

/* The transport service of an opcode: one of enum rm_bth_transport. */
static __always_inline __u8 rm_opcode_transport(__u8 op)
{
	return op & RM_OPCODE_TRANSPORT_MASK;
}

/* RC responses: RDMA READ Response First..Only, Acknowledge, ATOMIC Acknowledge. */
static __always_inline int rm_opcode_is_rc_response(__u8 op)
{
	return op >= RM_OPCODE_RC_RDMA_READ_RESPONSE_FIRST && op <= RM_OPCODE_RC_ATOMIC_ACKNOWLEDGE;
}

/*
 * RC requests: every RC opcode that is not a response, the unassigned ones
 * (0x15, 0x18..0x1F) included: a requester sent them.
 */
static __always_inline int rm_opcode_is_rc_request(__u8 op)
{
	return rm_opcode_transport(op) == RM_TRANSPORT_RC && !rm_opcode_is_rc_response(op);
}

/* RC SEND and RDMA WRITE, First to Only with Immediate (0x00..0x0B). */
static __always_inline int rm_opcode_is_rc_send_or_write(__u8 op)
{
	return op <= RM_OPCODE_RC_RDMA_WRITE_ONLY_IMM;
}

/*
 * 1 when a DETH follows the BTH directly: the two UD opcodes (SEND Only,
 * SEND Only with Immediate). RD opcodes carry an RDETH before their DETH.
 */
static __always_inline int rm_opcode_has_deth(__u8 op)
{
	return op == RM_OPCODE_UD_SEND_ONLY || op == RM_OPCODE_UD_SEND_ONLY_IMM;
}

/*
 * Bytes of extended headers between the BTH and the payload of an RC SEND
 * or RDMA WRITE opcode ([IBPKT] "Operation -> Extended Header"): ImmDt,
 * RETH, or RETH + ImmDt; 0 for the others and for every other opcode.
 */
static __always_inline __u32 rm_opcode_send_write_ext_len(__u8 op)
{
	switch (op) {
	case RM_OPCODE_RC_SEND_LAST_IMM:
	case RM_OPCODE_RC_SEND_ONLY_IMM:
	case RM_OPCODE_RC_RDMA_WRITE_LAST_IMM:
		return RM_IMMDT_LEN;
	case RM_OPCODE_RC_RDMA_WRITE_FIRST:
	case RM_OPCODE_RC_RDMA_WRITE_ONLY:
		return RM_RETH_LEN;
	case RM_OPCODE_RC_RDMA_WRITE_ONLY_IMM:
		return RM_RETH_LEN + RM_IMMDT_LEN;
	default:
		return 0;
	}
}

/*
 * Bytes of extended headers between the BTH and the payload of an RC request
 * ([IBPKT] "Operation -> Extended Header"): the SEND and RDMA WRITE ones
 * above, RETH for RDMA READ Request, AtomicETH for Compare & Swap and Fetch
 * & Add, IETH for SEND Last / Only with Invalidate; 0 for the unassigned RC
 * request opcodes (0x15, 0x18..0x1F: nothing known must follow), for
 * responses and for every other transport.
 */
static __always_inline __u32 rm_opcode_rc_request_ext_len(__u8 op)
{
	switch (op) {
	case RM_OPCODE_RC_RDMA_READ_REQUEST:
		return RM_RETH_LEN;
	case RM_OPCODE_RC_COMPARE_SWAP:
	case RM_OPCODE_RC_FETCH_ADD:
		return RM_ATOMICETH_LEN;
	case RM_OPCODE_RC_SEND_LAST_INV:
	case RM_OPCODE_RC_SEND_ONLY_INV:
		return RM_IETH_LEN;
	default:
		return rm_opcode_is_rc_send_or_write(op) ? rm_opcode_send_write_ext_len(op) : 0;
	}
}

#endif /* ROCEMETER_BTH_H */
