// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_connections.c - the connection census's rules, without BPF:
 *   - the class of every opcode 0x00..0xFF (include/rocemeter/census.h)
 *     against the BTH opcode table of [IBPKT], written out here by range;
 *   - which keys the profile can cover ([SEQOBS] "Applicability and
 *     Provisioning": only SEND and RDMA WRITE requests; responses and CNPs
 *     do not count against a key) and why not;
 *   - the [provision] section (user/census/connections.c): one line per
 *     eligible connection, keys that differ only in VLANs merged (a line
 *     has no VLAN), a comment per excluded one, at most 4096 lines; the
 *     whole section, as printed, is a configuration file that
 *     rm_config_load() reads back into the same connections, its longest
 *     comment within the loader's 198 characters.
 * Expected values are worked out by hand from those texts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "census/connections.h"
#include "common/config.h"
#include "common/limits.h"

/* [IBPKT] "BTH Opcode master table": the class of op, by the ranges of the table. */
static int expected_class(int op)
{
	if (op <= 0x0b)
		return RM_CENSUS_SEND_WRITE; /* SEND First..Only Imm, RDMA WRITE First..Only Imm */
	if (op == 0x0c)
		return RM_CENSUS_READ;
	if (op >= 0x0d && op <= 0x12)
		return RM_CENSUS_RESPONSES; /* READ Response First..Only, Acknowledge, ATOMIC Acknowledge */
	if (op == 0x13 || op == 0x14)
		return RM_CENSUS_ATOMIC; /* CmpSwap, FetchAdd */
	if (op >= 0x15 && op <= 0x1f)
		return RM_CENSUS_OTHER_RC; /* reserved 0x15, SEND Last/Only with Invalidate, reserved */
	if (op >= 0x20 && op <= 0x3f)
		return RM_CENSUS_UC;
	if (op >= 0x60 && op <= 0x7f)
		return RM_CENSUS_UD;
	if (op == 0x81)
		return RM_CENSUS_CNP;
	return RM_CENSUS_OTHER; /* RD 0x40..0x5F, 0x80, 0x82..0x9F, XRC 0xA0..0xBF, 0xC0..0xFF */
}

static void test_every_opcode_class(void **state)
{
	for (int op = 0; op < 256; op++) {
		if ((int)rm_census_class((uint8_t)op) != expected_class(op))
			fail_msg("opcode 0x%02x: class %u, expected %d", op, rm_census_class((uint8_t)op),
				 expected_class(op));
	}
}

static struct rm_census_val val(uint64_t send_write)
{
	struct rm_census_val v;

	memset(&v, 0, sizeof(v));
	v.packets[RM_CENSUS_SEND_WRITE] = send_write;
	return v;
}

static void test_exclusions(void **state)
{
	struct rm_census_val v = val(10);

	assert_int_equal(rm_conn_exclusions(&v), 0);
	v.packets[RM_CENSUS_RESPONSES] = 5;
	v.packets[RM_CENSUS_CNP] = 2;
	assert_int_equal(rm_conn_exclusions(&v), 0); /* the meter does not look at them */
	v.packets[RM_CENSUS_READ] = 1;
	assert_int_equal(rm_conn_exclusions(&v), RM_CONN_EXCL(READ));
	v.packets[RM_CENSUS_UD] = 1;
	assert_int_equal(rm_conn_exclusions(&v), RM_CONN_EXCL(READ) | RM_CONN_EXCL(UD));

	v = val(0);
	v.packets[RM_CENSUS_RESPONSES] = 3;
	assert_int_equal(rm_conn_exclusions(&v), RM_CONN_EXCL(NO_REQUESTS));
	v = val(0);
	assert_int_equal(rm_conn_exclusions(&v), RM_CONN_EXCL(NO_REQUESTS));
	v.packets[RM_CENSUS_UD] = 3; /* UD only: its own reason, not "no requests" */
	assert_int_equal(rm_conn_exclusions(&v), RM_CONN_EXCL(UD));

	v = val(1);
	v.packets[RM_CENSUS_ATOMIC] = 1;
	v.packets[RM_CENSUS_OTHER_RC] = 1;
	v.packets[RM_CENSUS_UC] = 1;
	v.packets[RM_CENSUS_OTHER] = 1;
	v.malformed = 1;
	assert_int_equal(rm_conn_exclusions(&v), RM_CONN_EXCL(ATOMIC) | RM_CONN_EXCL(OTHER_RC) | RM_CONN_EXCL(UC) |
							 RM_CONN_EXCL(OTHER) | RM_CONN_EXCL(MALFORMED));
	v = val(7);
	v.malformed = 1; /* a malformed SEND is a profile violation too */
	assert_int_equal(rm_conn_exclusions(&v), RM_CONN_EXCL(MALFORMED));
}

static struct rm_ctx_key key(const char *src, const char *dst, uint32_t qp, uint16_t pkey, uint16_t v0, uint16_t v1)
{
	struct rm_ctx_key k;

