// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pool.c - objects of one size from aligned, pre-faulted slabs. See pool.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "pool.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* The head of a slab, at its first byte; the objects follow at SLAB_HEAD. */
struct slab {
	struct rm_pool *pool;
	struct slab *prev, *next; /* in the pool's list of slabs with a free object */
	void *free;               /* freed objects, linked through their first pointer */
	uint32_t used;            /* objects out */
	uint32_t fresh;           /* objects [fresh, per_slab) were never handed out */
};

#define SLAB_HEAD 64u

_Static_assert(sizeof(struct slab) <= SLAB_HEAD, "slab head");

struct rm_pool {
	size_t size;          /* object size, a multiple of 16 */
	uint32_t per_slab;    /* objects per slab */
	struct slab *partial; /* slabs with a free object (every slab that is not full) */
	size_t slabs;         /* slabs mapped */
	size_t empty;         /* slabs with no object out (at most one is kept) */
	size_t live;          /* objects out */
	int released;         /* the owner let go: free the pool with its last object */
};

struct rm_pool *rm_pool_new(size_t size)
{
	struct rm_pool *p;

	if (!size || size > RM_POOL_SLAB_BYTES / 4)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->size = (size + 15) & ~(size_t)15;
	p->per_slab = (uint32_t)((RM_POOL_SLAB_BYTES - SLAB_HEAD) / p->size);
	return p;
}

static void partial_push(struct rm_pool *p, struct slab *s)
{
	s->prev = NULL;
	s->next = p->partial;
	if (p->partial)
		p->partial->prev = s;
	p->partial = s;
}

static void partial_unlink(struct rm_pool *p, struct slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		p->partial = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
}

/* One call faults the range in, far cheaper than a page fault per page; older kernels say EINVAL: faults then. */
static void prefault(void *mem, size_t len)
{
	(void)madvise(mem, len, MADV_POPULATE_WRITE);
}

void *rm_pool_map(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	prefault(m, len);
	return m;
}

void rm_pool_unmap(void *mem, size_t len)
{
	if (mem)
		munmap(mem, len);
}

/* A new slab, aligned to its size (map twice the size, unmap the ends), written once in one go. */
static struct slab *slab_new(struct rm_pool *p)
{
	size_t n = RM_POOL_SLAB_BYTES;
	char *m = mmap(NULL, 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;
	struct slab *s;

	if (m == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)m + n - 1) & ~(uintptr_t)(n - 1));
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (a + n < m + 2 * n)
		munmap(a + n, (size_t)(m + 2 * n - (a + n)));
	prefault(a, n);
	s = (struct slab *)a;
	s->pool = p;
	s->free = NULL;
	s->used = s->fresh = 0;
	p->slabs++;
	p->empty++;
	partial_push(p, s);
	return s;
}

static void slab_unmap(struct rm_pool *p, struct slab *s)
{
	partial_unlink(p, s);
	p->slabs--;
	p->empty--;
	munmap(s, RM_POOL_SLAB_BYTES);
}

void *rm_pool_alloc(struct rm_pool *p)
{
	struct slab *s = p->partial;
	void *obj;

	if (!s && !(s = slab_new(p)))
		return NULL;
	if (s->free) {
		obj = s->free;
		s->free = *(void **)obj;
	} else {
		obj = (char *)s + SLAB_HEAD + (size_t)s->fresh++ * p->size;
	}
	if (s->used++ == 0)
		p->empty--;
	if (s->used == p->per_slab)
		partial_unlink(p, s);
	p->live++;
	return obj;
}

static void pool_free_all(struct rm_pool *p)
{
	while (p->partial)
		slab_unmap(p, p->partial);
	free(p);
}

void rm_pool_free(void *obj)
{
	struct slab *s;
	struct rm_pool *p;

	if (!obj)
		return;
	s = (struct slab *)((uintptr_t)obj & ~(uintptr_t)(RM_POOL_SLAB_BYTES - 1));
	p = s->pool;
	if (s->used == p->per_slab)
		partial_push(p, s);
	*(void **)obj = s->free;
	s->free = obj;
	p->live--;
	if (--s->used == 0) {
		p->empty++;
		if (p->empty > 1 || p->released)
			slab_unmap(p, s);
	}
	if (p->released && !p->live)
		pool_free_all(p);
}

void rm_pool_release(struct rm_pool *p)
{
	if (!p)
		return;
	p->released = 1;
	if (!p->live)
		pool_free_all(p);
}

size_t rm_pool_mapped_bytes(const struct rm_pool *p)
{
	return p->slabs * RM_POOL_SLAB_BYTES;
}
