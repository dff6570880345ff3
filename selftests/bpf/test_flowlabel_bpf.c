// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_flowlabel_bpf.c - bpf/flowlabel.bpf.c through BPF_PROG_TEST_RUN
 * (root): the docs/flowlabel.md test vectors for every variant inside
 * crafted IPv6 RoCEv2 frames (RC: Dst_QP only; UD: DETH Src_QP), the rules
 * of [FLOWLABEL] (non-zero label never changed, version and Traffic Class
 * untouched), IPv4 / non-RoCEv2 / truncated frames untouched and counted,
 * VLAN tags and extension headers, and the statistics map. Expected labels
 * are those of docs/flowlabel.md; expected frames are the input with only the label bytes
 * changed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rocemeter/meter.h" /* RM_VLAN_DEPTH_MAX, RM_IPV6_EXT_MAX */
#include "flowlabel/flowlabel.h"
#include "flowlabel.skel.h"
#include "frames.h"
#include "selftest.h"

#define IP6_OFF(nvlan) (14 + 4 * (nvlan))

struct fx {
	struct flowlabel *skel[RM_FL__VARIANTS];
	uint64_t base[RM_FL__VARIANTS][RM_FL_STAT__COUNT];
};

/* docs/flowlabel.md labels: [vector][variant]; vectors as in tests/unit/test_flowlabel.c. */
static const uint32_t design_label[4][RM_FL__VARIANTS] = {
	{ 0x6CB3E, 0x783D7, 0xA2BCC, 0x1753D }, /* 123456ABCDEF00010002 */
	{ 0x193A9, 0xE0E95, 0xC2A9A, 0xDD356 }, /* ABCDEF00010002 */
	{ 0x6A83B, 0x88F63, 0x1F220, 0x5BAAE }, /* 00010000100020 */
	{ 0xD1D19, 0x8C2E0, 0xF11B4, 0xC6BEF }, /* 00000100000100100020 */
};

static int setup(void **state)
{
	static struct fx f;
	char err[256];

	for (uint32_t v = 0; v < RM_FL__VARIANTS; v++) {
		struct rm_flowlabel_opts o = { .direction = RM_FL_EGRESS, .variant = v };

		f.skel[v] = rm_flowlabel_open_load(&o, err, sizeof(err));
		if (!f.skel[v]) {
			fprintf(stderr, "# %s\n", err);
			return -1;
		}
	}
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	for (int v = 0; f && v < RM_FL__VARIANTS; v++)
		flowlabel__destroy(f->skel[v]);
	return 0;
}

static int prog_fd(struct fx *f, int v)
{
	return bpf_program__fd(f->skel[v]->progs.rocemeter_fl);
}

/* Counters gained since the last call, for variant v. */
static void stats_delta(struct fx *f, int v, uint64_t *d)
{
	uint64_t now[RM_FL_STAT__COUNT];

	assert_int_equal(rm_fl_stats_sum(bpf_map__fd(f->skel[v]->maps.fl_stats), now), 0);
	for (int k = 0; k < RM_FL_STAT__COUNT; k++) {
		d[k] = now[k] - f->base[v][k];
		f->base[v][k] = now[k];
	}
}

/* Exactly one frame, counted in `stat`. */
static void expect_one(struct fx *f, int v, int stat)
{
	uint64_t d[RM_FL_STAT__COUNT];

	stats_delta(f, v, d);
	for (int k = 0; k < RM_FL_STAT__COUNT; k++)
		assert_int_equal(d[k], k == stat ? 1 : 0);
}

/* Run; the output must equal the input except the Flow Label, which must be `label`. */
static void run_expect(struct fx *f, int v, const uint8_t *in, size_t len, size_t ip_off, uint32_t label)
{
	uint8_t out[2048], exp[2048];
	size_t olen;
	uint32_t ret;

	assert_int_equal(rm_frame_test_run(prog_fd(f, v), in, len, out, sizeof(out), &olen, &ret), 0);
	assert_int_equal(ret, 0); /* TC_ACT_OK */
	assert_int_equal(olen, len);
	memcpy(exp, in, len);
	if (ip_off) {
		exp[ip_off + 1] = (uint8_t)((exp[ip_off + 1] & 0xf0) | (label >> 16));
		exp[ip_off + 2] = (uint8_t)(label >> 8);
		exp[ip_off + 3] = (uint8_t)label;
	}
	assert_memory_equal(out, exp, len);
}

static void run_untouched(struct fx *f, int v, const uint8_t *in, size_t len)
{
	run_expect(f, v, in, len, 0, 0);
}