	memset(&k, 0, sizeof(k));
	k.family = (uint8_t)rm_parse_addr(src, k.src);
	assert_int_equal(rm_parse_addr(dst, k.dst), k.family);
	k.dest_qp = qp;
	k.pkey = pkey;
	k.vlan[0] = v0;
	k.vlan[1] = v1;
	return k;
}

static void test_provision_line(void **state)
{
	struct rm_ctx_key k = key("192.0.2.1", "198.51.100.2", 0x11, 0xffff, 10, 0);
	char buf[160];

	rm_conn_provision_line(&k, buf, sizeof(buf));
	assert_string_equal(buf, "connection = 192.0.2.1 198.51.100.2 0x000011 0xffff");
	k = key("2001:db8::1", "2001:db8::2", 0xabcdef, 0x8001, 0, 0);
	rm_conn_provision_line(&k, buf, sizeof(buf));
	assert_string_equal(buf, "connection = 2001:db8::1 2001:db8::2 0xabcdef 0x8001");
}

static void test_opcode_ranges(void **state)
{
	__u64 bits[4] = { 0 };
	char buf[1200];

	assert_string_equal(rm_conn_format_opcodes(bits, buf, sizeof(buf)), "");
	for (int op = 0; op <= 2; op++)
		bits[0] |= 1ull << op;
	bits[0] |= 1ull << 4 | 1ull << 0x11;
	bits[1] |= 1ull << (0x64 - 64);
	bits[2] |= 1ull << (0x81 - 128);
	bits[3] = ~0ull; /* 0xc0..0xff */
	assert_string_equal(rm_conn_format_opcodes(bits, buf, sizeof(buf)), "0x00-0x02,0x04,0x11,0x64,0x81,0xc0-0xff");
	bits[0] = bits[1] = bits[2] = ~0ull;
	assert_string_equal(rm_conn_format_opcodes(bits, buf, sizeof(buf)), "0x00-0xff");
}

/* The text r prints with what, in a string (free it). */
static char *text_of(const struct rm_census_result *r, unsigned int what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rm_conn_write_text(f, r, -1, what);
	fclose(f);
	return buf;
}

/* Load text as a configuration file. */
static int load(const char *text, struct rm_config_file *cfg, char *err, size_t errlen)
{
	char path[] = "/tmp/test_connections.XXXXXX";
	int fd = mkstemp(path), rc;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	rm_config_defaults(cfg);
	rc = rm_config_load(path, cfg, err, errlen);
	unlink(path);
	return rc;
}

