/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * seqobs.h - the bounded sequence observation engine of seed 000
 * ("Bounded Sequence Observation Algorithm", "Per-Request Transitions").
 *
 * This header is the only implementation of the algorithm. It compiles
 * unchanged into the BPF objects (clang -target bpf, where loops use the
 * bpf_iter_num open-coded iterator so that the verifier accepts every
 * W up to 2^22) and into host code (tests, benchmarks).
 *
 * State of one epoch (all positions are local extended integers, never
 * exported):
 *   S   fixed initial extended position (the first accounted PSN)
 *   H   high-water extended position, H mod 2^24 is the highest PSN
 *   L   = max(S, H - W + 1), derived; [L, H] is the retained interval
 * The window is a ring of nwords 64-bit words (nwords * 64 >= W); bit
 * (q mod nwords*64) is 1 when retained position q is SEEN, 0 when PENDING.
 * Only bits of retained positions are ever read: every position except S
 * enters [L, H] through a forward advance, which clears its bit first, so
 * a window never needs clearing when an epoch starts or a slot is reused.
 *
 * Cost per request: O(1) for d <= 0 and for the first request; for a
 * forward advance of d, at most 2 * (ceil(d / 64) + 1) word operations
 * (count the SEEN bits that leave the window, clear the bits that enter).
 * Worst case, d = W = 2^22: 2 * 65537 word operations.
 *
 * Checked arithmetic: every counter is bounded by H - S or by requests
 * (skipped <= H - S; filled, expired, abandoned, pending <= skipped;
 * repeated, unclassifiedLate <= requests). A request therefore first checks
 * requests + 1 <= RM_COUNTER_MAX and H - S + W <= RM_COUNTER_MAX; if either
 * would fail, the epoch closes (finalEpoch alone) and the request starts a
 * fresh one. RM_COUNTER_MAX can be lowered at build time for tests.
 */
#ifndef ROCEMETER_SEQOBS_H
#define ROCEMETER_SEQOBS_H

#include "types.h"

#define RM_PSN_BITS 24
#define RM_PSN_MOD (1u << RM_PSN_BITS)           /* M = 2^24 */
#define RM_PSN_MASK (RM_PSN_MOD - 1)
#define RM_PSN_HALF (1u << (RM_PSN_BITS - 1))    /* M/2: ambiguous */
#define RM_WINDOW_MAX (1u << 22)                 /* W <= 2^22 */
#define RM_WINDOW_WORDS_MAX (RM_WINDOW_MAX / 64) /* 65536 words = 512 KiB */

/* Largest value a counter or H - S may reach; S < 2^24, so H cannot wrap. */
#ifndef RM_COUNTER_MAX
#define RM_COUNTER_MAX (~(__u64)0 - RM_PSN_MOD)
#endif

/* rdmaSequenceFlags masks (seed 000, "Qualification Flags"), host order. */
#define RM_FLAG_FINAL_EPOCH           0x0001
#define RM_FLAG_PROFILE_VIOLATION     0x0002
#define RM_FLAG_CAPTURE_DISCONTINUITY 0x0004
#define RM_FLAG_STATE_EXHAUSTION      0x0008
#define RM_FLAG_SERIAL_DISCONTINUITY  0x0010
#define RM_FLAG_GENERATION_UNVERIFIED 0x0020
#define RM_FLAG_DEFINED_MASK          0x003f
/* Closure-reason bits: allowed only together with finalEpoch. */
#define RM_FLAG_REASON_MASK           0x001e

/* Words needed for a window of w positions. */
#define RM_WINDOW_WORDS(w) (((w) + 63u) / 64u)

/*
 * The counters of one epoch: exactly what a report carries besides its key
 * and IDs. Field names follow the Information Elements of seed 000.
 * Times are nanoseconds in the meter's clock (CLOCK_MONOTONIC live, the
 * capture's UNIX time in replay); userspace converts them.
 */
struct rm_seq_counters {
	__u64 requests;          /* requestPacketTotalCount */
	__u64 skipped;           /* skippedPsnTotalCount */
	__u64 filled;            /* filledPsnTotalCount */
	__u64 expired;           /* expiredPsnTotalCount */
	__u64 abandoned;         /* abandonedPsnTotalCount */
	__u64 repeated;          /* repeatedPsnTotalCount */
	__u64 unclassified_late; /* unclassifiedLatePacketTotalCount */
	__u64 first_ns;          /* flowStartMilliseconds, before conversion */
	__u64 last_ns;           /* flowEndMilliseconds, before conversion */
	__u32 pending;           /* pendingPsnCount, <= W - 1 */
	__u32 window;            /* rdmaSequenceWindow W, 1..2^22 */
	__u32 epoch_gen;         /* local epoch generation of the context */
	__u16 flags;             /* RM_FLAG_* closure bits (final snapshots) */
	__u16 _pad;
};

