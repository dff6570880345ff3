/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * seqobs.h - the bounded sequence observation engine of [SEQOBS]
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
 *
 * The window of a context is one array of 64-bit words (see
 * RM_WINDOW_VALUE_WORDS): nwords words of SEEN bits, a ring of nwords * 64
 * >= W positions (bit q mod nwords*64 is 1 when retained position q is
 * SEEN, 0 when it is PENDING), then two summary levels: bit j of level 1 is
 * set when ring word j is not zero, bit k of level 2 when level-1 word k is
 * not zero. A clear keeps its loop state in a struct rm_window_scratch the
 * caller provides (in BPF: per-CPU map memory, used only under the lock). Invariant: every bit of a position outside [L, H] is zero (a
 * window starts zeroed, as BPF array maps do). Positions leaving [L, H] and
 * the retained positions of a closed epoch are cleared as they go, so a
 * forward advance never clears the positions it adds, and counting the
 * SEEN positions that leave visits only non-zero words, found through the
 * summaries.
 *
 * Cost per request: O(1) for the first request, d <= 0 (fill, repeat,
 * late) and the serial checks. A forward advance of d, or a closure, scans
 * at most 2 x 16 level-2 words plus the non-zero ring words of the range it
 * clears; every such word is either emptied (its SEEN bits were set by
 * earlier requests, one each) or one of at most 4 edge words. So the work
 * does not grow with d or W: amortized, at most 32 level-2 reads + 5 word
 * clears + 1 bit set per request; the rare request that expires many
 * scattered SEEN positions at once pays for them (at most W / 64 words).
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

/*
 * rdmaSequenceFlags masks ([SEQOBS] "Qualification Flags", "Defined
 * Masks"), host order: X(suffix, mask, name, meaning) makes RM_FLAG_<suffix>.
 * Printed by rm_flags_to_text() (user/common/report_text.h).
 */
#define RM_FLAGS(X)                                                                                   \
	X(FINAL_EPOCH, 0x0001, "finalEpoch", "Epoch is closed.")                                      \
	X(PROFILE_VIOLATION, 0x0002, "profileViolation",                                              \
	  "Unsupported or malformed request/profile violation.")                                      \
	X(CAPTURE_DISCONTINUITY, 0x0004, "captureDiscontinuity", "Complete observation interrupted.") \
	X(STATE_EXHAUSTION, 0x0008, "stateExhaustion", "Context resource eviction.")                  \
	X(SERIAL_DISCONTINUITY, 0x0010, "serialDiscontinuity",                                        \
	  "Unsupported jump or ambiguous serial interpretation.")                                     \
	X(GENERATION_UNVERIFIED, 0x0020, "generationUnverified",                                      \
	  "Connection generation not independently established.")

#define RM_FLAG_ENUM_(suffix, mask, name, meaning) RM_FLAG_##suffix = mask,
enum rm_flag {
	RM_FLAGS(RM_FLAG_ENUM_)
};
#undef RM_FLAG_ENUM_
/* Every defined mask; the other bits (0xFFC0) are unassigned. */
#define RM_FLAG_OR_(suffix, mask, name, meaning) | (mask)
#define RM_FLAG_DEFINED_MASK (0 RM_FLAGS(RM_FLAG_OR_))
/* Closure-reason bits: allowed only together with finalEpoch. */
#define RM_FLAG_REASON_MASK           0x001e

/* Ring words needed for a window of w positions. */
#define RM_WINDOW_WORDS(w) (((w) + 63u) / 64u)
/* Summary words for a ring of nw words, and the whole window value in words:
 * ring, level 1, level 2. */
#define RM_SUM1_WORDS(nw) (((nw) + 63u) / 64u)
#define RM_SUM2_WORDS(nw) ((RM_SUM1_WORDS(nw) + 63u) / 64u)
#define RM_WINDOW_VALUE_WORDS(nw) ((nw) + RM_SUM1_WORDS(nw) + RM_SUM2_WORDS(nw))

