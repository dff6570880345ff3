// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_ipfix.c - the IPFIX encoder (user/export/ipfix.c), the exporter's ID
 * allocation (user/export/ids.c), the report JSON Lines (user/common/report_json.c)
 * and the rdmaSequenceFlags text (user/common/report_text.c).
 * Expected octets are written out by hand from RFC 7011 and [SEQOBS]
 * ("Export Profile and Template": field order and lengths), never produced
 * by the encoder. Decoding by independent tools (ipfixDump, tshark) is in
 * selftests/system/test_ipfix_decoders.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "export/ipfix.h"
#include "export/ids.h"
#include "common/report_json.h"
#include "common/report_text.h"

/* PEN 32473 = 0x7ED9. */
#define PEN_BYTES              0x00, 0x00, 0x7e, 0xd9
#define STD(id_hi, id_lo, len) id_hi, id_lo, 0x00, len
#define ENT(id, len)           0x80, id, 0x00, len, PEN_BYTES

/* Field Specifiers after the addresses, common to both families (seed order). */
#define TAIL_FIELDS                                                                                                   \
	ENT(0x01, 4), ENT(0x02, 2), STD(0x00, 0x98, 8), STD(0x00, 0x99, 8), ENT(0x03, 8), ENT(0x04, 8), ENT(0x05, 4), \
		ENT(0x06, 2), ENT(0x07, 8), ENT(0x08, 8), ENT(0x09, 8), ENT(0x0a, 8), ENT(0x0b, 4), ENT(0x0c, 8),     \
		ENT(0x0d, 8), ENT(0x0e, 8)

/* The whole templates message, export time 0x5F5E1000, domain 0x01020304, no VLAN namespace. */
static const uint8_t expect_templates[] = {
	/* Message header: version 10, length 334, export time, sequence 0, domain */
	0x00,
	0x0a,
	0x01,
	0x4e,
	0x5f,
	0x5e,
	0x10,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x01,
	0x02,
	0x03,
	0x04,
	/* Template Set: ID 2, length 4 + 2 * 136 = 276 */
	0x00,
	0x02,
	0x01,
	0x14,
	/* Template 256, 19 fields: observationPointId, sourceIPv4Address, destinationIPv4Address, ... */
	0x01,
	0x00,
	0x00,
	0x13,
	STD(0x00, 0x8a, 8),
	STD(0x00, 0x08, 4),
	STD(0x00, 0x0c, 4),
	TAIL_FIELDS,
	/* Template 257, 19 fields: ..., sourceIPv6Address, destinationIPv6Address, ... */
	0x01,
	0x01,
	0x00,
	0x13,
	STD(0x00, 0x8a, 8),
	STD(0x00, 0x1b, 16),
	STD(0x00, 0x1c, 16),
	TAIL_FIELDS,
	/* Options Template Set: ID 3, length 18; Template 260, 2 fields, 1 scope: templateId(145)/2, flowKeyIndicator(173)/8 */
	0x00,
	0x03,
	0x00,
	0x12,
	0x01,
	0x04,
	0x00,
	0x02,
	0x00,
	0x01,
	0x00,
	0x91,
	0x00,
	0x02,
	0x00,
	0xad,
	0x00,
	0x08,
	/* Options Data Set 260, length 24: fields 1,2,3,4,5,8 are keys -> 0b10011111 = 0x9f */
	0x01,
	0x04,
	0x00,
	0x18,
	0x01,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x9f,
	0x01,
	0x01,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x00,
	0x9f,
};

static void fill_values(struct rm_report *r)
{
	r->observation_point_id = 0x0102030405060708ULL;
	r->dest_qp = 0x00abcdef;
	r->pkey = 0xfffe;
	r->flow_start_ms = 0x0000018bcfe56be7ULL;
	r->flow_end_ms = 0x0000018bcfe56be8ULL;
	r->epoch_id = 0xfedcba9876543210ULL;
	r->report_id = 0x1122334455667788ULL;
	r->window = 0x00400000;
	r->flags = 0x0021;
	r->skipped = 0x1000000000000007ULL;
	r->filled = 0x2000000000000003ULL;
	r->expired = 0x3000000000000002ULL;
	r->abandoned = 0x4000000000000001ULL;
	r->pending = 0x89abcdef;
	r->repeated = 0x5000000000000005ULL;
	r->requests = 0x6000000000000006ULL;
	r->unclassified_late = 0x7000000000000007ULL;
}

