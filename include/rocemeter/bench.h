/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench.h - shared by the benchmark driver bpf/bench.bpf.c and
 * selftests/bench/bench_meter.c (benchmarks only, never part of rocemeter).
 */
#ifndef ROCEMETER_BENCH_H
#define ROCEMETER_BENCH_H

/* The driver's PSN sequence per context (bench_mode); see bench.bpf.c. */
enum rm_bench_mode {
	RM_BENCH_INORDER = 0, /* psn = j: d = 1 */
	RM_BENCH_MIX = 1,     /* reorder/duplicate mix, period 16 requests over 13 PSNs */
	RM_BENCH_JUMP = 2,    /* psn = j * bench_step: forward jumps */
};

/* The driver's frame: untagged Ethernet, IPv4 without options, UDP; BTH here. */
#define RM_BENCH_BTH_OFFSET (14 + 20 + 8)

#endif