/*
 * The counters of one epoch: exactly what a report carries besides its key
 * and IDs. Field names follow the Information Elements of [SEQOBS].
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
/* Loops: open-coded iterators, verified once per body, not per round.  */

#ifdef __bpf__
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __attribute__((weak, section(".ksyms")));
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __attribute__((weak, section(".ksyms")));
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __attribute__((weak, section(".ksyms")));

/* for (i = 0; i < n; i++); the body may break */
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

/* Index of the lowest set bit of x != 0. */
static __always_inline __u32 rm_lowest_bit(__u64 x)
{
	return rm_popcount64((x & (~x + 1)) - 1);
}

/* Bits lo..hi (0 <= lo <= hi <= 63) set. */
static __always_inline __u64 rm_bit_span(__u32 lo, __u32 hi)
{
	return (~0ULL >> (63 - hi)) & (~0ULL << lo);
}

/*
 * Mark position q SEEN in the window of nwords ring words and keep the
 * summaries. Returns 0, or -1 if an index leaves the window (impossible
 * with consistent arguments; the checks keep the verifier and the caller
 * honest).
 */
static __always_inline int rm_window_set(__u64 *win, __u32 nwords, __u64 q)
{
	__u32 n1 = RM_SUM1_WORDS(nwords), tot = nwords + n1 + RM_SUM2_WORDS(nwords);
	__u32 j = (__u32)((q / 64) % nwords), i1, i2;
	__u64 old;

	RM_OPAQUE(j);
	if (j >= nwords || j >= tot)
		return -1;
	old = win[j];
	win[j] = old | (1ULL << (q % 64));
	if (old)
		return 0;
	i1 = nwords + j / 64;
	RM_OPAQUE(i1);
	if (i1 >= tot)
		return -1;
	old = win[i1];
	win[i1] = old | (1ULL << (j % 64));
	if (old)
		return 0;
	i2 = nwords + n1 + j / 4096;
	RM_OPAQUE(i2);
	if (i2 >= tot)
		return -1;
	win[i2] |= 1ULL << ((j / 64) % 64);
	return 0;
}

static __always_inline int rm_window_test(__u64 *win, __u32 nwords, __u64 q)
{
	__u32 j = (__u32)((q / 64) % nwords);

	RM_OPAQUE(j);
	if (j >= nwords)
		return -1;
	return (int)((win[j] >> (q % 64)) & 1);
}

/*
 * Clear the bits mask of ring word j and keep the summaries: when the word
 * becomes zero, its level-1 bit goes, and with the last one of a level-1
 * word its level-2 bit. Returns how many SEEN bits were cleared, or -1 if
 * an index leaves the window.
 */
static __always_inline __s64 rm_window_clear_word(__u64 *win, __u32 nwords, __u32 j, __u64 mask)
{
	__u32 n1 = RM_SUM1_WORDS(nwords), tot = nwords + n1 + RM_SUM2_WORDS(nwords), i1, i2;
	__u64 w;
	__s64 seen;

	RM_OPAQUE(j);
	if (j >= nwords || j >= tot)
		return -1;
	w = win[j];
	if (!(w & mask))
		return 0;
	seen = rm_popcount64(w & mask);
	w &= ~mask;
	win[j] = w;
	if (w)
		return seen;
	i1 = nwords + j / 64;
	i2 = nwords + n1 + j / 4096;
	RM_OPAQUE(i1);
	RM_OPAQUE(i2);
	if (i1 >= tot || i2 >= tot)
		return -1;
	win[i1] &= ~(1ULL << (j % 64));
	if (!win[i1])
		win[i2] &= ~(1ULL << ((j / 64) % 64));
	return seen;
}

/*
 * The scratch of a clear: the run to clear (BPF functions take at most five
 * arguments) and the scan state, kept in map memory so that the verifier
 * sees the same register state on every loop iteration and the loops
 * converge. One per CPU is enough: it is used only under a context's lock.
 */
struct rm_window_scratch {
	__u64 seen;   /* SEEN bits counted */
	__u64 scan1;  /* level-1 bits still to visit */
	__u64 scan2;  /* level-2 bits still to visit */
	__u64 abs_s, fw, lw;
	__u32 s, e, lo_bit, hi_bit;
};