static void test_provision_section(void **state)
{
	static struct rm_config_file cfg;
	struct rm_census_entry e[6];
	struct rm_census_result r = { .entries = e, .n = 6 };
	char err[512], *text;

	memset(e, 0, sizeof(e));
	/* sorted as rm_census_read() sorts: family, addresses, QP, P_Key, VLANs */
	e[0].key = key("10.0.0.1", "10.0.0.2", 0x11, 0xffff, 0, 0);
	e[0].v = val(100);
	e[0].v.packets[RM_CENSUS_RESPONSES] = 4;
	e[1].key = key("10.0.0.1", "10.0.0.2", 0x12, 0xffff, 10, 0); /* eligible in VLAN 10 ... */
	e[1].v = val(5);
	e[2].key = key("10.0.0.1", "10.0.0.2", 0x12, 0xffff, 20, 0); /* ... READ in VLAN 20: one line, excluded */
	e[2].v = val(5);
	e[2].v.packets[RM_CENSUS_READ] = 1;
	e[3].key = key("10.0.0.2", "10.0.0.1", 0x21, 0xffff, 0, 0); /* ACKs only */
	e[3].v = val(0);
	e[3].v.packets[RM_CENSUS_RESPONSES] = 104;
	e[4].key = key("10.0.0.2", "10.0.0.1", 0x22, 0x8001, 0, 0);
	e[4].v = val(1);
	e[5].key = key("2001:db8::1", "2001:db8::2", 0x1, 0xffff, 0, 0);
	e[5].v = val(0);
	e[5].v.packets[RM_CENSUS_UD] = 2;

	text = text_of(&r, RM_CONN_PROVISION);
	assert_string_equal(text, "[provision]\n"
				  "connection = 10.0.0.1 10.0.0.2 0x000011 0xffff\n"
				  "# excluded: 10.0.0.1 10.0.0.2 0x000012 0xffff (RDMA READ)\n"
				  "# excluded: 10.0.0.2 10.0.0.1 0x000021 0xffff (no requests)\n"
				  "connection = 10.0.0.2 10.0.0.1 0x000022 0x8001\n"
				  "# excluded: 2001:db8::1 2001:db8::2 0x000001 0xffff (UD)\n");
	assert_int_equal(load(text, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.n_provision, 2);
	assert_int_equal(cfg.provision[0].dest_qp, 0x11);
	assert_int_equal(cfg.provision[0].pkey, 0xffff);
	assert_false(cfg.provision[0].any_qp || cfg.provision[0].any_pkey);
	assert_memory_equal(cfg.provision[0].src, e[0].key.src, 16);
	assert_memory_equal(cfg.provision[0].dst, e[0].key.dst, 16);
	assert_int_equal(cfg.provision[1].dest_qp, 0x22);
	assert_int_equal(cfg.provision[1].pkey, 0x8001);
	assert_memory_equal(cfg.provision[1].src, e[4].key.src, 16);
	free(text);

	/* The table and the section: the section is the end of the output. */
	text = text_of(&r, RM_CONN_TABLE | RM_CONN_PROVISION);
	assert_non_null(strstr(text, "\n\n[provision]\nconnection = 10.0.0.1 10.0.0.2 0x000011 0xffff\n"));
	assert_non_null(strstr(text, "10.0.0.1 > 10.0.0.2 qp 0x000012 pkey 0xffff vlan 20"));
	free(text);
}

/* The longest comment: the longest IPv6 addresses and every reason at once. */
static void test_longest_comment_loads(void **state)
{
	static struct rm_config_file cfg;
	struct rm_census_entry e;
	struct rm_census_result r = { .entries = &e, .n = 1 };
	char err[512], *text, *nl;

	memset(&e, 0, sizeof(e));
	e.key = key("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0xffffff,
		    0xffff, 4095, 4095);
	e.v = val(1);
	for (int c = 0; c < RM_CENSUS_CLASS__COUNT; c++)
		e.v.packets[c] = 1;
	e.v.malformed = 1;
	assert_int_equal(rm_conn_exclusions(&e.v), (1u << RM_CONN_EXCL__COUNT) - 1 - RM_CONN_EXCL(NO_REQUESTS));
	text = text_of(&r, RM_CONN_PROVISION);
	for (char *line = text; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		assert_non_null(nl);
		assert_true(nl - line <= 198);
	}
	assert_int_equal(load(text, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.n_provision, 0);
	free(text);
}

/* More eligible connections than a [provision] section holds. */
static void test_at_most_4096_lines(void **state)
{
	static struct rm_config_file cfg;
	size_t n = RM_MAX_PROVISION + 3;
	struct rm_census_entry *e = calloc(n, sizeof(*e));
	struct rm_census_result r = { .entries = e, .n = n };
	char err[512], *text;

	for (size_t i = 0; i < n; i++) {
		e[i].key = key("10.0.0.1", "10.0.0.2", (uint32_t)i + 1, 0xffff, 0, 0);
		e[i].v = val(1);
	}
	text = text_of(&r, RM_CONN_PROVISION);
	assert_non_null(
		strstr(text, "# 3 more eligible connections not listed: [provision] holds at most 4096 lines\n"));
	assert_int_equal(load(text, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.n_provision, RM_MAX_PROVISION);
	free(text);
	free(e);
}

static void test_json(void **state)
{
	struct rm_census_entry e[2];
	struct rm_census_result r = { .entries = e, .n = 2 };
	json_t *o = json_object(), *c;

	memset(e, 0, sizeof(e));
	e[0].key = key("10.0.0.1", "10.0.0.2", 0x11, 0xffff, 0, 0);
	e[0].v = val(3);
	e[0].v.opcodes[0] = 1ull << 4 | 1ull << 0x0c;
	e[0].v.packets[RM_CENSUS_READ] = 1;
	e[0].v.first_ns = 1700000000123456789ull;
	e[0].v.last_ns = 1700000001999999999ull;
	e[1].key = key("10.0.0.1", "10.0.0.2", 0x12, 0xffff, 7, 0);
	e[1].v = val(2);
	r.stats[RM_CENSUS_STAT_FRAMES] = 9;
	rm_conn_set_json(o, &r, 12);
	assert_int_equal(json_integer_value(json_object_get(o, "frames_read")), 12);
	assert_int_equal(json_integer_value(json_object_get(o, "frames")), 9);
	c = json_array_get(json_object_get(o, "connections"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "sourceIPv4Address")), "10.0.0.1");
	assert_int_equal(json_integer_value(json_object_get(c, "rdmaDestinationQP")), 0x11);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "packets"), "read")), 1);
	assert_int_equal(json_array_size(json_object_get(c, "opcodes")), 2);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(c, "opcodes"), 1)), 0x0c);
	assert_int_equal(json_integer_value(json_object_get(c, "first_seen_ms")), 1700000000123);
	assert_int_equal(json_integer_value(json_object_get(c, "last_seen_ms")), 1700000001999);
	assert_true(json_is_false(json_object_get(c, "eligible")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(c, "excluded"), 0)), "read");
	assert_null(json_object_get(c, "vlanId"));
	c = json_array_get(json_object_get(o, "connections"), 1);
	assert_true(json_is_true(json_object_get(c, "eligible")));
	assert_int_equal(json_integer_value(json_object_get(c, "vlanId")), 7);
	assert_int_equal(json_array_size(json_object_get(o, "provision")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "provision"), 0)),
			    "connection = 10.0.0.1 10.0.0.2 0x000012 0xffff");
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_opcode_class), cmocka_unit_test(test_exclusions),
		cmocka_unit_test(test_provision_line),     cmocka_unit_test(test_opcode_ranges),
		cmocka_unit_test(test_provision_section),  cmocka_unit_test(test_longest_comment_loads),
		cmocka_unit_test(test_at_most_4096_lines), cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