/* Record octets after the addresses for fill_values(). */
#define TAIL_VALUES                                                                                                   \
	0x00, 0xab, 0xcd, 0xef, 0xff, 0xfe, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x6b, 0xe7, 0x00, 0x00, 0x01, 0x8b,   \
		0xcf, 0xe5, 0x6b, 0xe8, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, 0x11, 0x22, 0x33, 0x44, 0x55, \
		0x66, 0x77, 0x88, 0x00, 0x40, 0x00, 0x00, 0x00, 0x21, 0x10, 0, 0, 0, 0, 0, 0, 0x07, 0x20, 0, 0, 0, 0, \
		0, 0, 0x03, 0x30, 0, 0, 0, 0, 0, 0, 0x02, 0x40, 0, 0, 0, 0, 0, 0, 0x01, 0x89, 0xab, 0xcd, 0xef, 0x50, \
		0, 0, 0, 0, 0, 0, 0x05, 0x60, 0, 0, 0, 0, 0, 0, 0x06, 0x70, 0, 0, 0, 0, 0, 0, 0x07

static const uint8_t expect_v4_msg[] = {
	/* header: length 16 + 4 + 120 = 140, export time 0x5F5E1001, sequence 2, domain */
	0x00,
	0x0a,
	0x00,
	0x8c,
	0x5f,
	0x5e,
	0x10,
	0x01,
	0x00,
	0x00,
	0x00,
	0x02,
	0x01,
	0x02,
	0x03,
	0x04,
	/* Data Set 256, length 124 */
	0x01,
	0x00,
	0x00,
	0x7c,
	0x01,
	0x02,
	0x03,
	0x04,
	0x05,
	0x06,
	0x07,
	0x08, /* observationPointId */
	192,
	0,
	2,
	1,
	198,
	51,
	100,
	2, /* addresses */
	TAIL_VALUES,
};

static const uint8_t expect_v6_msg[] = {
	/* header: length 16 + 4 + 144 = 164, sequence 3 */
	0x00,
	0x0a,
	0x00,
	0xa4,
	0x5f,
	0x5e,
	0x10,
	0x01,
	0x00,
	0x00,
	0x00,
	0x03,
	0x01,
	0x02,
	0x03,
	0x04,
	/* Data Set 257, length 148 */
	0x01,
	0x01,
	0x00,
	0x94,
	0x01,
	0x02,
	0x03,
	0x04,
	0x05,
	0x06,
	0x07,
	0x08,
	0x20,
	0x01,
	0x0d,
	0xb8,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0x01, /* 2001:db8::1 */
	0x20,
	0x01,
	0x0d,
	0xb8,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0,
	0xff,
	0xff,
	0,
	0x02, /* 2001:db8::ffff:2 */
	TAIL_VALUES,
};

static void make_v4(struct rm_report *r)
{
	memset(r, 0, sizeof(*r));
	fill_values(r);
	r->family = 4;
	inet_pton(AF_INET, "192.0.2.1", r->src);
	inet_pton(AF_INET, "198.51.100.2", r->dst);
}

static void make_v6(struct rm_report *r)
{
	memset(r, 0, sizeof(*r));
	fill_values(r);
	r->family = 6;
	inet_pton(AF_INET6, "2001:db8::1", r->src);
	inet_pton(AF_INET6, "2001:db8::ffff:2", r->dst);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void test_templates_bytes(void **state)
{
	struct rm_ipfix_encoder e;
	uint8_t buf[1024];
	size_t len;

	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 0x01020304, 0);
	assert_int_equal(sizeof(expect_templates), 334);
	len = rm_ipfix_templates_msg(&e, 0x5f5e1000, buf, sizeof(buf));
	assert_int_equal(len, 334);
	assert_memory_equal(buf, expect_templates, sizeof(expect_templates));
	/* Too small a buffer: nothing written, nothing counted. */
	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 1, 0);
	assert_int_equal(rm_ipfix_templates_msg(&e, 0, buf, 333), 0);
	assert_int_equal(e.sequence, 0);
}

