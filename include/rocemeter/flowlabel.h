/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * flowlabel.h - the IPv6 Flow Label of [FLOWLABEL] ("A RoCEv2 Flow-Level Load
 * Balancing Method Based on the IPv6 Flow Label"): hash input, the four
 * CRC variants, optional mix and seed, the label, and the statistics of the
 * tc program. Static inline code compiled both into bpf/flowlabel.bpf.c and
 * into the host (the `flowlabel` subcommand, the tests): one definition.
 *
 * Hash input ([FLOWLABEL] "Construction of the Hash Input"), big-endian:
 *   DETH present (UD opcodes 0x64/0x65):
 *     Src_QP (24 bits, DETH bytes 5..7) || Dst_QP (24 bits, BTH bytes 5..7)
 *     || low 16 bits of the IPv6 source || low 16 bits of the destination = 80 bits
 *   otherwise:  Dst_QP || low16(src) || low16(dst) = 56 bits
 *
 * Variants ([FLOWLABEL] "Hash by CRC32 Algorithm"; see docs/flowlabel.md):
 *   RM_FL_LITERAL  the text taken literally: register 0xFFFFFFFF; per byte
 *                  XOR into the low 8 bits, then 8 times: test LSB, shift
 *                  right, XOR 0x04C11DB7 if it was 1; no final XOR (default)
 *   RM_FL_CRC32    CRC-32/ISO-HDLC (zlib's crc32)
 *   RM_FL_CRC32C   CRC-32C (Castagnoli)
 *   RM_FL_MPEG2    CRC-32/MPEG-2 (not reflected, no final XOR)
 * Options (off by default, not in the seed): a 32-bit seed XORed into the
 * initial register (init = 0xFFFFFFFF ^ seed), and a final non-linear mix
 * (the murmur3 32-bit finalizer) applied to the CRC result. The Flow Label
 * is the low 20 bits of the 32-bit result ("Flow Label Field Population").
 *
 * Two equivalent forms of each CRC: rm_fl_crc_bitwise() transcribes the
 * bit loop; rm_fl_crc_sliced() uses per-position tables built by
 * rm_fl_sliced_init() (the BPF program gets them in .rodata from its loader).
 */
#ifndef ROCEMETER_FLOWLABEL_H
#define ROCEMETER_FLOWLABEL_H

#include "types.h"
#include "bth.h"

#ifdef __clang__
#define RM_FL_UNROLL _Pragma("unroll")
#else
#define RM_FL_UNROLL _Pragma("GCC unroll 10")
#endif

enum rm_fl_variant {
	RM_FL_LITERAL = 0, /* [FLOWLABEL] text, literally (default) */
	RM_FL_CRC32 = 1,   /* CRC-32/ISO-HDLC, as zlib */
	RM_FL_CRC32C = 2,  /* CRC-32C */
	RM_FL_MPEG2 = 3,   /* CRC-32/MPEG-2 */
	RM_FL__VARIANTS,
};

#define RM_FL_INIT        0xFFFFFFFFu
#define RM_FL_POLY        0x04C11DB7u /* literal and MPEG-2 */
#define RM_FL_POLY_CRC32  0xEDB88320u /* 0x04C11DB7 bit-reversed */
#define RM_FL_POLY_CRC32C 0x82F63B78u /* 0x1EDC6F41 bit-reversed */
#define RM_FL_LABEL_MASK  0x000FFFFFu /* the Flow Label is 20 bits */

#define RM_FL_INPUT_MAX 10 /* bytes, with DETH (80 bits) */
#define RM_FL_INPUT_RC  7  /* bytes, without DETH (56 bits) */

/* Load-time choice of the hash (BPF: const volatile .rodata). */
struct rm_fl_params {
	__u32 variant; /* enum rm_fl_variant */
	__u32 mix;     /* 1: apply rm_fl_fmix32() to the CRC result */
	__u32 seed;    /* XORed into the initial register; 0 = the variant as specified */
};

/*
 * Build the hash input in `in` (at least RM_FL_INPUT_MAX bytes).
 * has_sqp: DETH present; sqp, dqp: 24-bit QPNs (host order);
 * src_low, dst_low: the last two bytes of the IPv6 source and destination
 * addresses as on the wire (low 16 bits, big-endian).
 * Returns the input length: RM_FL_INPUT_MAX or RM_FL_INPUT_RC.
 */
static __always_inline __u32 rm_fl_input(__u8 *in, int has_sqp, __u32 sqp, __u32 dqp, const __u8 *src_low,
					 const __u8 *dst_low)
{
	__u32 n = 0;

	if (has_sqp) {
		in[0] = (__u8)(sqp >> 16);
		in[1] = (__u8)(sqp >> 8);
		in[2] = (__u8)sqp;
		n = 3;
	}
	in[n + 0] = (__u8)(dqp >> 16);
	in[n + 1] = (__u8)(dqp >> 8);
	in[n + 2] = (__u8)dqp;
	in[n + 3] = src_low[0];
	in[n + 4] = src_low[1];
	in[n + 5] = dst_low[0];
	in[n + 6] = dst_low[1];
	return n + 7;
}

static __always_inline int rm_fl_reflected(__u32 variant)
{
	return variant != RM_FL_MPEG2; /* literal, CRC-32, CRC-32C shift right */
}

static __always_inline __u32 rm_fl_poly(__u32 variant)
{
	switch (variant) {
	case RM_FL_CRC32:
		return RM_FL_POLY_CRC32;
	case RM_FL_CRC32C:
		return RM_FL_POLY_CRC32C;
	default:
		return RM_FL_POLY; /* literal, MPEG-2 */
	}
}

static __always_inline __u32 rm_fl_final_xor(__u32 variant)
{
	return (variant == RM_FL_CRC32 || variant == RM_FL_CRC32C) ? 0xFFFFFFFFu : 0;
}

/* One byte through the bit loop (no init, no final XOR). */
static __always_inline __u32 rm_fl_byte_bitwise(__u32 variant, __u32 reg, __u8 b)
{
	__u32 poly = rm_fl_poly(variant);

	if (rm_fl_reflected(variant)) {
		reg ^= b; /* into the low 8 bits */
		for (int k = 0; k < 8; k++) {
			__u32 lsb = reg & 1;

			reg >>= 1;
			if (lsb)
				reg ^= poly;
		}
	} else {
		reg ^= (__u32)b << 24; /* into the high 8 bits */
		for (int k = 0; k < 8; k++) {
			__u32 msb = reg & 0x80000000u;

			reg <<= 1;
			if (msb)
				reg ^= poly;
		}
	}
	return reg;
}

/* murmur3's 32-bit finalizer: a bijective non-linear mix. */
static __always_inline __u32 rm_fl_fmix32(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85EBCA6Bu;
	h ^= h >> 13;
	h *= 0xC2B2AE35u;
	h ^= h >> 16;
	return h;
}

static __always_inline __u32 rm_fl_finish(const struct rm_fl_params *p, __u32 reg)
{
	reg ^= rm_fl_final_xor(p->variant);
	if (p->mix)
		reg = rm_fl_fmix32(reg);
	return reg;
}

/* 32-bit hash of in[0..len), bit by bit (the reference form). */
static __always_inline __u32 rm_fl_crc_bitwise(const struct rm_fl_params *p, const __u8 *in, __u32 len)
{
	__u32 reg = RM_FL_INIT ^ p->seed;

	for (__u32 i = 0; i < len && i < RM_FL_INPUT_MAX; i++)
		reg = rm_fl_byte_bitwise(p->variant, reg, in[i]);
	return rm_fl_finish(p, reg);
}

/*
 * Position tables ("slicing"): a CRC without its final XOR is affine in the
 * message bits, so for an n-byte input
 *     register = base[n] ^ tab[n-1][in[0]] ^ tab[n-2][in[1]] ^ ... ^ tab[0][in[n-1]]
 * where tab[k][b] is byte b followed by k zero bytes run through the bit
 * loop from a zero register, and base[n] is n zero bytes run from the
 * initial register (0xFFFFFFFF ^ seed). The lookups are independent of each
 * other, so the BPF program has no byte-serial dependency chain. Same
 * result as rm_fl_crc_bitwise() for every variant, seed and mix.
 */
struct rm_fl_sliced {
	__u32 base[RM_FL_INPUT_MAX + 1];
	__u32 tab[RM_FL_INPUT_MAX][256];
};

/* Fill *s for p's variant and seed (host: userspace loader, tests). */
static __always_inline void rm_fl_sliced_init(const struct rm_fl_params *p, struct rm_fl_sliced *s)
{
	__u32 reg = RM_FL_INIT ^ p->seed;

	for (__u32 n = 0; n <= RM_FL_INPUT_MAX; n++) {
		s->base[n] = reg;
		reg = rm_fl_byte_bitwise(p->variant, reg, 0);
	}
	for (__u32 b = 0; b < 256; b++) {
		reg = rm_fl_byte_bitwise(p->variant, 0, (__u8)b);
		for (__u32 k = 0; k < RM_FL_INPUT_MAX; k++) {
			s->tab[k][b] = reg;
			reg = rm_fl_byte_bitwise(p->variant, reg, 0);
		}
	}
}

/* 32-bit hash of in[0..len), len <= RM_FL_INPUT_MAX, with tables from rm_fl_sliced_init(p). */
static __always_inline __u32 rm_fl_crc_sliced(const struct rm_fl_params *p, const struct rm_fl_sliced *s,
					      const __u8 *in, __u32 len)
{
	__u32 reg;

	if (len > RM_FL_INPUT_MAX)
		len = RM_FL_INPUT_MAX;
	reg = s->base[len];
	RM_FL_UNROLL
	for (__u32 i = 0; i < RM_FL_INPUT_MAX; i++) {
		if (i >= len)
			break;
		reg ^= s->tab[len - 1 - i][in[i]];
	}
	return rm_fl_finish(p, reg);
}

static __always_inline __u32 rm_fl_label(__u32 hash)
{
	return hash & RM_FL_LABEL_MASK;
}

/*
 * A Flow Label of 0 means "no label" ([RFC6437]): written as such, it would
 * leave the connection without ECMP entropy (and a later hop could write its
 * own). A computed label of 0 is written as this substitute instead, counted
 * as zero_hash (docs/flowlabel.md "A computed label of 0"); one label in 2^20
 * collides with it, as any two labels may.
 */
#define RM_FL_ZERO_SUBSTITUTE 0x00001u

/* The label the program writes for a computed label (rm_fl_label()). */
static __always_inline __u32 rm_fl_label_written(__u32 label)
{
	return label ? label : RM_FL_ZERO_SUBSTITUTE;
}

/*
 * Statistics of the tc program: map `fl_stats`, per-CPU array of __u64
 * indexed by enum rm_fl_stat, pinned at /sys/fs/bpf/rocemeter/IFNAME/fl_stats.
 * Every frame the program sees is counted in exactly one entry, so the sum
 * is the number of frames. X(enum suffix, name in `status`, description).
 */
#define RM_FL_STATS(X)                                                                       \
	X(REWRITTEN_RC, "rewritten", "zero Flow Label set from Dst_QP (no DETH)")            \
	X(REWRITTEN_UD, "rewritten_ud", "zero Flow Label set from Src_QP and Dst_QP (DETH)") \
	X(LABEL_PRESENT, "label_present", "non-zero Flow Label arrived: left unchanged")     \
	X(ZERO_HASH, "zero_hash", "computed label was 0: substitute 0x00001 written")        \
	X(IPV4, "ipv4", "RoCEv2 over IPv4: passed untouched")                                \
	X(NOT_ROCEV2, "not_rocev2", "not IP/UDP 4791: passed untouched")                     \
	X(ROCEV1, "rocev1", "EtherType 0x8915: passed untouched")                            \
	X(FRAGMENT, "ip_fragment", "IP fragment: passed untouched")                          \
	X(UNSUP_ENCAP, "unsup_encap", "too many VLAN tags or IPv6 extension headers")        \
	X(MALFORMED_ETH, "malformed_eth", "truncated Ethernet or VLAN header")               \
	X(MALFORMED_IP, "malformed_ip", "truncated or inconsistent IP or extension header")  \
	X(MALFORMED_UDP, "malformed_udp", "truncated UDP header or bad UDP length")          \
	X(MALFORMED_BTH, "malformed_bth", "truncated BTH or BTH TVer != 0")                  \
	X(MALFORMED_DETH, "malformed_deth", "UD opcode without a complete 8-byte DETH")      \
	X(NOT_CONFIGURED, "not_configured", "CRC tables not loaded: passed untouched")

#define RM_FL_STAT_ENUM_(suffix, name, desc) RM_FL_STAT_##suffix,
enum rm_fl_stat {
	RM_FL_STATS(RM_FL_STAT_ENUM_) RM_FL_STAT__COUNT,
};
#undef RM_FL_STAT_ENUM_

#endif /* ROCEMETER_FLOWLABEL_H */
