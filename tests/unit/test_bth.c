// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_bth.c - include/rocemeter/bth.h on the host: every one of the 256
 * opcodes against [IBPKT]'s "BTH Opcode master table" and "Operation ->
 * Extended Header" (the expected sets are written out here from [IBPKT]'s
 * text), and the BTH / DETH field accessors on [IBPKT]'s example BTH.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "rocemeter/bth.h"

/* [IBPKT], transport prefixes: RC 0x00-0x1F, UC 0x20-0x3F, RD 0x40-0x5F, UD 0x60-0x7F, CNP 0x80-0x9F, XRC 0xA0-0xBF. */
static void test_transport(void **state)
{
	static const struct {
		unsigned int first, last, transport;
	} ranges[] = {
		{ 0x00, 0x1f, RM_TRANSPORT_RC }, { 0x20, 0x3f, RM_TRANSPORT_UC },  { 0x40, 0x5f, RM_TRANSPORT_RD },
		{ 0x60, 0x7f, RM_TRANSPORT_UD }, { 0x80, 0x9f, RM_TRANSPORT_CNP }, { 0xa0, 0xbf, RM_TRANSPORT_XRC },
	};

	assert_int_equal(RM_TRANSPORT_RC, 0x00);
	assert_int_equal(RM_TRANSPORT_UC, 0x20);
	assert_int_equal(RM_TRANSPORT_RD, 0x40);
	assert_int_equal(RM_TRANSPORT_UD, 0x60);
	assert_int_equal(RM_TRANSPORT_CNP, 0x80);
	assert_int_equal(RM_TRANSPORT_XRC, 0xa0);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		for (unsigned int op = ranges[i].first; op <= ranges[i].last; op++)
			assert_int_equal(rm_opcode_transport((uint8_t)op), ranges[i].transport);
}