static void test_record_lengths(void **state)
{
	struct rm_ipfix_encoder e;

	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 1, 0);
	assert_int_equal(rm_ipfix_template_record_len(&e, 4), 4 + 5 * 4 + 14 * 8);
	assert_int_equal(rm_ipfix_template_record_len(&e, 6), 136);
	assert_int_equal(rm_ipfix_data_record_len(&e, 4), 120);
	assert_int_equal(rm_ipfix_data_record_len(&e, 6), 144);
	assert_int_equal(rm_ipfix_data_record_len(&e, 5), 0);
	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 1, 1);
	assert_int_equal(rm_ipfix_template_record_len(&e, 4), 4 + 7 * 4 + 14 * 8);
	assert_int_equal(rm_ipfix_template_record_len(&e, 6), 144);
	assert_int_equal(rm_ipfix_data_record_len(&e, 4), 124);
	assert_int_equal(rm_ipfix_data_record_len(&e, 6), 148);
}

static void test_data_record_bytes(void **state)
{
	struct rm_ipfix_encoder e;
	struct rm_report r[2];
	uint8_t buf[2048];
	size_t len, used;

	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 0x01020304, 0);
	assert_int_equal(rm_ipfix_templates_msg(&e, 0x5f5e1000, buf, sizeof(buf)), 334);
	make_v4(&r[0]);
	make_v6(&r[1]);
	/* One report per message: n = 1. */
	len = rm_ipfix_data_msg(&e, 0x5f5e1001, &r[0], 1, &used, buf, sizeof(buf));
	assert_int_equal(used, 1);
	assert_int_equal(len, sizeof(expect_v4_msg));
	assert_memory_equal(buf, expect_v4_msg, sizeof(expect_v4_msg));
	len = rm_ipfix_data_msg(&e, 0x5f5e1001, &r[1], 1, &used, buf, sizeof(buf));
	assert_int_equal(used, 1);
	assert_int_equal(len, sizeof(expect_v6_msg));
	assert_memory_equal(buf, expect_v6_msg, sizeof(expect_v6_msg));
}

static void test_vlan_templates(void **state)
{
	struct rm_ipfix_encoder e;
	struct rm_report r;
	uint8_t buf[2048];
	size_t len, used;
	/* Template 258: observationPointId, sourceIPv4Address, destinationIPv4Address, vlanId(58), dot1qCustomerVlanId(245) */
	static const uint8_t head258[] = { 0x01,
					   0x02,
					   0x00,
					   0x15,
					   STD(0x00, 0x8a, 8),
					   STD(0x00, 0x08, 4),
					   STD(0x00, 0x0c, 4),
					   STD(0x00, 0x3a, 2),
					   STD(0x00, 0xf5, 2),
					   ENT(0x01, 4) };
	/* Flow Keys: fields 1-7 and 10 -> 0x27f */
	static const uint8_t keys[] = { 0x01, 0x04, 0x00, 0x18, 0x01, 0x02, 0, 0, 0, 0, 0,    0,
					0x02, 0x7f, 0x01, 0x03, 0,    0,    0, 0, 0, 0, 0x02, 0x7f };

	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 7, 1);
	len = rm_ipfix_templates_msg(&e, 1, buf, sizeof(buf));
	assert_int_equal(len, 16 + 4 + 2 * 144 + 18 + 24);
	assert_int_equal(be16(buf + 2), len);
	assert_int_equal(be16(buf + 18), 4 + 2 * 144);
	assert_memory_equal(buf + 20, head258, sizeof(head258));
	assert_int_equal(be16(buf + 20 + 144), RM_TID_IPV6_VLAN);
	assert_memory_equal(buf + len - 24, keys, sizeof(keys));

	make_v4(&r);
	r.vlan[0] = 100;
	r.vlan[1] = 4094;
	r.has_vlan_ns = 1;
	len = rm_ipfix_data_msg(&e, 1, &r, 1, &used, buf, sizeof(buf));
	assert_int_equal(len, 16 + 4 + 124);
	assert_int_equal(be16(buf + 16), RM_TID_IPV4_VLAN);
	/* After header, set header, observationPointId and two IPv4 addresses: 0x0064, 0x0ffe, then the QP. */
	assert_int_equal(be16(buf + 20 + 16), 100);
	assert_int_equal(be16(buf + 20 + 18), 4094);
	assert_int_equal(be32(buf + 20 + 20), 0x00abcdef);
}