static void addr_low(uint8_t *a, uint16_t low)
{
	memcpy(a, "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 14);
	a[14] = (uint8_t)(low >> 8);
	a[15] = (uint8_t)low;
}

/* The four docs/flowlabel.md vectors as frames, every variant. */
static void test_design_vectors(void **state)
{
	struct fx *f = *state;
	struct {
		uint8_t opcode;
		uint32_t sqp, dqp;
		uint16_t src, dst;
	} fr[4] = {
		{ 0x64, 0x123456, 0xABCDEF, 0x0001, 0x0002 }, /* UD SEND only */
		{ 0x04, 0, 0xABCDEF, 0x0001, 0x0002 },        /* RC SEND only */
		{ 0x0a, 0, 0x000100, 0x0010, 0x0020 },        /* RC RDMA WRITE only */
		{ 0x65, 0x000001, 0x000001, 0x0010, 0x0020 }, /* UD SEND only with immediate */
	};

	for (int v = 0; v < RM_FL__VARIANTS; v++) {
		for (int i = 0; i < 4; i++) {
			struct rm_frame_spec s = {
				.opcode = fr[i].opcode, .sqp = fr[i].sqp, .dqp = fr[i].dqp, .payload = 16
			};
			uint8_t buf[256];
			size_t len;

			addr_low(s.src, fr[i].src);
			addr_low(s.dst, fr[i].dst);
			len = rm_frame_build(buf, sizeof(buf), &s);
			assert_true(len > 0);
			run_expect(f, v, buf, len, IP6_OFF(0), design_label[i][v]);
			expect_one(f, v,
				   rm_opcode_has_deth(fr[i].opcode) ? RM_FL_STAT_REWRITTEN_UD
								    : RM_FL_STAT_REWRITTEN_RC);
		}
	}
}

/* Version and Traffic Class survive; only the low 20 bits change. */
static void test_traffic_class_kept(void **state)
{
	struct fx *f = *state;
	struct rm_frame_spec s = { .opcode = 0x04, .dqp = 0xABCDEF, .tclass = 0xAB, .payload = 8 };
	uint8_t buf[256], out[256];
	size_t len, olen;
	uint32_t ret;

	addr_low(s.src, 1);
	addr_low(s.dst, 2);
	len = rm_frame_build(buf, sizeof(buf), &s);
	assert_int_equal(rm_frame_test_run(prog_fd(f, RM_FL_LITERAL), buf, len, out, sizeof(out), &olen, &ret), 0);
	assert_int_equal(out[14], 0x6A);        /* version 6, TC high nibble A */
	assert_int_equal(out[15] & 0xf0, 0xB0); /* TC low nibble B */
	assert_int_equal(rm_frame_flow_label(out + 14), 0x193A9);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_REWRITTEN_RC);
}

/* [FLOWLABEL] rule 2: a non-zero arriving label is never changed. */
static void test_nonzero_label_untouched(void **state)
{
	struct fx *f = *state;
	uint32_t labels[] = { 1, 0x10000, 0xFFFFF, 0x193A9, 0x00100 };

	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		struct rm_frame_spec s = { .opcode = 0x04, .dqp = 0xABCDEF, .label = labels[i] };
		uint8_t buf[256];
		size_t len;

		addr_low(s.src, 1);
		addr_low(s.dst, 2);
		len = rm_frame_build(buf, sizeof(buf), &s);
		run_untouched(f, RM_FL_CRC32, buf, len);
		expect_one(f, RM_FL_CRC32, RM_FL_STAT_LABEL_PRESENT);
	}
}

static void test_ipv4_untouched(void **state)
{
	struct fx *f = *state;
	struct rm_frame_spec s = { .ipv4 = 1, .opcode = 0x04, .dqp = 0xABCDEF, .payload = 32 };
	uint8_t buf[256];
	size_t len;

	memcpy(s.src, "\xc0\x00\x02\x01", 4);
	memcpy(s.dst, "\xc0\x00\x02\x02", 4);
	len = rm_frame_build(buf, sizeof(buf), &s);
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_IPV4);
}

static void test_not_rocev2_untouched(void **state)
{
	struct fx *f = *state;
	struct rm_frame_spec s = { .opcode = 0x04, .dqp = 0xABCDEF, .payload = 32 };
	uint8_t buf[256];
	size_t len;

	addr_low(s.src, 1);
	addr_low(s.dst, 2);
	len = rm_frame_build(buf, sizeof(buf), &s);
	rm_put16(buf + 14 + 40 + 2, 4792); /* UDP destination port */
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_NOT_ROCEV2);
	rm_put16(buf + 14 + 40 + 2, 4791);
	buf[14 + 6] = 6; /* next header TCP */
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_NOT_ROCEV2);
	buf[14 + 6] = 17;
	rm_put16(buf + 12, 0x8915); /* RoCEv1 */
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_ROCEV1);
}

