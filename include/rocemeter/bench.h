/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench.h - shared by the benchmark driver selftests/progs/bench.bpf.c and
 * selftests/bench/bench_meter.c (benchmarks only, never part of rocemeter).
 */
#ifndef ROCEMETER_BENCH_H
#define ROCEMETER_BENCH_H

/* The driver's PSN sequence per context (bench_mode); see bench.bpf.c. */
enum rm_bench_mode {
	RM_BENCH_INORDER = 0, /* psn = j: d = 1 */
	RM_BENCH_MIX = 1,     /* reorder/duplicate mix, period 16 requests over 13 PSNs */
	RM_BENCH_JUMP = 2,    /* psn = j * bench_step: forward jumps */
	RM_BENCH_TRACE = 3,   /* a capture's own order of connections and PSNs (bench_trace) */
};

/* BENCH_TRACE: most requests of the trace, and most connections (the
 * context index has 8 bits). */
#define RM_BENCH_TRACE_MAX   65536
#define RM_BENCH_TRACE_CONNS 256

/*
 * The meter's per-packet breakdown (bench_meter's "breakdown" table): the
 * meter loaded with rm_bench_cut = N returns XDP_PASS after step N of
 * meter() (bpf/meter.bpf.c), whatever the request, so that the difference
 * between two cuts is the cost of one step. 0 is the whole meter, as
 * rocemeter loads it; the value is a constant at load, and the verifier
 * removes the code of the cuts not chosen.
 */
enum rm_bench_cut {
	RM_CUT_NONE = 0,    /* the whole meter: + the request's statistics and events */
	RM_CUT_PERCPU = 1,  /* per-CPU statistics and scratch looked up, frames counted */
	RM_CUT_PARSE = 2,   /* + parse and classification (the verdict's statistic) */
	RM_CUT_KEY = 3,     /* + the context key built from the headers, the arrival time read
			     * (bpf_ktime_get_coarse_ns, or the replay clock) */
	RM_CUT_CONTEXT = 4, /* + the context looked up, or made */
	RM_CUT_ENGINE = 5,  /* + its window looked up, the engine under its lock */
	/* Not a step of the table but of the decapsulation's (bench_meter's
	 * mirror rows): the frame parsed, decapsulated and counted with its
	 * verdict's statistic, and no mirror session looked up (RM_CUT_PARSE
	 * less rm_mirror_point()). */
	RM_CUT_HEADERS = 6,
};

/* Extra work per request for the breakdown (rm_bench_flags), each measured
 * against the whole meter: */
#define RM_BENCH_EMIT_EACH 0x2 /* one ring-buffer event per request (as an epoch start sends) */
/* The per-CPU comparison: the meter without the context's spin lock, what a
 * context owned by one CPU would cost on that CPU (single-CPU runs only). */
#define RM_BENCH_NO_LOCK 0x4

/* The driver's frame: untagged Ethernet, IPv4 without options, UDP; BTH here. */
#define RM_BENCH_BTH_OFFSET (14 + 20 + 8)

#endif