static void test_sequence_numbers(void **state)
{
	struct rm_ipfix_encoder e;
	struct rm_report r[10];
	uint8_t buf[4096];
	size_t used;
	int i;

	for (i = 0; i < 10; i++)
		make_v4(&r[i]);
	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 1, 0);
	assert_int_not_equal(rm_ipfix_templates_msg(&e, 0, buf, sizeof(buf)), 0);
	assert_int_equal(be32(buf + 8), 0);
	/* 3, then 5, then 1 records: Sequence Numbers 2 (after the 2 Flow Keys records), 5, 10. */
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 3, &used, buf, sizeof(buf)), 16 + 4 + 3 * 120);
	assert_int_equal(be32(buf + 8), 2);
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 5, &used, buf, sizeof(buf)), 16 + 4 + 5 * 120);
	assert_int_equal(be32(buf + 8), 5);
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 1, &used, buf, sizeof(buf)), 16 + 4 + 120);
	assert_int_equal(be32(buf + 8), 10);
	assert_int_equal(e.sequence, 11);
	/* New Transport Session. */
	rm_ipfix_reset(&e);
	assert_int_not_equal(rm_ipfix_templates_msg(&e, 0, buf, sizeof(buf)), 0);
	assert_int_equal(be32(buf + 8), 0);
	rm_ipfix_data_msg(&e, 0, r, 2, &used, buf, sizeof(buf));
	assert_int_equal(be32(buf + 8), 2);
	/* Modulo 2^32. */
	e.sequence = 0xffffffffu;
	rm_ipfix_data_msg(&e, 0, r, 3, &used, buf, sizeof(buf));
	assert_int_equal(be32(buf + 8), 0xffffffffu);
	assert_int_equal(e.sequence, 2);
}

static void test_mixed_families_sets(void **state)
{
	struct rm_ipfix_encoder e;
	struct rm_report r[4];
	uint8_t buf[4096];
	size_t len, used;

	make_v4(&r[0]);
	make_v4(&r[1]);
	make_v6(&r[2]);
	make_v4(&r[3]);
	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 1, 0);
	len = rm_ipfix_data_msg(&e, 0, r, 4, &used, buf, sizeof(buf));
	assert_int_equal(used, 4);
	assert_int_equal(len, 16 + (4 + 240) + (4 + 144) + (4 + 120));
	assert_int_equal(be16(buf + 16), 256);
	assert_int_equal(be16(buf + 18), 244);
	assert_int_equal(be16(buf + 16 + 244), 257);
	assert_int_equal(be16(buf + 18 + 244), 148);
	assert_int_equal(be16(buf + 16 + 244 + 148), 256);
	assert_int_equal(be16(buf + 18 + 244 + 148), 124);
}

/* Walk a message's sets; return the number of Data Records, fail on any inconsistency. */
static size_t walk_message(const uint8_t *m, size_t len)
{
	size_t off = 16, recs = 0;

	assert_int_equal(be16(m), 10);
	assert_int_equal(be16(m + 2), len);
	while (off < len) {
		uint16_t id = be16(m + off), sl = be16(m + off + 2);
		size_t rl = id == 256 ? 120 : id == 257 ? 144 : 0;

		assert_true(rl != 0);
		assert_true(sl > 4 && off + sl <= len);
		assert_int_equal((sl - 4) % rl, 0);
		recs += (sl - 4) / rl;
		off += sl;
	}
	assert_int_equal(off, len);
	return recs;
}