/* One context's engine state; lives in the locked part of a context. */
struct rm_seq_state {
	struct rm_seq_counters c;
	__u64 start;  /* S */
	__u64 high;   /* H */
	__u64 seen;   /* scratch: SEEN bits counted by rm_window_range() */
	__u8 active;  /* an epoch is open */
	__u8 _pad[7];
};

/* Result of rm_seq_observe(). */
enum rm_seq_result {
	RM_SEQ_STARTED = 1,   /* no epoch was open: p started one */
	RM_SEQ_ACCOUNTED = 2, /* p accounted to the open epoch */
	RM_SEQ_RESTARTED = 3, /* open epoch closed into *closed, p started a new one */
};

/* ------------------------------------------------------------------ */
/* Loops: the verifier needs the open-coded iterator for 65537 rounds.  */

#ifdef __bpf__
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __attribute__((weak, section(".ksyms")));
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __attribute__((weak, section(".ksyms")));
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __attribute__((weak, section(".ksyms")));

/* for (i = 0; i < n; i++) with n <= RM_WINDOW_WORDS_MAX + 1 */
#define RM_FOR(i, n)                                                                       \
	for (struct bpf_iter_num ___it __attribute__((aligned(8), cleanup(bpf_iter_num_destroy))), \
	     *___p __attribute__((unused)) =                                                   \
		     (bpf_iter_num_new(&___it, 0, (n)), (void)bpf_iter_num_destroy, (void *)0); \
	     ({                                                                                \
		     int *___t = bpf_iter_num_next(&___it);                                    \
		     (___t && ((i) = *___t, (i) >= 0 && (i) < (int)(n)));                      \
	     });)
#else
#define RM_FOR(i, n) for ((i) = 0; (i) < (int)(n); (i)++)
#endif

/* Hide a value from the optimiser so that a bounds check the verifier needs
 * (wi < nwords after wi = x % nwords) is not folded away. */
#define RM_OPAQUE(x) asm volatile("" : "+r"(x))

static __always_inline __u32 rm_popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (__u32)((x * 0x0101010101010101ULL) >> 56);
}

/*
 * Add the number of SEEN bits among the n positions q, q+1, ..., q+n-1 to
 * *seen and, if clear is set, make them PENDING. n <= nwords * 64 (a
 * position range never exceeds the ring). *seen lives in the context's
 * state, not in a register: the verifier then sees the same state on every
 * iteration and the loop converges. Returns 0, or -1 if a ring index leaves
 * the window (impossible with consistent arguments; the check keeps the
 * verifier and the caller honest).
 */
static __always_inline int rm_window_range(__u64 *win, __u32 nwords, __u64 q, __u64 n, int clear, __u64 *seen)
{
	__u64 first_word, last;
	__u32 rounds, lo_bit, hi_bit;
	int i;

	if (n == 0)
		return 0;
	first_word = q / 64;
	last = q + n - 1;
	rounds = (__u32)(last / 64 - first_word + 1); /* words touched, <= nwords + 1 */
	lo_bit = (__u32)(q % 64);
	hi_bit = (__u32)(last % 64);

	/* Everything in the body derives from i and loop invariants, so the
	 * verifier sees one state per iteration and the loop converges. */
	RM_FOR(i, rounds)
	{
		__u32 wi = (__u32)((first_word + (__u32)i) % nwords);
		__u32 lo = i == 0 ? lo_bit : 0;
		__u32 hi = (__u32)i == rounds - 1 ? hi_bit : 63;
		__u64 mask = (~0ULL >> (63 - hi)) & (~0ULL << lo);

		RM_OPAQUE(wi);
		if (wi >= nwords)
			return -1;
		*seen += rm_popcount64(win[wi] & mask);
		if (clear)
			win[wi] &= ~mask;
	}
	return 0;
}

static __always_inline int rm_window_test(__u64 *win, __u32 nwords, __u64 q)
{
	__u32 wi = (__u32)((q / 64) % nwords);

	RM_OPAQUE(wi);
	if (wi >= nwords)
		return -1;
	return (int)((win[wi] >> (q % 64)) & 1);
}

static __always_inline int rm_window_set(__u64 *win, __u32 nwords, __u64 q)
{
	__u32 wi = (__u32)((q / 64) % nwords);

	RM_OPAQUE(wi);
	if (wi >= nwords)
		return -1;
	win[wi] |= 1ULL << (q % 64);
	return 0;
}

/* L = max(S, H - W + 1) */
static __always_inline __u64 rm_seq_low(const struct rm_seq_state *st)
{
	__u64 w = st->c.window;

	return st->high + 1 >= st->start + w ? st->high + 1 - w : st->start;
}

/*
 * Close the open epoch (seed 000: "On closure, add the number of pending
 * positions to abandoned and clear pending"). reason is a set of
 * RM_FLAG_* closure bits; finalEpoch is always added. The final snapshot
 * is copied to *out (may be NULL). Does nothing if no epoch is open.
 * Returns 1 if an epoch was closed, 0 otherwise.
 */
