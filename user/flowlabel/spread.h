/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * spread.h - the ECMP spread model of `rocemeter flowlabel spread`
 * (docs/flowlabel.md "Spread over ECMP paths"): which of K equal-cost paths
 * each RoCEv2 connection takes when a switch hashes a given key with a given
 * hash function, with the Flow Label as it arrived or as the tc program
 * writes it ([FLOWLABEL]; the label comes from rm_flowlabel_compute(), the
 * program's own code), and per class the paths used, the most loaded path's
 * share, the colliding pairs and Jain's fairness index. No I/O but the FILE
 * given.
 *
 * Key bytes (network order, concatenated; addresses are 4 bytes for IPv4,
 * 16 for IPv6):
 *   5tuple        src || dst || protocol (1 byte, 17) || UDP source port || UDP destination port
 *   5tuple+label  the 5-tuple || Flow Label (3 bytes, the 20-bit value right-aligned)
 *   addr+label    src || dst || Flow Label (3 bytes)
 * Switch hash functions (a 16-bit value h; the path is h mod K):
 *   crc16-ccitt   CRC-16/CCITT-FALSE: polynomial 0x1021, register 0xFFFF, MSB first, no final XOR
 *   crc32-lo      the low 16 bits of CRC-32/ISO-HDLC (zlib's crc32)
 *   crc32-hi      its high 16 bits
 *   xor16         the XOR of the key's big-endian 16-bit words (an odd last byte is a word's high byte)
 * Labels: "arriving" (the connection's own; 0 when the host sets none, as
 * [FLOWLABEL] asks) or one of the program's hash variants (literal, crc32,
 * crc32c, mpeg2): the label the program writes (a non-zero arriving label
 * is kept, [FLOWLABEL] rule 2; a computed 0 is written as
 * RM_FL_ZERO_SUBSTITUTE), with the program's --mix and --seed if given. An IPv4 connection is labelled as if its
 * addresses were IPv4-mapped IPv6 ones (the same low 16 bits).
 */
#ifndef ROCEMETER_SPREAD_H
#define ROCEMETER_SPREAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "rocemeter/flowlabel.h"

/* X(suffix, name, description): what the switch hashes. */
#define RM_SPREAD_KEYS(X)                                                         \
	X(5TUPLE, "5tuple", "addresses, protocol, UDP ports")                     \
	X(5TUPLE_LABEL, "5tuple+label", "addresses, protocol, ports, Flow Label") \
	X(ADDR_LABEL, "addr+label", "addresses, Flow Label")

/* X(suffix, name, description): the switch's hash function. */
#define RM_SPREAD_HASHES(X)                                      \
	X(CRC16_CCITT, "crc16-ccitt", "CRC-16/CCITT-FALSE")      \
	X(CRC32_LO, "crc32-lo", "low 16 bits of CRC-32 (zlib)")  \
	X(CRC32_HI, "crc32-hi", "high 16 bits of CRC-32 (zlib)") \
	X(XOR16, "xor16", "XOR fold of the key into 16 bits")

#define RM_SPREAD_KEY_ENUM_(suffix, name, desc) RM_SPREAD_KEY_##suffix,
enum rm_spread_key { RM_SPREAD_KEYS(RM_SPREAD_KEY_ENUM_) RM_SPREAD_KEY__COUNT };
#undef RM_SPREAD_KEY_ENUM_
#define RM_SPREAD_HASH_ENUM_(suffix, name, desc) RM_SPREAD_HASH_##suffix,
enum rm_spread_hash { RM_SPREAD_HASHES(RM_SPREAD_HASH_ENUM_) RM_SPREAD_HASH__COUNT };
#undef RM_SPREAD_HASH_ENUM_

/* Label sources: RM_SPREAD_ARRIVING, then 1 + enum rm_fl_variant (the program's label). */
#define RM_SPREAD_ARRIVING     0
#define RM_SPREAD_LABEL__COUNT (1 + RM_FL__VARIANTS)
#define RM_SPREAD_PATHS_MAX    4096
#define RM_SPREAD_KEY_MAX      40 /* bytes: two IPv6 addresses, protocol, ports, label */