static void test_max_message_size(void **state)
{
	enum { N = 2000 };
	struct rm_report *r = calloc(N, sizeof(*r));
	uint8_t *buf = malloc(200000);
	struct rm_ipfix_encoder e;
	size_t done = 0, len, used, msgs = 0;
	uint32_t expect_seq = 0;
	int i, pass;

	assert_non_null(r);
	assert_non_null(buf);
	for (pass = 0; pass < 3; pass++) {
		/* pass 0: all IPv4, 1: all IPv6, 2: families alternating (one set per record). */
		for (i = 0; i < N; i++) {
			if (pass == 0 || (pass == 2 && i % 2 == 0))
				make_v4(&r[i]);
			else
				make_v6(&r[i]);
		}
		rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 1, 0);
		done = 0;
		msgs = 0;
		expect_seq = 0;
		while (done < N) {
			len = rm_ipfix_data_msg(&e, 0, r + done, N - done, &used, buf, 200000);
			assert_true(len > 0 && len <= 65535);
			assert_int_equal(be32(buf + 8), expect_seq);
			assert_int_equal(walk_message(buf, len), used);
			if (pass == 0 && msgs == 0) {
				/* (65535 - 16 - 4) / 120 = 545 records, 65420 octets. */
				assert_int_equal(used, 545);
				assert_int_equal(len, 65420);
			}
			if (pass == 1 && msgs == 0) {
				/* (65535 - 20) / 144 = 454 records, 65396 octets. */
				assert_int_equal(used, 454);
				assert_int_equal(len, 65396);
			}
			expect_seq += used;
			done += used;
			msgs++;
		}
		assert_int_equal(done, N);
		assert_int_equal(e.sequence, N);
		if (pass == 0)
			assert_int_equal(msgs, 4); /* 545 + 545 + 545 + 365 */
	}
	free(r);
	free(buf);
}

static void test_data_msg_errors(void **state)
{
	struct rm_ipfix_encoder e;
	struct rm_report r[3];
	uint8_t buf[1024];
	size_t used = 99, len;

	rm_ipfix_init(&e, RM_IPFIX_DEFAULT_PEN, 1, 0);
	make_v4(&r[0]);
	make_v4(&r[1]);
	make_v4(&r[2]);
	errno = 0;
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 0, &used, buf, sizeof(buf)), 0);
	assert_int_equal(used, 0);
	assert_int_equal(errno, ENODATA);
	/* 139 octets: one IPv4 record needs 140. */
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 1, &used, buf, 139), 0);
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(e.sequence, 0);
	/* 260 octets: one record fits (140), two need 260 = 16 + 4 + 240. */
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 3, &used, buf, 259), 140);
	assert_int_equal(used, 1);
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 3, &used, buf, 260), 260);
	assert_int_equal(used, 2);
	/* A bad family: first report -> EINVAL; later report -> the message ends before it. */
	r[1].family = 5;
	r[0].family = 0;
	assert_int_equal(rm_ipfix_data_msg(&e, 0, r, 3, &used, buf, sizeof(buf)), 0);
	assert_int_equal(errno, EINVAL);
	r[0].family = 4;
	len = rm_ipfix_data_msg(&e, 0, r, 3, &used, buf, sizeof(buf));
	assert_int_equal(len, 140);
	assert_int_equal(used, 1);
}

/* ---- rm_ids ---- */

static void key_of(struct rm_ctx_key *k, uint8_t last, uint32_t qp)
{
	memset(k, 0, sizeof(*k));
	k->family = 4;
	k->src[0] = 10;
	k->src[3] = last;
	k->dst[0] = 10;
	k->dst[3] = 200;
	k->dest_qp = qp;
	k->pkey = 0xffff;
}

static void assign(struct rm_ids *ids, const struct rm_ctx_key *k, uint32_t gen, int final, uint64_t ep, uint64_t rep)
{
	uint64_t e = 0, r = 0;

	assert_int_equal(rm_ids_assign(ids, k, gen, final, &e, &r), 0);
	assert_int_equal(e, ep);
	assert_int_equal(r, rep);
}

static void test_ids(void **state)
{
	struct rm_ids *ids = rm_ids_new();
	struct rm_ctx_key a, b, c, a2;

	assert_non_null(ids);
	key_of(&a, 1, 17);
	key_of(&b, 2, 17);
	key_of(&c, 1, 18);
	assign(ids, &a, 1, 0, 1, 1); /* first epoch ID is 1 (nonzero) */
	assign(ids, &a, 1, 0, 1, 2);
	assign(ids, &b, 1, 0, 2, 1); /* across contexts: increasing */
	assign(ids, &c, 1, 0, 3, 1);
	assign(ids, &a, 1, 0, 1, 3);
	assign(ids, &a, 2, 0, 4, 1); /* next local generation = new epoch */
	assert_int_equal(rm_ids_count(ids), 4);
	/* A copy of the key: the same context. */
	a2 = a;
	assign(ids, &a2, 1, 1, 1, 4); /* final: assigned, then forgotten */
	assert_int_equal(rm_ids_count(ids), 3);
	assign(ids, &a, 1, 0, 5, 1); /* never reused: a fresh ID */
	/* VLAN and family are part of the key. */
	a2 = a;
	a2.vlan[0] = 5;
	assign(ids, &a2, 1, 0, 6, 1);
	a2 = a;
	a2.family = 6;
	assign(ids, &a2, 1, 0, 7, 1);
	/* So is the observation point (a mirror session's). */
	a2 = a;
	a2.obs = 3;
	assign(ids, &a2, 1, 0, 8, 1);
	/* Final on the first report: allocated and forgotten at once. */
	assign(ids, &b, 9, 1, 9, 1);
	assign(ids, &b, 1, 0, 2, 2);
	/* New Transport Session. */
	rm_ids_reset(ids);
	assert_int_equal(rm_ids_count(ids), 0);
	assign(ids, &b, 1, 0, 1, 1);
	assign(ids, &a, 1, 0, 2, 1);
	rm_ids_free(ids);
}

