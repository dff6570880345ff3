// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_flowlabel.c - include/rocemeter/flowlabel.h on the host: the
 * docs/flowlabel.md test vectors for every variant, in both the bitwise
 * and the sliced (table) form; the hash input layout of [FLOWLABEL] ("Construction of the
 * Hash Input"); rm_flowlabel_compute(); the name helpers. Expected values
 * come from docs/flowlabel.md and the seed's text, not from the code under test.
 * (Random inputs against zlib and Python references: selftests/system/test_flowlabel.py.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "rocemeter/flowlabel.h"
#include "flowlabel/flowlabel.h"

struct vector {
	const char *hex;
	uint32_t h[RM_FL__VARIANTS];     /* 32-bit results: literal, crc32, crc32c, mpeg2 */
	uint32_t label[RM_FL__VARIANTS]; /* 20-bit labels, as docs/flowlabel.md lists them */
};

/* docs/flowlabel.md "Test vectors" (verbatim). */
static const struct vector vectors[] = {
	{ "123456ABCDEF00010002",
	  { 0x0136CB3E, 0x8DD783D7, 0xEB0A2BCC, 0xBE61753D },
	  { 0x6CB3E, 0x783D7, 0xA2BCC, 0x1753D } },
	{ "ABCDEF00010002",
	  { 0x065193A9, 0x30FE0E95, 0xC1DC2A9A, 0xA7DDD356 },
	  { 0x193A9, 0xE0E95, 0xC2A9A, 0xDD356 } },
	{ "00010000100020",
	  { 0x00E6A83B, 0x71788F63, 0x0411F220, 0x1F85BAAE },
	  { 0x6A83B, 0x88F63, 0x1F220, 0x5BAAE } },
	{ "00000100000100100020",
	  { 0x025D1D19, 0x3508C2E0, 0xC2EF11B4, 0x06EC6BEF },
	  { 0xD1D19, 0x8C2E0, 0xF11B4, 0xC6BEF } },
};

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	unsigned v;

	for (; s[0] && s[1]; s += 2) {
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static void test_vectors_bitwise(void **state)
{
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		uint8_t in[16];
		size_t n = unhex(vectors[i].hex, in);

		for (uint32_t v = 0; v < RM_FL__VARIANTS; v++) {
			struct rm_fl_params p = { .variant = v };
			uint32_t h = rm_fl_crc_bitwise(&p, in, (uint32_t)n);

			assert_int_equal(h, vectors[i].h[v]);
			assert_int_equal(rm_fl_label(h), vectors[i].label[v]);
		}
	}
}

static void test_vectors_sliced(void **state)
{
	static struct rm_fl_sliced s;

	for (uint32_t v = 0; v < RM_FL__VARIANTS; v++) {
		struct rm_fl_params p = { .variant = v };

		rm_fl_sliced_init(&p, &s);
		assert_int_not_equal(s.tab[0][1], 0); /* the BPF program's "tables loaded" check */
		for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
			uint8_t in[16];
			size_t n = unhex(vectors[i].hex, in);
			uint32_t h = rm_fl_crc_sliced(&p, &s, in, (uint32_t)n);

			assert_int_equal(h, vectors[i].h[v]);
			assert_int_equal(rm_fl_label(h), vectors[i].label[v]);
		}
	}
}

/* Sliced == bitwise for random inputs of every length, variant, seed and mix. */
static void test_sliced_equals_bitwise(void **state)
{
	static struct rm_fl_sliced s;
	uint32_t x = 0x12345678; /* xorshift32 */

	for (int round = 0; round < 64; round++) {
		struct rm_fl_params p = { .variant = (uint32_t)round % RM_FL__VARIANTS,
					  .mix = (round / 4) & 1,
					  .seed = round < 8 ? 0 : x };

		rm_fl_sliced_init(&p, &s);
		for (int k = 0; k < 200; k++) {
			uint8_t in[RM_FL_INPUT_MAX];
			uint32_t len = (uint32_t)k % (RM_FL_INPUT_MAX + 1);

			for (int i = 0; i < RM_FL_INPUT_MAX; i++) {
				x ^= x << 13;
				x ^= x >> 17;
				x ^= x << 5;
				in[i] = (uint8_t)x;
			}
			assert_int_equal(rm_fl_crc_sliced(&p, &s, in, len), rm_fl_crc_bitwise(&p, in, len));
		}
	}
}

/* Well-known check values ("123456789") of the standard variants. */
static void test_check_values(void **state)
{
	const uint8_t *s = (const uint8_t *)"123456789";
	struct rm_fl_params crc32 = { .variant = RM_FL_CRC32 }, crc32c = { .variant = RM_FL_CRC32C },
			    mpeg2 = { .variant = RM_FL_MPEG2 };

	/* The inputs here are 9 bytes; the hash API caps at RM_FL_INPUT_MAX = 10. */
	assert_int_equal(rm_fl_crc_bitwise(&crc32, s, 9), 0xCBF43926);
	assert_int_equal(rm_fl_crc_bitwise(&crc32c, s, 9), 0xE3069283);
	assert_int_equal(rm_fl_crc_bitwise(&mpeg2, s, 9), 0x0376E6E7);
}

/* [FLOWLABEL]'s byte split: Hash_Input = 0x123456ABCDEF00010002 from its fields. */
static void test_input_layout(void **state)
{
	static const uint8_t src[2] = { 0x00, 0x01 }, dst[2] = { 0x00, 0x02 };
	static const uint8_t ud[10] = { 0x12, 0x34, 0x56, 0xAB, 0xCD, 0xEF, 0x00, 0x01, 0x00, 0x02 };
	uint8_t in[RM_FL_INPUT_MAX];

	memset(in, 0xee, sizeof(in));
	assert_int_equal(rm_fl_input(in, 1, 0x123456, 0xABCDEF, src, dst), 10);
	assert_memory_equal(in, ud, 10);
	memset(in, 0xee, sizeof(in));
	assert_int_equal(rm_fl_input(in, 0, 0x123456, 0xABCDEF, src, dst), 7);
	assert_memory_equal(in, ud + 3, 7);
	assert_true(rm_opcode_has_deth(0x64));
	assert_true(rm_opcode_has_deth(0x65));
	assert_false(rm_opcode_has_deth(0x04)); /* RC SEND only */
	assert_false(rm_opcode_has_deth(0x0a)); /* RC RDMA WRITE only */
	assert_false(rm_opcode_has_deth(0x81)); /* CNP */
}

/* rm_flowlabel_compute(): addresses and QPNs in, docs/flowlabel.md labels out. */
static void test_compute(void **state)
{
	struct in6_addr a1, a2, a10, a20;
	uint32_t h;

	assert_int_equal(inet_pton(AF_INET6, "2001:db8:1::1", &a1), 1);
	assert_int_equal(inet_pton(AF_INET6, "fd00:9::2", &a2), 1);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::ffff:10", &a10), 1);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::20", &a20), 1);
	for (uint32_t v = 0; v < RM_FL__VARIANTS; v++) {
		struct rm_fl_params p = { .variant = v };

		assert_int_equal(rm_flowlabel_compute(&p, &a1, &a2, 1, 0x123456, 0xABCDEF, &h), vectors[0].label[v]);
		assert_int_equal(h, vectors[0].h[v]);
		assert_int_equal(rm_flowlabel_compute(&p, &a1, &a2, 0, 0x123456, 0xABCDEF, &h), vectors[1].label[v]);
		assert_int_equal(rm_flowlabel_compute(&p, &a10, &a20, 0, 0, 0x000100, NULL), vectors[2].label[v]);
		assert_int_equal(rm_flowlabel_compute(&p, &a10, &a20, 1, 0x000001, 0x000001, NULL),
				 vectors[3].label[v]);
	}
}

