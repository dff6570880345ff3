// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_map_iter.c - user/common/map_iter.h on maps the test creates (root):
 * a walk over a hash map returns every key once, an array map's indexes in
 * order, an empty map nothing; emptying a map by its first key leaves
 * none. The expected keys are the ones the test inserted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <bpf/bpf.h>

#include "common/map_iter.h"
#include "selftest.h"

#define NKEYS 500

/* The i-th key the test inserts: distinct, not in order. */
static uint32_t key_of(uint32_t i)
{
	return i * 2654435761u ^ 0x5a5a5a5a;
}

static int hash_map(uint32_t max)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_iter", sizeof(uint32_t), sizeof(uint64_t), max, NULL);

	assert_true(fd >= 0);
	return fd;
}

/* The index of key among the inserted ones, or -1. */
static int inserted(uint32_t key)
{
	for (uint32_t i = 0; i < NKEYS; i++)
		if (key_of(i) == key)
			return (int)i;
	return -1;
}

static void test_hash_map_every_key_once(void **state)
{
	int fd = hash_map(NKEYS), seen[NKEYS] = { 0 }, n = 0;
	struct rm_map_iter it;
	uint32_t key;

	for (uint32_t i = 0; i < NKEYS; i++) {
		uint64_t v = i;
		uint32_t k = key_of(i);

		assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST), 0);
	}
	it = rm_map_iter_start(fd, &key);
	while (rm_map_iter_next(&it)) {
		int i = inserted(key);
		uint64_t v;

		assert_true(i >= 0);
		seen[i]++;
		n++;
		assert_int_equal(bpf_map_lookup_elem(fd, &key, &v), 0);
		assert_int_equal(v, (uint64_t)i);
	}
	assert_int_equal(n, NKEYS);
	for (int i = 0; i < NKEYS; i++)
		assert_int_equal(seen[i], 1);
	close(fd);
}

static void test_array_map_in_index_order(void **state)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_iter_a", sizeof(uint32_t), sizeof(uint64_t), 16, NULL);
	struct rm_map_iter it;
	uint32_t key, want = 0;

	assert_true(fd >= 0);
	it = rm_map_iter_start(fd, &key);
	while (rm_map_iter_next(&it))
		assert_int_equal(key, want++);
	assert_int_equal(want, 16);
	close(fd);
}

static void test_empty_map_walks_nothing(void **state)
{
	int fd = hash_map(4);
	uint32_t key = 7;
	struct rm_map_iter it = rm_map_iter_start(fd, &key);

	assert_int_equal(rm_map_iter_next(&it), 0);
	assert_int_equal(rm_map_iter_first(fd, &key), 0);
	close(fd);
}

static void test_emptied_by_first_key(void **state)
{
	int fd = hash_map(NKEYS), deleted = 0;
	uint32_t key;
	uint64_t v;

	for (uint32_t i = 0; i < NKEYS; i++) {
		uint32_t k = key_of(i);

		v = i;
		assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST), 0);
	}
	while (rm_map_iter_first(fd, &key)) {
		assert_true(inserted(key) >= 0);
		assert_int_equal(bpf_map_delete_elem(fd, &key), 0);
		deleted++;
	}
	assert_int_equal(deleted, NKEYS);
	for (uint32_t i = 0; i < NKEYS; i++) {
		uint32_t k = key_of(i);

		assert_int_not_equal(bpf_map_lookup_elem(fd, &k, &v), 0);
	}
	close(fd);
}

int main(void)
{
	rm_selftest_require_root("BPF maps");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_map_every_key_once),
		cmocka_unit_test(test_array_map_in_index_order),
		cmocka_unit_test(test_empty_map_walks_nothing),
		cmocka_unit_test(test_emptied_by_first_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