/* Every truncation of an IPv6 UD frame: untouched, counted as malformed. */
static void test_truncated(void **state)
{
	struct fx *f = *state;
	struct rm_frame_spec s = { .opcode = 0x64, .sqp = 0x123456, .dqp = 0xABCDEF };
	uint8_t buf[256];
	size_t len;

	addr_low(s.src, 1);
	addr_low(s.dst, 2);
	len = rm_frame_build(buf, sizeof(buf), &s); /* 14 + 40 + 8 + 12 + 8 + 4 */
	/* This kernel's BPF_PROG_TEST_RUN refuses IPv6 frames shorter than Ethernet + IPv6 header. */
	for (size_t cut = 14 + 40; cut < len; cut++) {
		run_untouched(f, RM_FL_LITERAL, buf, cut);
		/* payload_len no longer fits: the IPv6 header is inconsistent */
		expect_one(f, RM_FL_LITERAL, RM_FL_STAT_MALFORMED_IP);
	}
	/* Consistent lengths but no room for the DETH after the BTH (UDP length 8 + 12 + 4). */
	s.no_deth = 1;
	len = rm_frame_build(buf, sizeof(buf), &s);
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_MALFORMED_DETH);
	s.payload = 3; /* 7 bytes after the BTH: still one short of a DETH */
	len = rm_frame_build(buf, sizeof(buf), &s);
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_MALFORMED_DETH);
	/* UDP length too small for a BTH */
	s.no_deth = 0;
	s.payload = 0;
	len = rm_frame_build(buf, sizeof(buf), &s);
	rm_put16(buf + 14 + 40 + 4, 8 + 11);
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_MALFORMED_UDP);
	/* BTH TVer != 0 */
	len = rm_frame_build(buf, sizeof(buf), &s);
	buf[14 + 40 + 8 + 1] = 0x01;
	run_untouched(f, RM_FL_LITERAL, buf, len);
	expect_one(f, RM_FL_LITERAL, RM_FL_STAT_MALFORMED_BTH);
}

/* 802.1Q tags and IPv6 destination-options chains are walked. */
static void test_vlan_and_ext_headers(void **state)
{
	struct fx *f = *state;

	for (int nvlan = 0; nvlan <= 2; nvlan++) {
		for (int next = 0; next <= RM_IPV6_EXT_MAX; next++) {
			struct rm_frame_spec s = { .nvlan = nvlan,
						   .n_dstopts = next,
						   .opcode = 0x64,
						   .sqp = 0x123456,
						   .dqp = 0xABCDEF,
						   .payload = 20 };
			uint8_t buf[512];
			size_t len;

			addr_low(s.src, 1);
			addr_low(s.dst, 2);
			len = rm_frame_build(buf, sizeof(buf), &s);
			run_expect(f, RM_FL_MPEG2, buf, len, IP6_OFF(nvlan), design_label[0][RM_FL_MPEG2]);
			expect_one(f, RM_FL_MPEG2, RM_FL_STAT_REWRITTEN_UD);
		}
	}
	{
		/* Beyond the parser's limits: untouched and counted. */
		struct rm_frame_spec s = { .nvlan = RM_VLAN_DEPTH_MAX + 1, .opcode = 0x04, .dqp = 1 };
		uint8_t buf[512];
		size_t len;

		addr_low(s.src, 1);
		addr_low(s.dst, 2);
		len = rm_frame_build(buf, sizeof(buf), &s);
		run_untouched(f, RM_FL_MPEG2, buf, len);
		expect_one(f, RM_FL_MPEG2, RM_FL_STAT_UNSUP_ENCAP);
		s.nvlan = 0;
		s.n_dstopts = RM_IPV6_EXT_MAX + 1;
		len = rm_frame_build(buf, sizeof(buf), &s);
		run_untouched(f, RM_FL_MPEG2, buf, len);
		expect_one(f, RM_FL_MPEG2, RM_FL_STAT_UNSUP_ENCAP);
	}
}

/* A program loaded without its CRC table leaves everything alone. */
static void test_unconfigured(void **state)
{
	struct flowlabel *skel = flowlabel__open();
	struct rm_frame_spec s = { .opcode = 0x04, .dqp = 0xABCDEF };
	uint8_t buf[256], out[256];
	uint64_t sums[RM_FL_STAT__COUNT];
	size_t len, olen;
	uint32_t ret;

	assert_non_null(skel);
	assert_int_equal(flowlabel__load(skel), 0);
	addr_low(s.src, 1);
	addr_low(s.dst, 2);
	len = rm_frame_build(buf, sizeof(buf), &s);
	assert_int_equal(
		rm_frame_test_run(bpf_program__fd(skel->progs.rocemeter_fl), buf, len, out, sizeof(out), &olen, &ret),
		0);
	assert_memory_equal(out, buf, len);
	assert_int_equal(rm_fl_stats_sum(bpf_map__fd(skel->maps.fl_stats), sums), 0);
	assert_int_equal(sums[RM_FL_STAT_NOT_CONFIGURED], 1);
	flowlabel__destroy(skel);
}

int main(void)
{
	rm_selftest_require_root("BPF_PROG_TEST_RUN");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_design_vectors),          cmocka_unit_test(test_traffic_class_kept),
		cmocka_unit_test(test_nonzero_label_untouched), cmocka_unit_test(test_ipv4_untouched),
		cmocka_unit_test(test_not_rocev2_untouched),    cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_vlan_and_ext_headers),    cmocka_unit_test(test_unconfigured),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