/* One connection as a switch's hash sees it. */
struct rm_spread_conn {
	uint8_t family;  /* 4 or 6 */
	uint8_t src[16]; /* network order; IPv4 in the first 4 bytes */
	uint8_t dst[16];
	uint16_t sport; /* UDP source port, host order */
	uint16_t dport; /* UDP destination port (4791) */
	uint32_t dqp;   /* BTH DestQP, 24 bits */
	uint32_t sqp;   /* DETH Src_QP, 24 bits, when has_sqp */
	int has_sqp;
	uint32_t label_in;                      /* Flow Label as it arrives, 20 bits (0: none) */
	uint64_t frames;                        /* frames seen at all its points (captures), 0 for generated QPs */
	uint32_t points;                        /* observation points that saw it (captures), 0 for generated QPs */
	uint32_t label[RM_SPREAD_LABEL__COUNT]; /* by label source: rm_spread_conn_labels() */
};

/* What one class (key, label source, hash function) does to the connections. */
struct rm_spread_class {
	int key, label, hash; /* enum rm_spread_key, label source (ignored for 5tuple), enum rm_spread_hash */
	uint32_t paths_used, max_load;
	uint64_t collisions; /* pairs of connections on one path: sum of load * (load - 1) / 2 */
	double max_share;    /* max_load / connections */
	double jain;         /* (sum load)^2 / (K * sum load^2); 1 = even */
	uint32_t *load;      /* [K] connections per path */
	uint32_t *path;      /* [n] the path of each connection */
};

/* Name of key k, hash h, label source l ("arriving" or a variant's name); "?" out of range. */
const char *rm_spread_key_name(int k);
const char *rm_spread_hash_name(int h);
const char *rm_spread_label_name(int l);
/* The reverse; -1 if unknown. */
int rm_spread_key_from_name(const char *s);
int rm_spread_hash_from_name(const char *s);
int rm_spread_label_from_name(const char *s);

/*
 * The Flow Label label source l gives connection c (the program's rule; see
 * above), with the program's options mix and seed of opt (its variant is l's).
 */
uint32_t rm_spread_label(const struct rm_spread_conn *c, int l, const struct rm_fl_params *opt);
/* Fill c->label[] with rm_spread_label() of every source (before the key bytes are taken). */
void rm_spread_conn_labels(struct rm_spread_conn *c, const struct rm_fl_params *opt);

/* The key bytes of class (key, label source) for c (labels filled) into out[RM_SPREAD_KEY_MAX]; the length. */
size_t rm_spread_key_bytes(const struct rm_spread_conn *c, int key, int label, uint8_t *out);

/* The 16-bit switch hash h of key bytes in[0..len). */
uint16_t rm_spread_hash16(int h, const uint8_t *in, size_t len);

/*
 * Fill cls for n connections over k paths (1..RM_SPREAD_PATHS_MAX) with
 * cls->key, label and hash set: load and path allocated (free with
 * rm_spread_class_free()). 0, or -ENOMEM.
 */
int rm_spread_class_run(struct rm_spread_class *cls, const struct rm_spread_conn *conns, size_t n, uint32_t k);
void rm_spread_class_free(struct rm_spread_class *cls);

/* Paths a uniformly random assignment of n connections to k paths uses on average: k (1 - (1 - 1/k)^n). */
double rm_spread_expected_used(size_t n, uint32_t k);

/* Text: a header line, one line per class; verbose: each class's path per connection too. */
void rm_spread_write_text(FILE *f, const struct rm_spread_conn *conns, size_t n, uint32_t k,
			  const struct rm_spread_class *cls, size_t ncls, int verbose);

/* JSON (docs/json.md "flowlabel spread"): new reference, NULL when out of memory. */
json_t *rm_spread_json(const struct rm_spread_conn *conns, size_t n, uint32_t k, const struct rm_spread_class *cls,
		       size_t ncls);

#endif /* ROCEMETER_SPREAD_H */