static void test_ids_exhaustion(void **state)
{
	struct rm_ids *ids = rm_ids_new();
	struct rm_ctx_key a, b, c;
	uint64_t e = 77, r = 77;

	key_of(&a, 1, 1);
	key_of(&b, 2, 1);
	key_of(&c, 3, 1);
	rm_ids_set_limit(ids, 2);
	assign(ids, &a, 1, 0, 1, 1);
	assign(ids, &a, 1, 0, 1, 2);
	/* Report ID 3 would exceed the limit. */
	assert_int_equal(rm_ids_assign(ids, &a, 1, 0, &e, &r), -1);
	assert_int_equal(e, 77);
	assign(ids, &b, 1, 0, 2, 1);
	/* Epoch ID 3 would exceed the limit; nothing allocated. */
	assert_int_equal(rm_ids_assign(ids, &c, 1, 0, &e, &r), -1);
	assert_int_equal(rm_ids_count(ids), 2);
	rm_ids_free(ids);
}

/* A report the exporter refused was never serialized: its IDs go back (a
 * first report forgets its epoch; a later one returns its report ID), and an
 * epoch ID is never handed out twice once a later one is in use. */
static void test_ids_unassign(void **state)
{
	struct rm_ids *ids = rm_ids_new();
	struct rm_ctx_key a, b, c, d;

	key_of(&a, 1, 1);
	key_of(&b, 2, 1);
	key_of(&c, 3, 1);
	key_of(&d, 4, 1);
	assign(ids, &a, 1, 0, 1, 1);
	assign(ids, &b, 1, 0, 2, 1);
	rm_ids_unassign(ids, &b, 1, 0, 2, 1); /* B's first report refused */
	assert_int_equal(rm_ids_count(ids), 1);
	assign(ids, &b, 1, 0, 2, 1); /* the next one is B's first */
	assign(ids, &a, 1, 0, 1, 2);
	rm_ids_unassign(ids, &a, 1, 0, 1, 2); /* A's second refused: no gap */
	assign(ids, &a, 1, 0, 1, 2);
	assign(ids, &c, 1, 0, 3, 1);
	assign(ids, &d, 1, 0, 4, 1);
	rm_ids_unassign(ids, &c, 1, 0, 3, 1); /* not the latest epoch ID: 3 stays used */
	assign(ids, &c, 1, 0, 5, 1);
	rm_ids_unassign(ids, &d, 1, 0, 4, 7); /* not the latest assignment: nothing */
	assign(ids, &d, 1, 0, 4, 2);
	assign(ids, &d, 1, 1, 4, 3);          /* final: forgotten */
	rm_ids_unassign(ids, &d, 1, 1, 4, 3); /* a refused final changes nothing */
	assign(ids, &d, 1, 0, 6, 1);          /* after its final, the same (key, generation) is a new epoch */
	rm_ids_free(ids);
}

/* ---- JSON Lines ---- */