/*
 * One linear run of ring words [s, e) (s < e <= nwords) of a clear, given
 * in the scratch: ring word s holds absolute word abs_s, s + 1 holds
 * abs_s + 1, and so on. Positions of absolute words fw..lw are cleared, from
 * bit lo_bit of fw to bit hi_bit of lw; the SEEN ones are added to
 * scratch->seen. Visits only non-zero words, through the summaries.
 */
static __attribute__((noinline)) int rm_window_clear_run(struct rm_window_scratch *st, __u64 *win, __u32 nwords)
{
	__u32 n1 = RM_SUM1_WORDS(nwords), tot = nwords + n1 + RM_SUM2_WORDS(nwords);
	__u32 s = st->s, e = st->e, lo_bit = st->lo_bit & 63, hi_bit = st->hi_bit & 63;
	__u64 abs_s = st->abs_s, fw = st->fw, lw = st->lw;
	__u32 k_first = s / 64, k_last = (e - 1) / 64;
	__u32 g_first = k_first / 64, g_last = k_last / 64;
	int a, b, c;

	if (s >= e || e > nwords || g_last - g_first >= 16)
		return -1;
	RM_FOR(a, g_last - g_first + 1)
	{
		__u32 g = g_first + (__u32)a, i2 = nwords + n1 + g;

		RM_OPAQUE(i2);
		if (i2 >= tot)
			return -1;
		st->scan2 = win[i2] & rm_bit_span(g == g_first ? k_first % 64 : 0, g == g_last ? k_last % 64 : 63);
		RM_FOR(b, 64)
		{
			__u64 m2 = st->scan2;
			__u32 kb, k, i1;

			if (!m2)
				break;
			kb = rm_lowest_bit(m2);
			st->scan2 = m2 & (m2 - 1);
			k = g * 64 + (kb & 63);
			i1 = nwords + k;
			RM_OPAQUE(i1);
			if (i1 >= tot || i2 >= tot)
				return -1;
			st->scan1 = win[i1] & rm_bit_span(k == k_first ? s % 64 : 0, k == k_last ? (e - 1) % 64 : 63);
			RM_FOR(c, 64)
			{
				__u64 m1 = st->scan1, mask;
				__s64 cleared;
				__u32 jb, j;
				__u64 abs;

				if (!m1)
					break;
				jb = rm_lowest_bit(m1);
				st->scan1 = m1 & (m1 - 1);
				j = k * 64 + (jb & 63);
				if (j < s)
					return -1;
				abs = abs_s + (j - s);
				mask = rm_bit_span(abs == fw ? lo_bit : 0, abs == lw ? hi_bit : 63);
				cleared = rm_window_clear_word(win, nwords, j, mask);
				if (cleared < 0)
					return -1;
				st->seen += (__u64)cleared;
			}
		}
	}
	return 0;
}

/*
 * Make the n positions q, q+1, ..., q+n-1 (n <= nwords * 64) PENDING.
 * Returns how many of them were SEEN, or -1 (inconsistent arguments).
 */
static __always_inline __s64 rm_window_clear(struct rm_window_scratch *st, __u64 *win, __u32 nwords, __u64 q,
					     __u64 n)
{
	__u64 fw, lw, nw;
	__u32 j0, lo_bit, hi_bit;

	if (n == 0)
		return 0;
	if (n > (__u64)nwords * 64)
		return -1;
	fw = q / 64;
	lw = (q + n - 1) / 64;
	nw = lw - fw + 1; /* <= nwords + 1 */
	j0 = (__u32)(fw % nwords);
	lo_bit = (__u32)(q % 64);
	hi_bit = (__u32)((q + n - 1) % 64);
	if (nw == 1) /* the common case (small d): one word, no summary walk */
		return rm_window_clear_word(win, nwords, j0, rm_bit_span(lo_bit, hi_bit));
	st->seen = 0;
	st->fw = fw;
	st->lw = lw;
	st->lo_bit = lo_bit;
	st->hi_bit = hi_bit;
	st->s = j0;
	st->abs_s = fw;
	st->e = j0 + nw <= nwords ? (__u32)(j0 + nw) : nwords;
	if (rm_window_clear_run(st, win, nwords))
		return -1;
	if (j0 + nw > nwords) {
		st->s = 0;
		st->e = (__u32)(j0 + nw - nwords);
		st->abs_s = fw + (nwords - j0);
		if (rm_window_clear_run(st, win, nwords))
			return -1;
	}
	return (__s64)st->seen;
}

