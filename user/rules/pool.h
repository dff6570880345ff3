/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pool.h - objects of one size, taken from slabs of RM_POOL_SLAB_BYTES.
 *
 * The collector creates and retires an epoch per record on the workload of
 * one report per epoch; malloc gives each a fresh 4 KiB page now and then
 * and takes a page fault per page the first time it is written. A slab is
 * one mapping of RM_POOL_SLAB_BYTES (aligned to its size, so an object
 * finds its slab from its address), written in one go when it is mapped
 * (MADV_POPULATE_WRITE where the kernel has it, 5.14 and later), with a
 * free list of its own. A slab whose objects are all free is unmapped,
 * except the last one (so that a burst that ends does not map and unmap a
 * slab per object).
 *
 * Single-threaded: one thread allocates and frees. No locks.
 */
#ifndef ROCEMETER_POOL_H
#define ROCEMETER_POOL_H

#include <stddef.h>

/* Size and alignment of a slab (bytes). */
#define RM_POOL_SLAB_BYTES (1u << 20)

struct rm_pool;

/* A pool of objects of size bytes (1 .. RM_POOL_SLAB_BYTES / 4). NULL on ENOMEM or EINVAL. */
struct rm_pool *rm_pool_new(size_t size);
/* An object (size bytes, 16-byte aligned, uninitialised), or NULL on ENOMEM. */
void *rm_pool_alloc(struct rm_pool *p);
/* Return an object of any pool; NULL is a no-op. */
void rm_pool_free(void *obj);
/*
 * The pool's owner lets go of it: it is freed now if no object is out,
 * otherwise when the last one returns (rm_pool_free). NULL is a no-op.
 */
void rm_pool_release(struct rm_pool *p);
/* Bytes mapped for slabs (what the pool holds from the system). */
size_t rm_pool_mapped_bytes(const struct rm_pool *p);

/*
 * len bytes of zeroes in a mapping of their own, faulted in at once as a
 * slab is: for a table that is about to be written throughout (the rules'
 * epoch table after it grows). NULL on ENOMEM. Free with rm_pool_unmap and
 * the same len.
 */
void *rm_pool_map(size_t len);
void rm_pool_unmap(void *mem, size_t len);

#endif /* ROCEMETER_POOL_H */
