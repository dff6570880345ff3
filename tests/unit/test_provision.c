// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_provision.c - which provisioning lines cover a connection
 * (user/meter/provision.c), the rule of a SIGHUP reload for connections a
 * profile violation disabled, and the patterns of `rocemeter reenable`:
 *   - a line covers a key in one of four forms (exact, any QP, any P_Key,
 *     any of both), never across address families, whatever the key's VLAN
 *     IDs; provision_all covers everything;
 *   - a connection's provisioning "changed" when the set of forms (and
 *     provision_all) that cover it differs between the old and the new
 *     configuration; the same lines in another order, or with lines for
 *     other connections added or removed, are no change.
 * Expected values are worked out from docs/configuration.md ("[provision]")
 * by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/config.h"
#include "meter/provision.h"

static struct rm_provision line(const char *src, const char *dst, int any_qp, uint32_t qp, int any_pkey, uint16_t pkey)
{
	struct rm_provision p;

	memset(&p, 0, sizeof(p));
	p.family = (uint8_t)rm_parse_addr(src, p.src);
	assert_int_equal(rm_parse_addr(dst, p.dst), p.family);
	p.any_qp = (uint8_t)any_qp;
	p.dest_qp = any_qp ? 0 : qp;
	p.any_pkey = (uint8_t)any_pkey;
	p.pkey = any_pkey ? 0 : pkey;
	return p;
}

static struct rm_ctx_key key(const char *src, const char *dst, uint32_t qp, uint16_t pkey, uint16_t vlan)
{
	struct rm_ctx_key k;

	memset(&k, 0, sizeof(k));
	k.family = (uint8_t)rm_parse_addr(src, k.src);
	assert_int_equal(rm_parse_addr(dst, k.dst), k.family);
	k.dest_qp = qp;
	k.pkey = pkey;
	k.vlan[0] = vlan;
	return k;
}

static void test_forms(void **state)
{
	struct rm_provision l[4] = {
		line("10.0.0.1", "10.0.0.2", 0, 5, 0, 0xffff),
		line("10.0.0.1", "10.0.0.2", 1, 0, 0, 0x8001),
		line("10.0.0.1", "10.0.0.2", 0, 5, 1, 0),
		line("2001:db8::1", "2001:db8::2", 1, 0, 1, 0),
	};
	struct rm_ctx_key k5 = key("10.0.0.1", "10.0.0.2", 5, 0xffff, 0);

	(void)state;
	assert_int_equal(rm_prov_cover(l, 4, 0, &k5), RM_PROV_BY_EXACT | RM_PROV_BY_ANY_PKEY);
	/* VLAN IDs are not part of provisioning. */
	k5.vlan[0] = 100;
	k5.vlan[1] = 7;
	assert_int_equal(rm_prov_cover(l, 4, 0, &k5), RM_PROV_BY_EXACT | RM_PROV_BY_ANY_PKEY);
	{
		struct rm_ctx_key k = key("10.0.0.1", "10.0.0.2", 9, 0x8001, 0);

		assert_int_equal(rm_prov_cover(l, 4, 0, &k), RM_PROV_BY_ANY_QP);
		assert_int_equal(rm_prov_line_covers(&l[1], &k), 1);
		assert_int_equal(rm_prov_line_covers(&l[0], &k), 0);
	}
	{
		struct rm_ctx_key k = key("10.0.0.2", "10.0.0.1", 5, 0xffff, 0); /* the other direction */

		assert_int_equal(rm_prov_cover(l, 4, 0, &k), 0);
		assert_int_equal(rm_prov_cover(l, 4, 1, &k), RM_PROV_BY_ALL);
	}
	{
		struct rm_ctx_key k = key("2001:db8::1", "2001:db8::2", 0xabcdef, 0x1234, 0);
		struct rm_ctx_key v4 = key("0.0.0.0", "0.0.0.0", 0xabcdef, 0x1234, 0);

		assert_int_equal(rm_prov_cover(l, 4, 0, &k), RM_PROV_BY_ANY_BOTH);
		assert_int_equal(rm_prov_cover(l, 4, 0, &v4), 0);
	}
}

/* The reload rule: re-enable a violated connection only if this differs. */
static void test_changed(void **state)
{
	struct rm_provision old[2] = {
		line("10.0.0.1", "10.0.0.2", 0, 5, 1, 0),
		line("10.0.0.3", "10.0.0.4", 1, 0, 1, 0),
	};
	struct rm_provision same[3] = {
		line("10.0.0.9", "10.0.0.8", 0, 1, 1, 0),
		line("10.0.0.3", "10.0.0.4", 1, 0, 1, 0),
		line("10.0.0.1", "10.0.0.2", 0, 5, 1, 0),
	};
	struct rm_provision wider[1] = { line("10.0.0.1", "10.0.0.2", 1, 0, 1, 0) };
	struct rm_ctx_key k = key("10.0.0.1", "10.0.0.2", 5, 0xffff, 0);

	(void)state;
	assert_int_equal(rm_prov_changed(old, 2, 0, same, 3, 0, &k), 0);
	assert_int_equal(rm_prov_changed(old, 2, 0, wider, 1, 0, &k), 1);   /* exact QP -> any QP */
	assert_int_equal(rm_prov_changed(old, 2, 0, old, 1, 0, &k), 0);     /* other line dropped */
	assert_int_equal(rm_prov_changed(old, 2, 0, old + 1, 1, 0, &k), 1); /* its line dropped */
	assert_int_equal(rm_prov_changed(old, 2, 0, old, 2, 1, &k), 1);     /* provision_all turned on */
	assert_int_equal(rm_prov_changed(old, 2, 1, old, 2, 1, &k), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_changed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
