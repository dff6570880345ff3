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
 * The window of an epoch is inline (the 64 positions H - 63 .. H, in the
 * state itself: struct rm_seq_state) while every PENDING position is among
 * them, else a pool window that the state's owner hands over. A pool
 * window is one array of 64-bit words (see RM_WINDOW_VALUE_WORDS): nwords words of SEEN bits, a ring of nwords * 64
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

#define RM_PSN_BITS         24
#define RM_PSN_MOD          (1u << RM_PSN_BITS) /* M = 2^24 */
#define RM_PSN_MASK         (RM_PSN_MOD - 1)
#define RM_PSN_HALF         (1u << (RM_PSN_BITS - 1)) /* M/2: ambiguous */
#define RM_WINDOW_MAX       (1u << 22)                /* W <= 2^22 */
#define RM_WINDOW_WORDS_MAX (RM_WINDOW_MAX / 64)      /* 65536 words = 512 KiB */

/* Largest value a counter or H - S may reach; S < 2^24, so H cannot wrap. */
#ifndef RM_COUNTER_MAX
#define RM_COUNTER_MAX (~(__u64)0 - RM_PSN_MOD)
#endif

/*
 * rdmaSequenceFlags masks ([SEQOBS] "Qualification Flags", "Defined
 * Masks"), host order: X(suffix, mask, name, meaning) makes RM_FLAG_<suffix>.
 * Printed by rm_flags_to_text() (user/common/report_text.h).
 */
#define RM_FLAGS(X)                                                                                                    \
	X(FINAL_EPOCH, 0x0001, "finalEpoch", "Epoch is closed.")                                                       \
	X(PROFILE_VIOLATION, 0x0002, "profileViolation", "Unsupported or malformed request/profile violation.")        \
	X(CAPTURE_DISCONTINUITY, 0x0004, "captureDiscontinuity", "Complete observation interrupted.")                  \
	X(STATE_EXHAUSTION, 0x0008, "stateExhaustion", "Context resource eviction.")                                   \
	X(SERIAL_DISCONTINUITY, 0x0010, "serialDiscontinuity", "Unsupported jump or ambiguous serial interpretation.") \
	X(GENERATION_UNVERIFIED, 0x0020, "generationUnverified", "Connection generation not independently established.")

#define RM_FLAG_ENUM_(suffix, mask, name, meaning) RM_FLAG_##suffix = mask,
enum rm_flag { RM_FLAGS(RM_FLAG_ENUM_) };
#undef RM_FLAG_ENUM_
/* Every defined mask; the other bits (0xFFC0) are unassigned. */
#define RM_FLAG_OR_(suffix, mask, name, meaning) | (mask)
#define RM_FLAG_DEFINED_MASK                     (0 RM_FLAGS(RM_FLAG_OR_))
/* Closure-reason bits: allowed only together with finalEpoch. */
#define RM_FLAG_REASON_MASK 0x001e

/* Ring words needed for a window of w positions. */
#define RM_WINDOW_WORDS(w) (((w) + 63u) / 64u)
/* Summary words for a ring of nw words, and the whole window value in words:
 * ring, level 1, level 2. */
#define RM_SUM1_WORDS(nw)         (((nw) + 63u) / 64u)
#define RM_SUM2_WORDS(nw)         ((RM_SUM1_WORDS(nw) + 63u) / 64u)
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

/* Positions the inline window holds: H - 63 .. H. */
#define RM_INLINE_BITS 64

/*
 * One context's engine state (80 bytes); lives in the locked part of a
 * context. Only what cannot be derived is kept: skipped, expired and
 * abandoned follow from the rest (rm_seq_snapshot()):
 *   requests - 1 = forward advances + filled + repeated + late, and
 *   H - S = skipped + forward advances, so
 *   skipped = H - S - (requests - 1 - filled - repeated - late),
 *   expired = skipped - filled - pending (active) or - abandoned (closed).
 * After a closure `pending` holds the abandoned count of that epoch.
 *
 * The window has two tiers:
 *   inline  (pooled = 0) `win` is the SEEN bitmap of positions H - 63 .. H,
 *           bit k for position H - 63 + k (bit 63 is H); a bit of a position
 *           below L is 1. Every PENDING position is in this range, so a
 *           retained position below H - 63 is SEEN.
 *   pooled  (pooled = 1) the low 32 bits of `win` name a pool window (a
 *           ring of nwords * 64 >= W SEEN bits with its summaries and a base
 *           B, see RM_POOL_VALUE_WORDS): a retained position below B is SEEN,
 *           one at or above B is SEEN iff its ring bit is set. The ring has
 *           no bit set outside [max(L, B), H].
 * An epoch starts inline. It takes a pool window (its owner hands it one)
 * when a PENDING position would fall below H - 63, and gives it back when
 * no position is pending any more, and at its closure.
 */
