// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_pool.c - the slab pool of the collector's epochs (user/rules/pool.c):
 * every object is its own (a pattern written into each survives the others),
 * aligned to 16 bytes; slabs are mapped as the objects need them and unmapped
 * when their objects are all free, one kept; a pool let go of while objects
 * are out stays usable until the last one returns. Expected figures follow
 * from pool.h: RM_POOL_SLAB_BYTES per slab, objects rounded up to 16 bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rules/pool.h"

#define OBJ 360 /* a struct rm_epoch's size on x86_64 */
#define N   10000

static void fill(void *o, unsigned i)
{
	memset(o, (int)(i * 7 + 1) & 0xff, OBJ);
	memcpy(o, &i, sizeof(i));
}

static int intact(const void *o, unsigned i)
{
	const unsigned char *b = o;
	unsigned got;

	memcpy(&got, o, sizeof(got));
	if (got != i)
		return 0;
	for (size_t k = sizeof(i); k < OBJ; k++)
		if (b[k] != ((i * 7 + 1) & 0xff))
			return 0;
	return 1;
}

static void test_objects_are_distinct(void **state)
{
	struct rm_pool *p = rm_pool_new(OBJ);
	static void *o[N];
	size_t need = (size_t)N * 368; /* OBJ rounded up to 16 */

	assert_non_null(p);
	assert_int_equal(rm_pool_mapped_bytes(p), 0);
	for (unsigned i = 0; i < N; i++) {
		o[i] = rm_pool_alloc(p);
		assert_non_null(o[i]);
		assert_int_equal((uintptr_t)o[i] % 16, 0);
		fill(o[i], i);
	}
	for (unsigned i = 0; i < N; i++)
		assert_true(intact(o[i], i));
	/* Enough slabs for the objects, and not a slab more than their heads need. */
	assert_true(rm_pool_mapped_bytes(p) >= need);
	assert_true(rm_pool_mapped_bytes(p) <= need + RM_POOL_SLAB_BYTES);
	for (unsigned i = 0; i < N; i++)
		rm_pool_free(o[i]);
	/* Every slab empty: all unmapped but one. */
	assert_int_equal(rm_pool_mapped_bytes(p), RM_POOL_SLAB_BYTES);
	rm_pool_release(p);
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;

	return x < y ? -1 : x > y;
}

static void test_freed_objects_are_reused(void **state)
{
	struct rm_pool *p = rm_pool_new(OBJ);
	static void *o[N];
	size_t mapped;

	for (unsigned i = 0; i < N; i++)
		o[i] = rm_pool_alloc(p);
	mapped = rm_pool_mapped_bytes(p);
	/* Free every other object (no slab empties), take as many again: no new slab. */
	for (unsigned i = 0; i < N; i += 2)
		rm_pool_free(o[i]);
	for (unsigned i = 0; i < N; i += 2) {
		o[i] = rm_pool_alloc(p);
		assert_non_null(o[i]);
	}
	assert_int_equal(rm_pool_mapped_bytes(p), mapped);
	for (unsigned i = 0; i < N; i++)
		fill(o[i], i);
	for (unsigned i = 0; i < N; i++)
		assert_true(intact(o[i], i));
	/*
	 * The lower three quarters of the addresses free: at least two of the four
	 * slabs (2,849 objects each) held only those; one empty slab is kept, the
	 * other unmapped.
	 */
	qsort(o, N, sizeof(o[0]), by_address);
	for (unsigned i = 0; i < N * 3 / 4; i++)
		rm_pool_free(o[i]);
	assert_true(rm_pool_mapped_bytes(p) < mapped);
	for (unsigned i = N * 3 / 4; i < N; i++)
		rm_pool_free(o[i]);
	assert_int_equal(rm_pool_mapped_bytes(p), RM_POOL_SLAB_BYTES);
	rm_pool_release(p);
}

/* The rules let go of the pool while a store still keeps epochs to write. */
static void test_release_with_objects_out(void **state)
{
	struct rm_pool *p = rm_pool_new(OBJ);
	void *a = rm_pool_alloc(p), *b = rm_pool_alloc(p);

	fill(a, 1);
	fill(b, 2);
	rm_pool_release(p);
	assert_true(intact(a, 1));
	rm_pool_free(a);
	assert_true(intact(b, 2)); /* still mapped: one object is out */
	rm_pool_free(b);           /* the last: the pool goes (valgrind: nothing left) */
	rm_pool_free(NULL);
	rm_pool_release(NULL);
}

static void test_sizes(void **state)
{
	struct rm_pool *p;
	void *a, *b;

	assert_null(rm_pool_new(0));
	assert_null(rm_pool_new(RM_POOL_SLAB_BYTES / 4 + 1));
	p = rm_pool_new(1); /* rounded up to 16 bytes */
	assert_non_null(p);
	a = rm_pool_alloc(p);
	b = rm_pool_alloc(p);
	assert_int_equal((char *)b - (char *)a, 16);
	rm_pool_free(a);
	rm_pool_free(b);
	rm_pool_release(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_objects_are_distinct),
		cmocka_unit_test(test_freed_objects_are_reused),
		cmocka_unit_test(test_release_with_objects_out),
		cmocka_unit_test(test_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
