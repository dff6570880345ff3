/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * map_iter.h - the one walk over a BPF map's keys in userspace
 * (bpf_map_get_next_key): the meter's, the census's and the violations'
 * readers use it, as bpftool's map dump does, the key buffer being both the
 * key returned and the one the walk resumes after.
 *
 *     struct rm_ctx_key key;
 *     struct rm_map_iter it = rm_map_iter_start(fd, &key);
 *
 *     while (rm_map_iter_next(&it))
 *             ... look key up, skip it if it was deleted meanwhile ...
 */
#ifndef ROCEMETER_MAP_ITER_H
#define ROCEMETER_MAP_ITER_H

#include <bpf/bpf.h>

/* A walk: the map, the caller's key buffer (the map's key size), whether it holds a key yet. */
struct rm_map_iter {
	int fd;
	void *key;
	int started;
};

/* A walk over map fd from its first key, each key written to key (a buffer of the map's key size). */
static inline struct rm_map_iter rm_map_iter_start(int fd, void *key)
{
	return (struct rm_map_iter){ .fd = fd, .key = key, .started = 0 };
}

/*
 * The next key into *it->key: 1, or 0 when there is none (the end of the
 * map; errno ENOENT) or the map cannot be read. The caller leaves the key
 * unchanged between calls: the walk resumes after it. A key added during
 * the walk may or may not be seen; the walk of a hash map resumed after a
 * key deleted meanwhile starts again from the first key (the kernel's
 * rule), so a caller that deletes the keys it walks uses rm_map_iter_first.
 */
static inline int rm_map_iter_next(struct rm_map_iter *it)
{
	if (bpf_map_get_next_key(it->fd, it->started ? it->key : NULL, it->key))
		return 0;
	it->started = 1;
	return 1;
}

/* The map's first key into *key: 1, or 0 when the map is empty or cannot be read. */
static inline int rm_map_iter_first(int fd, void *key)
{
	return bpf_map_get_next_key(fd, NULL, key) == 0;
}

#endif /* ROCEMETER_MAP_ITER_H */