struct rm_seq_state {
	__u64 high;      /* H */
	__u64 requests;  /* requestPacketTotalCount */
	__u64 filled;    /* filledPsnTotalCount */
	__u64 repeated;  /* repeatedPsnTotalCount */
	__u64 late;      /* unclassifiedLatePacketTotalCount */
	__u64 first_ns;  /* flowStartMilliseconds, before conversion */
	__u64 last_ns;   /* flowEndMilliseconds, before conversion */
	__u64 win;       /* inline: the SEEN bits; pooled: the pool slot (low 32 bits) */
	__u32 window;    /* W of the epoch, 1..2^22 */
	__u32 pending;   /* pendingPsnCount; after a closure, the closed epoch's abandoned count */
	__u32 epoch_gen; /* local epoch generation of the context */
	__u32 s_flags;   /* bits 0..23: S, the first accounted PSN; RM_SEQ_ACTIVE, RM_SEQ_POOLED, and
			   * RM_SEQ_OWNER_BITS for the state's owner (struct rm_ctx). No C bitfields:
			   * the kernel refuses the BTF of a bitfield beside a bpf_spin_lock. */
};

#define RM_SEQ_ACTIVE     (1u << 24)  /* an epoch is open */
#define RM_SEQ_POOLED     (1u << 25)  /* the window is a pool window */
#define RM_SEQ_OWNER_BITS 0xfc000000u /* not the engine's: bits the state's owner keeps in s_flags */

/* S */
static __always_inline __u32 rm_seq_s(const struct rm_seq_state *st)
{
	return st->s_flags & RM_PSN_MASK;
}

/* An epoch is open. */
static __always_inline int rm_seq_active(const struct rm_seq_state *st)
{
	return (st->s_flags & RM_SEQ_ACTIVE) != 0;
}

/* The window is a pool window. */
static __always_inline int rm_seq_pooled(const struct rm_seq_state *st)
{
	return (st->s_flags & RM_SEQ_POOLED) != 0;
}

/* Result of rm_seq_observe(). */
enum rm_seq_result {
	RM_SEQ_STARTED = 1,     /* no epoch was open: p started one */
	RM_SEQ_ACCOUNTED = 2,   /* p accounted to the open epoch */
	RM_SEQ_RESTARTED = 3,   /* open epoch closed into *closed, p started a new one */
	RM_SEQ_NEED_WINDOW = 4, /* p needs a pool window the caller did not give: nothing changed */
};

/*
 * A pool window: RM_WINDOW_VALUE_WORDS(nwords) words of ring and summaries,
 * then the base B (an extended position). A window in the pool is all zero.
 */
#define RM_POOL_BASE_WORD(nw)   RM_WINDOW_VALUE_WORDS(nw)
#define RM_POOL_VALUE_WORDS(nw) (RM_WINDOW_VALUE_WORDS(nw) + 1)

/*
 * The pool windows one call of the engine may use, and what it did with
 * them. The caller fills the inputs; the engine sets the outputs (all 0
 * when it neither took nor gave back a window).
 */
struct rm_seq_win {
	__u64 *pool;  /* in: the state's pool window (rm_seq_pooled(st)), or a zeroed spare to take; NULL: none */
	__u32 slot;   /* in: the slot of `pool` (the pooled state's must match st->win) */
	__u8 took;    /* out: the spare became the state's window (slot is now the state's) */
	__u8 release; /* out: the state gave up pool window release_slot: clean it with
		       * rm_window_release(win, nwords, release_lo, release_hi) and give it back */
	__u8 _pad[2];
	__u32 release_slot;
	__u32 _pad2;
	__u64 release_lo, release_hi; /* the positions its bits may cover */
};

/* ------------------------------------------------------------------ */
/* Loops: open-coded iterators, verified once per body, not per round.  */

#ifdef __bpf__
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __attribute__((weak, section(".ksyms")));
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __attribute__((weak, section(".ksyms")));
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __attribute__((weak, section(".ksyms")));