/* Seed 0 and mix off are the plain variants; each option changes the result. */
static void test_options_change_result(void **state)
{
	uint8_t in[16];
	size_t n = unhex(vectors[0].hex, in);
	struct rm_fl_params plain = { .variant = RM_FL_LITERAL };
	struct rm_fl_params seeded = { .variant = RM_FL_LITERAL, .seed = 0x5eed };
	struct rm_fl_params mixed = { .variant = RM_FL_LITERAL, .mix = 1 };
	/* murmur3 fmix32 of 0x0136CB3E worked by hand from its definition:
	 * h ^= h>>16; h *= 0x85ebca6b; h ^= h>>13; h *= 0xc2b2ae35; h ^= h>>16 */
	uint32_t x = 0x0136CB3E;

	x ^= x >> 16;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	assert_int_equal(rm_fl_crc_bitwise(&plain, in, (uint32_t)n), 0x0136CB3E);
	assert_int_equal(rm_fl_crc_bitwise(&mixed, in, (uint32_t)n), x);
	assert_int_not_equal(rm_fl_crc_bitwise(&seeded, in, (uint32_t)n), 0x0136CB3E);
}

static void test_names(void **state)
{
	assert_int_equal(rm_flowlabel_variant_from_name("literal"), RM_FL_LITERAL);
	assert_int_equal(rm_flowlabel_variant_from_name("crc32"), RM_FL_CRC32);
	assert_int_equal(rm_flowlabel_variant_from_name("crc32c"), RM_FL_CRC32C);
	assert_int_equal(rm_flowlabel_variant_from_name("mpeg2"), RM_FL_MPEG2);
	assert_int_equal(rm_flowlabel_variant_from_name("CRC32"), -1);
	assert_int_equal(rm_flowlabel_variant_from_name(""), -1);
	assert_int_equal(rm_flowlabel_variant_from_name(NULL), -1);
	assert_string_equal(rm_flowlabel_variant_name(RM_FL_MPEG2), "mpeg2");
	assert_string_equal(rm_flowlabel_variant_name(99), "?");
	assert_int_equal(rm_flowlabel_direction_from_name("ingress"), RM_FL_INGRESS);
	assert_int_equal(rm_flowlabel_direction_from_name("egress"), RM_FL_EGRESS);
	assert_int_equal(rm_flowlabel_direction_from_name("both"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_bitwise),       cmocka_unit_test(test_vectors_sliced),
		cmocka_unit_test(test_sliced_equals_bitwise), cmocka_unit_test(test_check_values),
		cmocka_unit_test(test_input_layout),          cmocka_unit_test(test_compute),
		cmocka_unit_test(test_options_change_result), cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
