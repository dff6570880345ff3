/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mirror.h - the mirror sessions of [capture] (docs/deployment.md), shared
 * by the XDP meter and the connection census (BPF only; after parse.h): the
 * map `mirror_sessions` (struct rm_mirror_key -> struct rm_mirror_session,
 * include/rocemeter/meter.h), the session key of a frame the parser read,
 * and mirror_sessions = auto. One declaration, so that both programs read
 * the same layout the loaders (rm_capture_session_entry()) fill.
 */
#ifndef ROCEMETER_BPF_MIRROR_H
#define ROCEMETER_BPF_MIRROR_H

#include "parse.h"

/* mirror_sessions: the [capture] observation_point lines, filled by the
 * loader (line i is observation point i + 1); the meter counts each
 * session's frames, GRE sequence and truncated copies in its value. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RM_OBS_MAX);
	__type(key, struct rm_mirror_key);
	__type(value, struct rm_mirror_session);
} mirror_sessions SEC(".maps");

/* mirror_unknown: frames of sessions no line names, per session (outer
 * source for ERSPAN), for `status` and `connections`; the least recent
 * forgotten. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RM_MIRROR_UNKNOWN_MAX);
	__type(key, struct rm_mirror_key);
	__type(value, __u64);
} mirror_unknown SEC(".maps");

/* mirror_sessions = auto (a load-time constant): a session no line names
 * gets the next observation point from rm_auto_next on (the loader sets
 * it to the lines' count). */
const volatile __u32 rm_capture_auto = 0;
__u32 rm_auto_next;

/*
 * The session key of a mirrored frame (pkt->mirror not RM_MIRROR_NONE) into
 * *mk: kind, session, and for ERSPAN the outer source address read at
 * pkt->outer_src_off. 0, or -1 when that address is not within the frame.
 */
static __always_inline int rm_mirror_key_of(void *data, void *data_end, const struct rm_pkt *pkt,
					    struct rm_mirror_key *mk)
{
	__u8 *src;

	__builtin_memset(mk, 0, sizeof(*mk));
	mk->kind = pkt->mirror;
	mk->session = pkt->session;
	if (pkt->mirror != RM_MIRROR_ERSPAN)
		return 0;
	src = (__u8 *)data + (pkt->outer_src_off & RM_PKT_OFF_MASK);
	mk->family = pkt->outer_family;
	if (pkt->outer_family == 4) {
		if ((void *)(src + 4) > data_end)
			return -1;
		__builtin_memcpy(mk->src, src, 4);
	} else {
		if ((void *)(src + 16) > data_end)
			return -1;
		__builtin_memcpy(mk->src, src, 16);
	}
	return 0;
}

/*
 * The session of mk: its line's, or with mirror_sessions = auto a new entry
 * with the next free observation point (userspace derives its
 * observationPointId from the key, rm_capture_auto_id()). NULL when no line
 * names it and auto is off, or all RM_OBS_MAX points are taken.
 */
static __always_inline struct rm_mirror_session *rm_mirror_session_of(const struct rm_mirror_key *mk)
{
	struct rm_mirror_session *s = bpf_map_lookup_elem(&mirror_sessions, mk);
	struct rm_mirror_session init;
	__u32 obs;

	if (s || !rm_capture_auto)
		return s;
	obs = __sync_fetch_and_add(&rm_auto_next, 1) + 1;
	if (obs > RM_OBS_MAX)
		return NULL;
	__builtin_memset(&init, 0, sizeof(init));
	init.obs = (__u8)obs;
	bpf_map_update_elem(&mirror_sessions, mk, &init, BPF_NOEXIST); /* another CPU may have added it */
	return bpf_map_lookup_elem(&mirror_sessions, mk);
}

/* One more frame of session mk, which no line names (rm_mirror_session_of() NULL), in mirror_unknown. */
static __always_inline void rm_mirror_unknown_count(const struct rm_mirror_key *mk)
{
	__u64 one = 1, *n = bpf_map_lookup_elem(&mirror_unknown, mk);

	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&mirror_unknown, mk, &one, BPF_NOEXIST);
}

#endif
