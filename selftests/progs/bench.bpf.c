// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench.bpf.c - benchmark driver for BPF_PROG_TEST_RUN (never attached).
 *
 * A test run with `repeat` runs a program again and again on the same
 * bytes, but the meter must see a new PSN on every request, and a different
 * dest QP for every live context. bench_drive rewrites the BTH of an
 * untagged IPv4 RoCEv2 frame (BTH at byte 42: Ethernet 14 + IPv4 20 + UDP 8,
 * or bench_bth_off for the same frame inside a mirror's headers)
 * from a request counter, then tail-calls the program under test in
 * bench_next[0] (the meter, the parse-only baseline, or bench_pass to
 * measure the driver alone). Requests come in bursts of B = bench_burst
 * back-to-back requests of one context (an RDMA message: a 64 KiB WRITE at
 * 4 KiB MTU is 16 packets of one QP), the bursts round-robin over the
 * N = bench_nctx contexts: request i goes to context c = (i / B) % N
 * (dest QP bench_qp_base + c) as that context's request
 * j = (i / (B N)) B + i % B (B = 1: round-robin, request by request), with
 * PSN (24 bits, [IBPKT] "Base Transport Header"):
 *
 *   BENCH_INORDER  psn = j                                 (d = 1 every time)
 *   BENCH_MIX      psn = 13 * (j / 16) + bench_mix[j % 16]  (reorder/duplicate mix)
 *   BENCH_JUMP     psn = j * bench_step                    (forward jumps of bench_step)
 *   BENCH_TRACE    entry e = bench_trace[i % L] of a capture's requests in
 *                  their order (L = bench_trace_len): context e >> 24, psn =
 *                  (e & 0xffffff) + (i / L) * bench_trace_span, so that every
 *                  lap continues each connection's PSNs (B and N unused)
 *
 * The programs are xdp.frags because the meter's rocemeter_xdp is: the
 * kernel lets a program array hold only programs whose frags flag matches
 * the caller's; the loader sets BPF_F_XDP_HAS_FRAGS on the baseline.
 * Returns XDP_ABORTED if the frame is too short or the tail call fails.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "rocemeter/bench.h"
#include "rocemeter/bth.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by userspace through the skeleton between runs. */
__u64 bench_i;            /* requests driven so far (all contexts) */
__u32 bench_mode;         /* enum rm_bench_mode */
__u32 bench_nctx = 1;     /* live contexts, >= 1 */
__u32 bench_step = 1;     /* BENCH_JUMP: PSN advance per request of a context */
__u32 bench_qp_base = 16; /* dest QP of context 0 */
__u32 bench_burst = 1;    /* B: back-to-back requests of one context, >= 1 */
__u32 bench_trace_len;    /* BENCH_TRACE: entries of bench_trace, 1..RM_BENCH_TRACE_MAX */
__u32 bench_trace_span;   /* BENCH_TRACE: PSN advance of every context per lap */
/* Where the BTH is: a mirrored frame's is behind its outer headers. */
__u32 bench_bth_off = RM_BENCH_BTH_OFFSET;
/* An ERSPAN II/III frame's GRE sequence number (0: none): request i sends i + 1. */
__u32 bench_seq_off;

/*
 * BENCH_MIX, one period of 16 requests over 13 PSNs: two swapped pairs
 * (3 before 2, 8 before 7: a skip, then a fill), an immediate duplicate
 * (5, 11), and a late duplicate 4 positions back (6).
 */
const __u8 bench_mix[16] = { 0, 1, 3, 2, 4, 5, 5, 6, 8, 7, 9, 10, 6, 11, 11, 12 };

/* BENCH_TRACE: a capture's requests in order, context index << 24 | PSN
 * relative to that connection's lowest (bench_meter fills it). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RM_BENCH_TRACE_MAX);
	__type(key, __u32);
	__type(value, __u32);
} bench_trace SEC(".maps");

/* The program under test, slot 0. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_next SEC(".maps");

SEC("xdp.frags")
int bench_drive(struct xdp_md *xdp)
{
	__u8 *p = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	__u8 *bth = p + (bench_bth_off & 0xff);
	__u32 n = bench_nctx ? bench_nctx : 1, b = bench_burst ? bench_burst : 1;
	__u64 i = bench_i++;
	__u64 j = (i / ((__u64)b * n)) * b + i % b;
	__u32 c = (__u32)((i / b) % n), psn, qp;

	if ((void *)(bth + RM_BTH_LEN) > data_end)
		return XDP_ABORTED;
	if (bench_mode == RM_BENCH_TRACE) {
		__u32 len = bench_trace_len ? bench_trace_len : 1, k = (__u32)(i % len), *e;

		e = bpf_map_lookup_elem(&bench_trace, &k);
		if (!e)
			return XDP_ABORTED;
		c = *e >> 24;
		j = (*e & 0xffffff) + (i / len) * bench_trace_span;
	}
	qp = bench_qp_base + c;
	switch (bench_mode) {
	case RM_BENCH_MIX:
		psn = (__u32)((j >> 4) * 13) + bench_mix[j & 15];
		break;
	case RM_BENCH_JUMP:
		psn = (__u32)(j * bench_step);
		break;
	default:
		psn = (__u32)j;
	}
	bth[5] = (__u8)(qp >> 16);
	bth[6] = (__u8)(qp >> 8);
	bth[7] = (__u8)qp;
	bth[9] = (__u8)(psn >> 16);
	bth[10] = (__u8)(psn >> 8);
	bth[11] = (__u8)psn;
	if (bench_seq_off) {
		__u8 *q = p + (bench_seq_off & 0xff);

		if ((void *)(q + 4) > data_end)
			return XDP_ABORTED;
		q[0] = (__u8)((i + 1) >> 24);
		q[1] = (__u8)((i + 1) >> 16);
		q[2] = (__u8)((i + 1) >> 8);
		q[3] = (__u8)(i + 1);
	}
	bpf_tail_call(xdp, &bench_next, 0);
	return XDP_ABORTED;
}

/* Does nothing: bench_drive -> bench_pass is the driver's own cost. */
SEC("xdp.frags")
int bench_pass(struct xdp_md *xdp)
{
	return XDP_PASS;
}

/*
 * The per-CPU comparison (docs/benchmarks.md): what it costs the CPU that
 * receives a packet to steer it to the CPU owning its connection, a
 * redirect into a cpumap. Run with BPF_F_TEST_XDP_LIVE_FRAMES so that the
 * redirect is carried out; bench_drop is the same run without it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} bench_cpus SEC(".maps");

__u32 bench_cpu_target; /* the owner CPU */

SEC("xdp")
int bench_steer(struct xdp_md *xdp)
{
	return bpf_redirect_map(&bench_cpus, bench_cpu_target, 0);
}

SEC("xdp")
int bench_drop(struct xdp_md *xdp)
{
	return XDP_DROP;
}

/* On the owner CPU: the steered frame is dropped (the meter would run here). */
SEC("xdp/cpumap")
int bench_cpumap_drop(struct xdp_md *xdp)
{
	return XDP_DROP;
}