static __always_inline int rm_seq_close(struct rm_seq_state *st, __u16 reason, struct rm_seq_counters *out)
{
	if (!st->active)
		return 0;
	st->c.abandoned += st->c.pending;
	st->c.pending = 0;
	st->c.flags |= RM_FLAG_FINAL_EPOCH | reason;
	st->active = 0;
	if (out)
		*out = st->c;
	return 1;
}

/* "No active epoch: set S=H=p; retain only p as SEEN; requests=1". */
static __always_inline int rm_seq_start(struct rm_seq_state *st, __u64 *win, __u32 nwords, __u32 window,
					__u32 psn, __u64 now)
{
	__u32 gen = st->c.epoch_gen + 1;

	__builtin_memset(&st->c, 0, sizeof(st->c));
	st->c.epoch_gen = gen;
	st->c.window = window;
	st->c.requests = 1;
	st->c.first_ns = now;
	st->c.last_ns = now;
	st->start = psn & RM_PSN_MASK;
	st->high = st->start;
	st->active = 1;
	return rm_window_set(win, nwords, st->high);
}

/*
 * Account one eligible request with PSN psn arriving at time now.
 *   st      context state (caller holds the context's lock)
 *   win     the context's window ring, nwords 64-bit words
 *   window  W for a new epoch, 1..min(2^22, nwords * 64); an open epoch
 *           keeps its own W (rdmaSequenceWindow is constant in an epoch)
 *   closed  receives the final snapshot when RM_SEQ_RESTARTED is returned
 * Returns an enum rm_seq_result, or a negative value if the arguments are
 * inconsistent (window larger than the ring), in which case nothing changed.
 */
static __always_inline int rm_seq_observe(struct rm_seq_state *st, __u64 *win, __u32 nwords, __u32 window,
					  __u32 psn, __u64 now, struct rm_seq_counters *closed)
{
	__u32 u, w;
	__u64 high, low;
	__u16 reason;

	psn &= RM_PSN_MASK;
	if (window == 0 || window > RM_WINDOW_MAX || window > nwords * 64)
		return -1;
	if (!st->active)
		return rm_seq_start(st, win, nwords, window, psn, now) < 0 ? -1 : RM_SEQ_STARTED;

	w = st->c.window;
	high = st->high;
	if (w == 0 || w > nwords * 64)
		return -1;

	/* Checked arithmetic: close before any counter or position could wrap. */
	if (st->c.requests >= RM_COUNTER_MAX || high - st->start > RM_COUNTER_MAX - w) {
		reason = 0;
		goto restart;
	}

	u = (psn - (__u32)(high & RM_PSN_MASK)) & RM_PSN_MASK;
	if (u == RM_PSN_HALF || (u < RM_PSN_HALF && u > w)) {
		reason = RM_FLAG_SERIAL_DISCONTINUITY;
		goto restart;
	}

	st->c.requests++;
	st->c.last_ns = now;
	low = rm_seq_low(st);

	if (u != 0 && u < RM_PSN_HALF) {
		/* 1 <= d <= W: forward advance. */
		__u64 d = u;
		__u64 new_high = high + d;
		__u64 new_low = new_high + 1 >= st->start + w ? new_high + 1 - w : st->start;
		__u64 leave_end = new_low < high + 1 ? new_low : high + 1; /* exclusive */
		__u64 expired_now = 0;

		st->seen = 0;
		if (leave_end > low) {
			if (rm_window_range(win, nwords, low, leave_end - low, 0, &st->seen) < 0)
				return -1;
			expired_now = leave_end - low - st->seen;
		}
		if (rm_window_range(win, nwords, high + 1, d, 1, &st->seen) < 0)
			return -1;
		rm_window_set(win, nwords, new_high);
		st->c.skipped += d - 1;
		st->c.expired += expired_now;
		st->c.pending = (__u32)(st->c.pending + (d - 1) - expired_now);
		st->high = new_high;
		return RM_SEQ_ACCOUNTED;
	}

	/* d <= 0: position H + d = H - back. */
	__u32 back = u == 0 ? 0 : RM_PSN_MOD - u;

	if (back > high - low) {
		st->c.unclassified_late++;
		return RM_SEQ_ACCOUNTED;
	}
	int bit = rm_window_test(win, nwords, high - back);

	if (bit < 0)
		return -1;
	if (bit) {
		st->c.repeated++;
	} else {
		rm_window_set(win, nwords, high - back);
		st->c.filled++;
		st->c.pending--;
	}
	return RM_SEQ_ACCOUNTED;

restart:
	rm_seq_close(st, reason, closed);
	return rm_seq_start(st, win, nwords, window, psn, now) < 0 ? -1 : RM_SEQ_RESTARTED;
}

#endif /* ROCEMETER_SEQOBS_H */