static void test_json_write(void **state)
{
	struct rm_report r;
	char *text = NULL;
	size_t size = 0;
	FILE *f;

	memset(&r, 0, sizeof(r));
	r.family = 6;
	inet_pton(AF_INET6, "2001:db8::1", r.src);
	inet_pton(AF_INET6, "2001:db8::ffff:2", r.dst);
	r.observation_point_id = 7;
	r.dest_qp = 0xabcdef;
	r.pkey = 0xffff;
	r.flow_start_ms = 1700000000123ULL;
	r.flow_end_ms = 1700000000456ULL;
	r.epoch_id = 18446744073709551615ULL;
	r.report_id = 2;
	r.window = 4;
	r.flags = 0x21;
	r.skipped = 4;
	r.expired = 1;
	r.abandoned = 3;
	r.requests = 3;
	f = open_memstream(&text, &size);
	assert_non_null(f);
	rm_report_write_json(f, &r);
	fclose(f);
	assert_string_equal(text, "{\"observationPointId\":7,\"sourceIPv6Address\":\"2001:db8::1\","
				  "\"destinationIPv6Address\":\"2001:db8::ffff:2\",\"rdmaDestinationQP\":11259375,"
				  "\"rdmaPartitionKey\":65535,\"flowStartMilliseconds\":1700000000123,"
				  "\"flowEndMilliseconds\":1700000000456,\"rdmaSequenceEpochId\":18446744073709551615,"
				  "\"rdmaSequenceReportId\":2,\"rdmaSequenceWindow\":4,\"rdmaSequenceFlags\":33,"
				  "\"flag_names\":[\"finalEpoch\",\"generationUnverified\"],"
				  "\"skippedPsnTotalCount\":4,\"filledPsnTotalCount\":0,\"expiredPsnTotalCount\":1,"
				  "\"abandonedPsnTotalCount\":3,\"pendingPsnCount\":0,\"repeatedPsnTotalCount\":0,"
				  "\"requestPacketTotalCount\":3,\"unclassifiedLatePacketTotalCount\":0}\n");
	free(text);
}

static void test_json_roundtrip(void **state)
{
	struct rm_report r, back;
	char *text = NULL, err[200];
	size_t size = 0;
	FILE *f;

	make_v4(&r);
	/* Values up to 2^63 - 1 (the JSON library's integer limit). */
	r.epoch_id = 0x7fffffffffffffffULL;
	r.skipped = r.filled = r.expired = r.abandoned = r.repeated = r.requests = r.unclassified_late = 12345;
	r.observation_point_id = 99;
	r.report_id = 1;
	r.vlan[0] = 10;
	r.vlan[1] = 20;
	r.has_vlan_ns = 1;
	f = open_memstream(&text, &size);
	rm_report_write_json(f, &r);
	fclose(f);
	assert_non_null(strstr(text, "\"sourceIPv4Address\":\"192.0.2.1\""));
	assert_non_null(strstr(text, "\"vlanId\":10,\"dot1qCustomerVlanId\":20"));
	assert_int_equal(rm_report_parse_json(text, &back, err, sizeof(err)), 0);
	assert_memory_equal(&r, &back, sizeof(r));
	free(text);
}

static void expect_parse_error(const char *text, const char *needle)
{
	struct rm_report r;
	char err[200] = "";

	assert_int_equal(rm_report_parse_json(text, &r, err, sizeof(err)), -1);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
}

#define J_TAIL                                                                                  \
	"\"rdmaDestinationQP\":1,\"flowStartMilliseconds\":3,"                                  \
	"\"flowEndMilliseconds\":4,\"rdmaSequenceEpochId\":5,\"rdmaSequenceReportId\":6,"       \
	"\"rdmaSequenceWindow\":7,\"rdmaSequenceFlags\":8,\"skippedPsnTotalCount\":9,"          \
	"\"filledPsnTotalCount\":10,\"expiredPsnTotalCount\":11,\"abandonedPsnTotalCount\":12," \
	"\"pendingPsnCount\":13,\"repeatedPsnTotalCount\":14,\"requestPacketTotalCount\":15,"   \
	"\"unclassifiedLatePacketTotalCount\":16"