/* for (i = 0; i < n; i++); the body may break */
#define RM_FOR(i, n)                                                                                              \
	for (struct bpf_iter_num ___it __attribute__((aligned(8), cleanup(bpf_iter_num_destroy))),                \
	     *___p                                                                                                \
	     __attribute__((unused)) = (bpf_iter_num_new(&___it, 0, (n)), (void)bpf_iter_num_destroy, (void *)0); \
	     ({                                                                                                   \
		     int *___t = bpf_iter_num_next(&___it);                                                       \
		     (___t && ((i) = *___t, (i) >= 0 && (i) < (int)(n)));                                         \
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
 * OR mask into ring word j and keep the summaries. Returns 0, or -1 if an
 * index leaves the window.
 */
static __always_inline int rm_window_or_word(__u64 *win, __u32 nwords, __u32 j, __u64 mask)
{
	__u32 n1 = RM_SUM1_WORDS(nwords), tot = nwords + n1 + RM_SUM2_WORDS(nwords), i1, i2;
	__u64 old;

	RM_OPAQUE(j);
	if (j >= nwords || j >= tot)
		return -1;
	old = win[j];
	win[j] = old | mask;
	if (old || !mask)
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

/*
 * Mark position q SEEN in the window of nwords ring words and keep the
 * summaries. Returns 0, or -1 if an index leaves the window (impossible
 * with consistent arguments; the checks keep the verifier and the caller
 * honest).
 */
static __always_inline int rm_window_set(__u64 *win, __u32 nwords, __u64 q)
{
	return rm_window_or_word(win, nwords, (__u32)((q / 64) % nwords), 1ULL << (q % 64));
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
	__u64 seen;  /* SEEN bits counted */
	__u64 scan1; /* level-1 bits still to visit */
	__u64 scan2; /* level-2 bits still to visit */
	__u64 scan3; /* level-2 words still to visit: bit x for word g_first + x, set when it has bits in the run */
	__u64 abs_s, fw, lw;
	__u32 s, e, lo_bit, hi_bit;
};

/*
 * One linear run of ring words [s, e) (s < e <= nwords) of a clear, given
 * in the scratch: ring word s holds absolute word abs_s, s + 1 holds
 * abs_s + 1, and so on. Positions of absolute words fw..lw are cleared, from
 * bit lo_bit of fw to bit hi_bit of lw; the SEEN ones are added to
 * scratch->seen. Visits only non-zero words, through the summaries: the at
 * most 16 level-2 words of the run are read first, and only those with bits
 * in the run are walked (a forward jump of about W crosses all 16 with one
 * bit set). The first read is an iterator too, not a bounded loop: the
 * verifier walked a loop that may break after any of 16 rounds once per
 * exit, through all the rest, which at W = 2^22 (16 level-2 words) was 3/4 of
 * the verification of every program (rocemeter_xdp 850,715 -> 139,661
 * instructions, replay's 315,130 -> 78,148, rocemeter_ctl 85,364 -> 6,406:
 * replay's start-up 0.6 -> 0.13 s); its price, a kfunc call per round, is
 * some 30-45 ns on a forward jump of about W (docs/benchmarks.md).
 */
static __attribute__((noinline)) int rm_window_clear_run(struct rm_window_scratch *sc, __u64 *win, __u32 nwords)
{
	__u32 n1 = RM_SUM1_WORDS(nwords), tot = nwords + n1 + RM_SUM2_WORDS(nwords);
	__u32 s = sc->s, e = sc->e, lo_bit = sc->lo_bit & 63, hi_bit = sc->hi_bit & 63;
	__u64 abs_s = sc->abs_s, fw = sc->fw, lw = sc->lw;
	__u32 k_first = s / 64, k_last = (e - 1) / 64;
	__u32 g_first = k_first / 64, g_last = k_last / 64;
	int a, b, c, x;

	if (s >= e || e > nwords || g_last - g_first >= 16)
		return -1;
	sc->scan3 = 0;
	RM_FOR(x, 16)
	{
		__u32 g = g_first + (__u32)x, i2 = nwords + n1 + g;

		if (g > g_last)
			break;
		RM_OPAQUE(i2);
		if (i2 >= tot)
			return -1;
		if (win[i2] & rm_bit_span(g == g_first ? k_first % 64 : 0, g == g_last ? k_last % 64 : 63))
			sc->scan3 |= 1ULL << x;
	}
	RM_FOR(a, 16)
	{
		__u64 m3 = sc->scan3;
		__u32 g, i2;

		if (!m3)
			break;
		g = g_first + (rm_lowest_bit(m3) & 15);
		sc->scan3 = m3 & (m3 - 1);
		i2 = nwords + n1 + g;
		RM_OPAQUE(i2);
		if (i2 >= tot)
			return -1;
		sc->scan2 = win[i2] & rm_bit_span(g == g_first ? k_first % 64 : 0, g == g_last ? k_last % 64 : 63);
		RM_FOR(b, 64)
		{
			__u64 m2 = sc->scan2;
			__u32 kb, k, i1;

			if (!m2)
				break;
			kb = rm_lowest_bit(m2);
			sc->scan2 = m2 & (m2 - 1);
			k = g * 64 + (kb & 63);
			i1 = nwords + k;
			RM_OPAQUE(i1);
			if (i1 >= tot || i2 >= tot)
				return -1;
			sc->scan1 = win[i1] & rm_bit_span(k == k_first ? s % 64 : 0, k == k_last ? (e - 1) % 64 : 63);
			RM_FOR(c, 64)
			{
				__u64 m1 = sc->scan1, mask;
				__s64 cleared;
				__u32 jb, j;
				__u64 abs;

				if (!m1)
					break;
				jb = rm_lowest_bit(m1);
				sc->scan1 = m1 & (m1 - 1);
				j = k * 64 + (jb & 63);
				if (j < s)
					return -1;
				abs = abs_s + (j - s);
				mask = rm_bit_span(abs == fw ? lo_bit : 0, abs == lw ? hi_bit : 63);
				cleared = rm_window_clear_word(win, nwords, j, mask);
				if (cleared < 0)
					return -1;
				sc->seen += (__u64)cleared;
			}
		}
	}
	return 0;
}

/*
 * Make the n positions q, q+1, ..., q+n-1 (n <= nwords * 64) PENDING.
 * Returns how many of them were SEEN, or -1 (inconsistent arguments).
 */
static __always_inline __s64 rm_window_clear(struct rm_window_scratch *sc, __u64 *win, __u32 nwords, __u64 q, __u64 n)
{
	__u64 fw, lw, nw;
	__u32 j0, lo_bit, hi_bit;
	int r;

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
	sc->seen = 0;
	sc->fw = fw;
	sc->lw = lw;
	sc->lo_bit = lo_bit;
	sc->hi_bit = hi_bit;
	sc->s = j0;
	sc->abs_s = fw;
	sc->e = j0 + nw <= nwords ? (__u32)(j0 + nw) : nwords;
	/* The run to the ring's end, then the one from its start if the
	 * positions wrap: one call in an iterator, so that the verifier walks
	 * rm_window_clear_run() once per caller, not once per run. */
	RM_FOR(r, 2)
	{
		if (r == 1) {
			if (j0 + nw <= nwords)
				break;
			sc->s = 0;
			sc->e = (__u32)(j0 + nw - nwords);
			sc->abs_s = fw + (nwords - j0);
		}
		if (rm_window_clear_run(sc, win, nwords))
			return -1;
	}
	return (__s64)sc->seen;
}

/* L = max(S, H - W + 1) */
static __always_inline __u64 rm_seq_low(const struct rm_seq_state *st)
{
	__u64 w = st->window;

	__u64 s = rm_seq_s(st);

	return st->high + 1 >= s + w ? st->high + 1 - w : s;
}

/*
 * The counters of the state (an open epoch, or the last closed one with
 * finalEpoch; the closure reason is known only to rm_seq_close()'s
 * snapshot). All zero for a state that never started an epoch.
 */
static __always_inline void rm_seq_snapshot(const struct rm_seq_state *st, struct rm_seq_counters *out)
{
	__u64 skipped = 0;

	__builtin_memset(out, 0, sizeof(*out));
	if (!st->requests)
		return;
	skipped = st->high - rm_seq_s(st) - (st->requests - 1 - st->filled - st->repeated - st->late);
	out->requests = st->requests;
	out->skipped = skipped;
	out->filled = st->filled;
	out->expired = skipped - st->filled - st->pending;
	if (rm_seq_active(st)) {
		out->pending = st->pending;
	} else {
		out->abandoned = st->pending;
		out->flags = RM_FLAG_FINAL_EPOCH;
	}
	out->repeated = st->repeated;
	out->unclassified_late = st->late;
	out->first_ns = st->first_ns;
	out->last_ns = st->last_ns;
	out->window = st->window;
	out->epoch_gen = st->epoch_gen;
}

/* The state gives its pool window back (caller cleans it after unlocking). */
static __always_inline void rm_seq_release(struct rm_seq_state *st, struct rm_seq_win *w)
{
	w->release = 1;
	w->release_slot = (__u32)st->win;
	w->release_lo = rm_seq_low(st);
	w->release_hi = st->high;
	st->s_flags &= ~RM_SEQ_POOLED;
	st->win = ~0ULL; /* inline, every position SEEN */
}

/*
 * Close the open epoch ([SEQOBS]: "On closure, add the number of pending
 * positions to abandoned and clear pending"). reason is a set of
 * RM_FLAG_* closure bits; finalEpoch is always added. The final snapshot
 * is copied to *out (may be NULL). A pool window is given back through w
 * (no window is read: a closure needs none). Does nothing if no epoch is
 * open. Returns 1 if an epoch was closed, 0 otherwise.
 */
static __always_inline int rm_seq_close(struct rm_seq_state *st, struct rm_seq_win *w, __u16 reason,
					struct rm_seq_counters *out)
{
	if (!rm_seq_active(st))
		return 0;
	if (rm_seq_pooled(st))
		rm_seq_release(st, w);
	st->s_flags &= ~RM_SEQ_ACTIVE; /* st->pending now counts the abandoned positions */
	if (out) {
		rm_seq_snapshot(st, out);
		out->flags = RM_FLAG_FINAL_EPOCH | reason;
	}
	return 1;
}

/* "No active epoch: set S=H=p; retain only p as SEEN; requests=1". */
static __always_inline void rm_seq_start(struct rm_seq_state *st, __u32 window, __u32 psn, __u64 now)
{
	st->epoch_gen++;
	st->window = window;
	st->requests = 1;
	st->filled = st->repeated = st->late = 0;
	st->pending = 0;
	st->first_ns = now;
	st->last_ns = now;
	st->high = psn & RM_PSN_MASK;
	st->win = ~0ULL;
	st->s_flags = (st->s_flags & RM_SEQ_OWNER_BITS) | RM_SEQ_ACTIVE | (psn & RM_PSN_MASK);
}

/*
 * A forward advance of d (1 <= d <= W) of an inline state: the new SEEN
 * bits, how many PENDING positions leave the window, or that a PENDING
 * position would fall below H' - 63 while retained (returns 1: a pool
 * window is needed, nothing computed). Changes nothing.
 *
 * In the new bitmap, position q has index i = H' - q (bit 63 - i); old bit
 * k has index d + 63 - k; new PENDING positions H+1 .. H'-1 have indices
 * 1 .. d-1; a position is retained iff i <= r = H' - L'.
 */
static __always_inline int rm_inline_advance(const struct rm_seq_state *st, __u64 d, __u64 *bits, __u64 *expired)
{
	__u64 w = st->window, span = st->high + d - rm_seq_s(st), r = span < w - 1 ? span : w - 1;
	__u64 old = st->win, gone, nb, keep;

	if (d > RM_INLINE_BITS)
		return 1; /* new PENDING positions at indices 64 .. d-1 <= r */
	if (d == RM_INLINE_BITS) {
		gone = ~old; /* every old bit leaves; PENDING ones at indices 64 .. 127 */
		nb = 1ULL << 63;
	} else {
		gone = ~old & ((1ULL << d) - 1); /* old bits 0 .. d-1 leave */
		nb = (old >> d) | (1ULL << 63);
	}
	/* A leaving PENDING position is retained iff its index d + 63 - k <= r,
	 * i.e. k >= d + 63 - r. */
	if (r + 1 >= d + 64) {
		if (gone)
			return 1;
	} else {
		__u64 k0 = d + 63 - r; /* 1 .. 127 */

		if (k0 < 64 && (gone >> k0))
			return 1;
		*expired = rm_popcount64(k0 < 64 ? gone & ((1ULL << k0) - 1) : gone);
	}
	if (r + 1 >= d + 64)
		*expired = 0;
	/* Bits of positions below L' (indices > r, bits below 63 - r) become 1;
	 * a PENDING one among them leaves the window. */
	if (r < 63) {
		keep = ~0ULL << (63 - r);
		*expired += rm_popcount64(~nb & ~keep);
		nb |= ~keep;
	}
	*bits = nb;
	return 0;
}

/*
 * Whether accounting psn to st would need a pool window that st does not
 * have (an inline state whose PENDING positions would leave the inline
 * range). Changes nothing; the BPF caller asks before taking the lock, on
 * a state another CPU may change meanwhile, so the answer is a hint: the
 * engine checks again under the lock (RM_SEQ_NEED_WINDOW).
 */
static __always_inline int rm_seq_may_need_window(const struct rm_seq_state *st, __u32 psn)
{
	__u64 w = st->window, bits, expired;
	__u32 u;

	if (!rm_seq_active(st) || rm_seq_pooled(st) || w <= RM_INLINE_BITS || w > RM_WINDOW_MAX)
		return 0;
	u = ((psn & RM_PSN_MASK) - (__u32)(st->high & RM_PSN_MASK)) & RM_PSN_MASK;
	if (u == 0 || u >= RM_PSN_HALF || u > w)
		return 0;
	return rm_inline_advance(st, u, &bits, &expired);
}

/*
 * Inline -> pooled: copy the retained inline positions [B, H], B =
 * max(L, H - 63), into the zeroed pool window pw and record B. Counters do
 * not change. Returns 0, or -1 on an index out of range.
 */
static __always_inline int rm_seq_promote(struct rm_seq_state *st, struct rm_seq_win *w, __u32 nw)
{
	__u64 *pw = w->pool, low = rm_seq_low(st), off = st->high - low, b, bits;
	__u32 bw = RM_POOL_BASE_WORD(nw), k0, sh, j;

	if (off >= 63) {
		b = st->high - 63;
		k0 = 0;
	} else {
		b = low;
		k0 = (__u32)(63 - off);
	}
	bits = (st->win >> k0) & (~0ULL >> k0); /* bit j: position b + j */
	sh = (__u32)(b % 64);
	j = (__u32)((b / 64) % nw);
	if (rm_window_or_word(pw, nw, j, bits << sh))
		return -1;
	if (sh && (bits >> (64 - sh)) && rm_window_or_word(pw, nw, j + 1 < nw ? j + 1 : 0, bits >> (64 - sh)))
		return -1;
	RM_OPAQUE(bw);
	if (bw >= RM_POOL_VALUE_WORDS(nw))
		return -1;
	pw[bw] = b;
	st->win = w->slot;
	st->s_flags |= RM_SEQ_POOLED;
	w->took = 1;
	return 0;
}

/*
 * Clean a pool window that a state gave up (struct rm_seq_win release_*):
 * clear the bits of positions [max(lo, B), hi] and B, so that it goes back
 * to the pool zeroed. The window must not be reachable from any state any
 * more (the caller holds it alone: no lock needed). Cost: the summary walk
 * of one clear. Returns 0, or -1 on inconsistent arguments.
 */
static __always_inline int rm_window_release(__u64 *pw, __u32 nwords, __u64 lo, __u64 hi, struct rm_window_scratch *sc)
{
	__u32 bw = RM_POOL_BASE_WORD(nwords);
	__u64 b;

	RM_OPAQUE(bw);
	if (bw >= RM_POOL_VALUE_WORDS(nwords))
		return -1;
	b = pw[bw];
	if (b > lo)
		lo = b;
	if (hi >= lo && rm_window_clear(sc, pw, nwords, lo, hi - lo + 1) < 0)
		return -1;
	pw[bw] = 0;
	return 0;
}

/*
 * "Count request" of every row but the first: one more request, and
 * flowEnd the last accounted arrival, never before flowStart: an arrival
 * time read earlier (by another CPU, before the lock) leaves it.
 */
static __always_inline void rm_seq_count(struct rm_seq_state *st, __u64 now)
{
	st->requests++;
	if (now > st->last_ns)
		st->last_ns = now;
}

/*
 * [SEQOBS] "Per-Request Transitions", u = M/2 or d > W: "Close with
 * serialDiscontinuity; start fresh state with p; do not account p to the
 * old epoch". reason is the closure's RM_FLAG_* bits: serialDiscontinuity
 * here, none for the checked arithmetic's "close and restart before
 * overflow", stateExhaustion for rm_seq_exhausted(). The final snapshot
 * goes to *closed. Returns RM_SEQ_RESTARTED.
 */
static __always_inline int rm_seq_restart(struct rm_seq_state *st, struct rm_seq_win *w, __u16 reason, __u32 window,
					  __u32 psn, __u64 now, struct rm_seq_counters *closed)
{
	rm_seq_close(st, w, reason, closed);
	rm_seq_start(st, window, psn, now);
	return RM_SEQ_RESTARTED;
}

/*
 * 1 <= d <= W of a pooled state with its window pw: positions entering
 * [L, H] are zero already (the invariant); those leaving are counted and
 * cleared, below B they are SEEN; then H is SEEN. The window goes back
 * when nothing is pending. Returns RM_SEQ_ACCOUNTED, or -1 on a ring index
 * out of range.
 */
static __always_inline int rm_seq_advance_pooled(struct rm_seq_state *st, struct rm_seq_win *w, __u32 nw, __u64 d,
						 struct rm_window_scratch *sc)
{
	__u64 *pw = w->pool, high = st->high, low = rm_seq_low(st), s = rm_seq_s(st), wd = st->window;
	__u64 new_high = high + d;
	__u64 new_low = new_high + 1 >= s + wd ? new_high + 1 - wd : s;
	__u64 leave_end = new_low < high + 1 ? new_low : high + 1; /* exclusive */
	__u64 expired_now = 0, b, from;
	__u32 bw = RM_POOL_BASE_WORD(nw);

	if (!pw)
		return -1;
	RM_OPAQUE(bw);
	if (bw >= RM_POOL_VALUE_WORDS(nw))
		return -1;
	b = pw[bw];
	from = low > b ? low : b;
	if (leave_end > from) {
		__s64 seen = rm_window_clear(sc, pw, nw, from, leave_end - from);

		if (seen < 0)
			return -1;
		expired_now = leave_end - from - (__u64)seen;
	}
	if (rm_window_set(pw, nw, new_high))
		return -1;
	st->pending = (__u32)(st->pending + (d - 1) - expired_now);
	st->high = new_high;
	if (!st->pending)
		rm_seq_release(st, w);
	return RM_SEQ_ACCOUNTED;
}

/*
 * [SEQOBS] "Per-Request Transitions", 1 <= d <= W: "Count request; add
 * H+1 through H+d-1 as PENDING and add d-1 to skipped; advance H by d;
 * mark H SEEN; expire each pending position below new L once". Inline
 * while the inline window holds every PENDING position (the common case);
 * else in a pool window: the state's own, or the spare in w it takes.
 * Returns RM_SEQ_ACCOUNTED, RM_SEQ_NEED_WINDOW (no spare at hand: nothing
 * changed), or -1 on a ring index out of range.
 */
static __always_inline int rm_seq_advance(struct rm_seq_state *st, struct rm_seq_win *w, __u32 nw, __u32 d, __u64 now,
					  struct rm_window_scratch *sc)
{
	if (!rm_seq_pooled(st)) {
		__u64 bits = 0, expired = 0;

		if (!rm_inline_advance(st, d, &bits, &expired)) {
			rm_seq_count(st, now);
			st->pending = (__u32)(st->pending + (d - 1) - expired);
			st->win = bits;
			st->high += d;
			return RM_SEQ_ACCOUNTED;
		}
		if (!w->pool)
			return RM_SEQ_NEED_WINDOW;
		if (rm_seq_promote(st, w, nw))
			return -1;
	}
	rm_seq_count(st, now);
	return rm_seq_advance_pooled(st, w, nw, d, sc);
}

/*
 * d <= 0 of a pooled state: position q = H - back, within [L, H], in the
 * state's pool window (below B: SEEN). Returns RM_SEQ_ACCOUNTED, or -1 on
 * a ring index out of range.
 */
static __always_inline int rm_seq_behind_pooled(struct rm_seq_state *st, struct rm_seq_win *w, __u32 nw, __u64 q)
{
	__u64 *pw = w->pool;
	__u32 bw = RM_POOL_BASE_WORD(nw);
	int bit;

	RM_OPAQUE(bw);
	if (!pw || bw >= RM_POOL_VALUE_WORDS(nw))
		return -1;
	bit = q < pw[bw] ? 1 : rm_window_test(pw, nw, q);
	if (bit < 0)
		return -1;
	if (bit) {
		st->repeated++;
		return RM_SEQ_ACCOUNTED;
	}
	if (rm_window_set(pw, nw, q))
		return -1;
	st->filled++;
	st->pending--;
	if (!st->pending)
		rm_seq_release(st, w);
	return RM_SEQ_ACCOUNTED;
}

/*
 * [SEQOBS] "Per-Request Transitions", d <= 0, position H + d = H - back:
 * "Count request" and, if it is in [L, H] and PENDING, "change that
 * position to SEEN; increment filled once"; in [L, H] and SEEN, "increment
 * repeated"; below L, "increment unclassifiedLate; do not change H or
 * retained state". Inline, positions below H - 63 are SEEN. Returns
 * RM_SEQ_ACCOUNTED, or -1 on a ring index out of range.
 */
static __always_inline int rm_seq_behind(struct rm_seq_state *st, struct rm_seq_win *w, __u32 nw, __u32 back, __u64 now)
{
	__u64 bit;

	rm_seq_count(st, now);
	if (back > st->high - rm_seq_low(st)) {
		st->late++;
		return RM_SEQ_ACCOUNTED;
	}
	if (rm_seq_pooled(st))
		return rm_seq_behind_pooled(st, w, nw, st->high - back);
	bit = back < RM_INLINE_BITS ? 1ULL << (63 - back) : 0;
	if (!bit || (st->win & bit)) {
		st->repeated++;
	} else {
		st->win |= bit;
		st->filled++;
		st->pending--;
	}
	return RM_SEQ_ACCOUNTED;
}

/*
 * Account one eligible request with PSN psn arriving at time now: the
 * rows of [SEQOBS] "Per-Request Transitions" in order, one function each
 * (rm_seq_start, rm_seq_restart, rm_seq_advance, rm_seq_behind), with the
 * checked arithmetic's closure before them.
 *   st      context state (caller holds the context's lock)
 *   w       the pool windows at hand (struct rm_seq_win): the state's own
 *           when pooled, else a zeroed spare it may take, or none
 *   nwords  ring words of every pool window
 *   window  W for a new epoch, 1..2^22, and at most nwords * 64 if > 64;
 *           an open epoch keeps its own W (rdmaSequenceWindow is constant
 *           in an epoch)
 *   closed  receives the final snapshot when RM_SEQ_RESTARTED is returned
 *   sc      scratch of a window clear (see struct rm_window_scratch)
 * Returns an enum rm_seq_result; RM_SEQ_NEED_WINDOW when the request needs
 * a pool window that w does not give (a pooled state without its window,
 * an inline one that must take a spare): nothing changed, and the caller
 * either calls again with the window or closes the epoch with
 * rm_seq_exhausted(). A negative value for inconsistent arguments: a
 * window larger than the pool's ring (checked first: nothing changed), or a
 * ring index out of range, which consistent arguments never produce (the
 * checks exist for the verifier).
 */
static __always_inline int rm_seq_observe(struct rm_seq_state *st, struct rm_seq_win *w, __u32 nwords, __u32 window,
					  __u32 psn, __u64 now, struct rm_seq_counters *closed,
					  struct rm_window_scratch *sc)
{
	__u32 u, wd = st->window, nw = nwords;
	__u16 reason;

	psn &= RM_PSN_MASK;
	if (window == 0 || window > RM_WINDOW_MAX || (window > RM_INLINE_BITS && window > nw * 64))
		return -1;
	if (!rm_seq_active(st)) {
		rm_seq_start(st, window, psn, now);
		return RM_SEQ_STARTED;
	}
	if (wd == 0 || (wd > RM_INLINE_BITS && wd > nw * 64))
		return -1;
	u = (psn - (__u32)(st->high & RM_PSN_MASK)) & RM_PSN_MASK;
	if (st->requests >= RM_COUNTER_MAX || st->high - rm_seq_s(st) > RM_COUNTER_MAX - wd)
		reason = 0; /* checked arithmetic: close before any counter or position could wrap */
	else if (u == RM_PSN_HALF || (u < RM_PSN_HALF && u > wd))
		reason = RM_FLAG_SERIAL_DISCONTINUITY;
	else if (rm_seq_pooled(st) && (!w->pool || w->slot != (__u32)st->win))
		return RM_SEQ_NEED_WINDOW;
	else if (u != 0 && u < RM_PSN_HALF)
		return rm_seq_advance(st, w, nw, u, now, sc);
	else
		return rm_seq_behind(st, w, nw, u == 0 ? 0 : RM_PSN_MOD - u, now);
	return rm_seq_restart(st, w, reason, window, psn, now, closed);
}

/*
 * The request needed a pool window and none could be had (the pool is
 * empty, or the state's own could not be found): close the open epoch with
 * stateExhaustion into *closed and start a new one with psn (inline: no
 * window needed). The caller counts it. Returns RM_SEQ_RESTARTED.
 */
static __always_inline int rm_seq_exhausted(struct rm_seq_state *st, struct rm_seq_win *w, __u32 window, __u32 psn,
					    __u64 now, struct rm_seq_counters *closed)
{
	return rm_seq_restart(st, w, RM_FLAG_STATE_EXHAUSTION, window, psn, now, closed);
}

#endif /* ROCEMETER_SEQOBS_H */