/* The opcode values, as [IBPKT]'s master table lists them (RC) plus UD SEND and the CNP. */
static void test_opcode_values(void **state)
{
	static const struct {
		int name;
		int value;
	} table[] = {
		{ RM_OPCODE_RC_SEND_FIRST, 0x00 },
		{ RM_OPCODE_RC_SEND_MIDDLE, 0x01 },
		{ RM_OPCODE_RC_SEND_LAST, 0x02 },
		{ RM_OPCODE_RC_SEND_LAST_IMM, 0x03 },
		{ RM_OPCODE_RC_SEND_ONLY, 0x04 },
		{ RM_OPCODE_RC_SEND_ONLY_IMM, 0x05 },
		{ RM_OPCODE_RC_RDMA_WRITE_FIRST, 0x06 },
		{ RM_OPCODE_RC_RDMA_WRITE_MIDDLE, 0x07 },
		{ RM_OPCODE_RC_RDMA_WRITE_LAST, 0x08 },
		{ RM_OPCODE_RC_RDMA_WRITE_LAST_IMM, 0x09 },
		{ RM_OPCODE_RC_RDMA_WRITE_ONLY, 0x0A },
		{ RM_OPCODE_RC_RDMA_WRITE_ONLY_IMM, 0x0B },
		{ RM_OPCODE_RC_RDMA_READ_REQUEST, 0x0C },
		{ RM_OPCODE_RC_RDMA_READ_RESPONSE_FIRST, 0x0D },
		{ RM_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE, 0x0E },
		{ RM_OPCODE_RC_RDMA_READ_RESPONSE_LAST, 0x0F },
		{ RM_OPCODE_RC_RDMA_READ_RESPONSE_ONLY, 0x10 },
		{ RM_OPCODE_RC_ACKNOWLEDGE, 0x11 },
		{ RM_OPCODE_RC_ATOMIC_ACKNOWLEDGE, 0x12 },
		{ RM_OPCODE_RC_COMPARE_SWAP, 0x13 },
		{ RM_OPCODE_RC_FETCH_ADD, 0x14 },
		{ RM_OPCODE_RC_SEND_LAST_INV, 0x16 },
		{ RM_OPCODE_RC_SEND_ONLY_INV, 0x17 },
		{ RM_OPCODE_UD_SEND_ONLY, 0x64 },
		{ RM_OPCODE_UD_SEND_ONLY_IMM, 0x65 },
		{ RM_OPCODE_CNP, 0x81 },
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		assert_int_equal(table[i].name, table[i].value);
}

/*
 * RC responses are READ Response First/Middle/Last/Only, Acknowledge and
 * ATOMIC Acknowledge (0x0D..0x12); every other RC opcode is a request;
 * SEND and RDMA WRITE are 0x00..0x0B. No opcode of another transport is
 * either.
 */
static void test_rc_classes(void **state)
{
	for (unsigned int op = 0; op < 256; op++) {
		int rc = op < 0x20;
		int response = op >= 0x0D && op <= 0x12;

		assert_int_equal(rm_opcode_is_rc_response((uint8_t)op), response);
		assert_int_equal(rm_opcode_is_rc_request((uint8_t)op), rc && !response);
		assert_int_equal(rm_opcode_is_rc_send_or_write((uint8_t)op), op <= 0x0B);
	}
}

/* A DETH follows the BTH directly for UD SEND Only (0x64) and with Immediate (0x65) only. */
static void test_has_deth(void **state)
{
	for (unsigned int op = 0; op < 256; op++)
		assert_int_equal(rm_opcode_has_deth((uint8_t)op), op == 0x64 || op == 0x65);
}

/*
 * "Operation -> Extended Header" for every RC request: the SEND and WRITE
 * ones as above, RDMA READ Request a RETH (16), Compare & Swap and Fetch &
 * Add an AtomicETH (28), SEND Last / Only with Invalidate an IETH (4); the
 * unassigned RC request opcodes (0x15, 0x18..0x1F) none the table names.
 * Responses and other transports: 0 (not requests of the profile).
 */
static void test_rc_request_ext_len(void **state)
{
	static const unsigned int want[0x20] = {
		[0x03] = 4,  [0x05] = 4,  [0x06] = 16, [0x09] = 4, [0x0A] = 16, [0x0B] = 20,
		[0x0C] = 16, [0x13] = 28, [0x14] = 28, [0x16] = 4, [0x17] = 4,
	};

	for (unsigned int op = 0; op < 256; op++) {
		unsigned int w = op < 0x20 && !(op >= 0x0D && op <= 0x12) ? want[op] : 0;

		assert_int_equal(rm_opcode_rc_request_ext_len((uint8_t)op), w);
	}
	assert_int_equal(RM_ATOMICETH_LEN, 28);
	assert_int_equal(RM_IETH_LEN, 4);
}

/*
 * "Operation -> Extended Header": SEND with Immediate and WRITE Last with
 * Immediate carry ImmDt (4), WRITE First and Only a RETH (16), WRITE Only
 * with Immediate RETH + ImmDt (20); the other SEND / WRITE opcodes none.
 */
static void test_send_write_ext_len(void **state)
{
	static const unsigned int want[12] = { 0, 0, 0, 4, 0, 4, 16, 0, 0, 4, 16, 20 };

	for (unsigned int op = 0; op < 12; op++)
		assert_int_equal(rm_opcode_send_write_ext_len((uint8_t)op), want[op]);
	assert_int_equal(RM_BTH_LEN, 12);
	assert_int_equal(RM_DETH_LEN, 8);
	assert_int_equal(RM_RETH_LEN, 16);
	assert_int_equal(RM_IMMDT_LEN, 4);
	assert_int_equal(RM_ICRC_LEN, 4);
	assert_int_equal(RM_ROCEV2_UDP_PORT, 4791);
}

/*
 * [IBPKT]'s example BTH (infiniband.pcap frame 10): OpCode 4, SE 0, M 1,
 * PadCnt 0, TVer 0, P_Key 0xffff, AckReq 1, PSN 13896277 (0xD40A55); the
 * DestQP is masked in [IBPKT], 0x123456 here. Then PadCnt 3 and TVer 0xF
 * with SE and M set, and a DETH with SrcQP 0xABCDEF.
 */
static void test_fields(void **state)
{
	uint8_t bth[12] = { 0x04, 0x40, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56, 0x80, 0xd4, 0x0a, 0x55 };
	uint8_t deth[8] = { 0x80, 0x01, 0x00, 0x00, 0x00, 0xab, 0xcd, 0xef };

	assert_int_equal(rm_bth_tver(bth), 0);
	assert_int_equal(rm_bth_padcnt(bth), 0);
	assert_int_equal(rm_bth_pkey(bth), 0xffff);
	assert_int_equal(rm_bth_dest_qp(bth), 0x123456);
	assert_int_equal(rm_bth_psn(bth), 13896277);
	bth[1] = 0xff;
	bth[2] = 0x80;
	bth[3] = 0x01;
	assert_int_equal(rm_bth_tver(bth), 0x0f);
	assert_int_equal(rm_bth_padcnt(bth), 3);
	assert_int_equal(rm_bth_pkey(bth), 0x8001);
	assert_int_equal(rm_deth_src_qp(deth), 0xabcdef);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transport),
		cmocka_unit_test(test_opcode_values),
		cmocka_unit_test(test_rc_classes),
		cmocka_unit_test(test_has_deth),
		cmocka_unit_test(test_send_write_ext_len),
		cmocka_unit_test(test_rc_request_ext_len),
		cmocka_unit_test(test_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