static void test_json_parse_errors(void **state)
{
	struct rm_report r;
	char err[200];

	assert_int_equal(rm_report_parse_json("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.4\","
					      "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL
					      ",\"rdmaPartitionKey\":2}",
					      &r, err, sizeof(err)),
			 0);
	assert_int_equal(r.family, 4);
	assert_int_equal(r.dst[3], 8);
	assert_int_equal(r.unclassified_late, 16);
	assert_int_equal(r.has_vlan_ns, 0);
	/* flag_names, when given, names the bits of rdmaSequenceFlags (8 = stateExhaustion). */
	assert_int_equal(rm_report_parse_json("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.4\","
					      "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL
					      ",\"rdmaPartitionKey\":2,"
					      "\"flag_names\":[\"stateExhaustion\"]}",
					      &r, err, sizeof(err)),
			 0);
	expect_parse_error("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.4\","
			   "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL ",\"rdmaPartitionKey\":2,"
			   "\"flag_names\":[\"finalEpoch\"]}",
			   "flag_names");
	expect_parse_error("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.4\"," J_TAIL
			   ",\"rdmaPartitionKey\":2}",
			   "destinationIPv4Address");
	expect_parse_error("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.4\","
			   "\"destinationIPv6Address\":\"::1\"," J_TAIL ",\"rdmaPartitionKey\":2}",
			   "mixed");
	expect_parse_error("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.400\","
			   "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL ",\"rdmaPartitionKey\":2}",
			   "sourceIPv4Address");
	expect_parse_error("{\"observationPointId\":-1,\"sourceIPv4Address\":\"1.2.3.4\","
			   "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL ",\"rdmaPartitionKey\":2}",
			   "out of range");
	expect_parse_error("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.4\","
			   "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL ",\"rdmaPartitionKey\":65536}",
			   "rdmaPartitionKey");
	expect_parse_error("{\"observationPointId\":0,\"sourceIPv4Address\":\"1.2.3.4\",\"bogus\":1,"
			   "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL ",\"rdmaPartitionKey\":2}",
			   "unknown key \"bogus\"");
	expect_parse_error("{\"observationPointId\":\"7\",\"sourceIPv4Address\":\"1.2.3.4\","
			   "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL ",\"rdmaPartitionKey\":2}",
			   "not an integer");
	expect_parse_error("{\"observationPointId\":0,\"vlanId\":3,\"sourceIPv4Address\":\"1.2.3.4\","
			   "\"destinationIPv4Address\":\"5.6.7.8\"," J_TAIL ",\"rdmaPartitionKey\":2}",
			   "go together");
	expect_parse_error("[1,2]", "not a JSON object");
	expect_parse_error("{\"observationPointId\":", "JSON error");
}

/* Names and masks from [SEQOBS] "Qualification Flags" (Defined Masks), written out here. */
static void assert_flags_text(uint16_t flags, const char *expect)
{
	char buf[160];

	memset(buf, 'x', sizeof(buf));
	rm_flags_to_text(flags, buf, sizeof(buf));
	assert_string_equal(buf, expect);
}

static void test_flags_text(void **state)
{
	char small[12];

	assert_flags_text(0, "");
	assert_flags_text(0x0001, "finalEpoch");
	assert_flags_text(0x0021, "finalEpoch,generationUnverified");
	assert_flags_text(0x003f, "finalEpoch,profileViolation,captureDiscontinuity,stateExhaustion,"
				  "serialDiscontinuity,generationUnverified");
	/* Unassigned bits: one more item, their mask. */
	assert_flags_text(0x0040, "0x0040");
	assert_flags_text(0x8061, "finalEpoch,generationUnverified,0x8040");
	assert_flags_text(0xffff, "finalEpoch,profileViolation,captureDiscontinuity,stateExhaustion,"
				  "serialDiscontinuity,generationUnverified,0xffc0");
	assert_string_equal(rm_flag_name(0x0010), "serialDiscontinuity");
	assert_null(rm_flag_name(0x0040));
	assert_null(rm_flag_name(0x0003));
	/* A short buffer holds a terminated prefix. */
	rm_flags_to_text(0x0021, small, sizeof(small));
	assert_string_equal(small, "finalEpoch,");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_templates_bytes),
		cmocka_unit_test(test_record_lengths),
		cmocka_unit_test(test_data_record_bytes),
		cmocka_unit_test(test_vlan_templates),
		cmocka_unit_test(test_sequence_numbers),
		cmocka_unit_test(test_mixed_families_sets),
		cmocka_unit_test(test_max_message_size),
		cmocka_unit_test(test_data_msg_errors),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_ids_exhaustion),
		cmocka_unit_test(test_ids_unassign),
		cmocka_unit_test(test_json_write),
		cmocka_unit_test(test_json_roundtrip),
		cmocka_unit_test(test_json_parse_errors),
		cmocka_unit_test(test_flags_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