/* L = max(S, H - W + 1) */
static __always_inline __u64 rm_seq_low(const struct rm_seq_state *st)
{
	__u64 w = st->c.window;

	return st->high + 1 >= st->start + w ? st->high + 1 - w : st->start;
}

/*
 * Close the open epoch ([SEQOBS]: "On closure, add the number of pending
 * positions to abandoned and clear pending"). reason is a set of
 * RM_FLAG_* closure bits; finalEpoch is always added. The final snapshot
 * is copied to *out (may be NULL). The retained positions are cleared from
 * the window (win, nwords ring words), which a new epoch finds zeroed.
 * Does nothing if no epoch is open. Returns 1 if an epoch was closed, 0
 * otherwise, -1 on inconsistent arguments.
 */
static __always_inline int rm_seq_close(struct rm_seq_state *st, __u64 *win, __u32 nwords, __u16 reason,
					struct rm_seq_counters *out, struct rm_window_scratch *sc)
{
	__u64 low;

	if (!st->active)
		return 0;
	low = rm_seq_low(st);
	if (rm_window_clear(sc, win, nwords, low, st->high - low + 1) < 0)
		return -1;
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
 *   win     the context's window: RM_WINDOW_VALUE_WORDS(nwords) 64-bit words,
 *           zeroed before its first use
 *   window  W for a new epoch, 1..min(2^22, nwords * 64); an open epoch
 *           keeps its own W (rdmaSequenceWindow is constant in an epoch)
 *   closed  receives the final snapshot when RM_SEQ_RESTARTED is returned
 *   sc      scratch of the window clear (see struct rm_window_scratch)
 * Returns an enum rm_seq_result, or a negative value if the arguments are
 * inconsistent: a window larger than the ring (checked first: nothing
 * changed), or a ring index out of range, which consistent arguments never
 * produce (the checks exist for the verifier).
 */
static __always_inline int rm_seq_observe(struct rm_seq_state *st, __u64 *win, __u32 nwords, __u32 window,
					  __u32 psn, __u64 now, struct rm_seq_counters *closed,
					  struct rm_window_scratch *sc)
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
	/* flowEnd is the last accounted arrival, never before flowStart: an
	 * arrival time read earlier (by another CPU, before the lock) leaves it. */
	if (now > st->c.last_ns)
		st->c.last_ns = now;
	low = rm_seq_low(st);

	if (u != 0 && u < RM_PSN_HALF) {
		/* 1 <= d <= W: forward advance. */
		__u64 d = u;
		__u64 new_high = high + d;
		__u64 new_low = new_high + 1 >= st->start + w ? new_high + 1 - w : st->start;
		__u64 leave_end = new_low < high + 1 ? new_low : high + 1; /* exclusive */
		__u64 expired_now = 0;

		/* Positions entering [L, H] are zero already (the invariant);
		 * those leaving are counted and cleared. */
		if (leave_end > low) {
			__s64 seen = rm_window_clear(sc, win, nwords, low, leave_end - low);

			if (seen < 0)
				return -1;
			expired_now = leave_end - low - (__u64)seen;
		}
		if (rm_window_set(win, nwords, new_high))
			return -1;
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
	if (rm_seq_close(st, win, nwords, reason, closed, sc) < 0)
		return -1;
	return rm_seq_start(st, win, nwords, window, psn, now) < 0 ? -1 : RM_SEQ_RESTARTED;
}

#endif /* ROCEMETER_SEQOBS_H */
