// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * baseline.bpf.c - reference programs for benchmarks only (never attached):
 *   rm_base_xdp   XDP, rm_parse() then XDP_PASS: the "parse-only" figure of
 *                 docs/benchmarks.md "Targets";
 *   rm_base_tc    the same parse as a tc program, TC_ACT_OK;
 *   rm_base_reset tc: zero the Flow Label of an untagged IPv6 frame, then tail
 *                 call bench_next[0]. BPF_PROG_TEST_RUN runs one skb `repeat`
 *                 times, so a program that writes the label would see its own
 *                 label from the second run on; the reset keeps every run on
 *                 the rewrite path. Compare reset->rocemeter_fl with
 *                 reset->rm_base_tc.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "parse.h"

#define TC_ACT_OK 0

/* Tail-call target of rm_base_reset: one program, slot 0. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_next SEC(".maps");

/* Keep the parse result live, so the compiler cannot drop the parse. */
static __always_inline void consume(int verdict, struct rm_pkt *pkt)
{
	__u32 v = (__u32)verdict ^ pkt->dest_qp;

	barrier_var(v);
}

SEC("xdp")
int rm_base_xdp(struct xdp_md *ctx)
{
	struct rm_pkt pkt = {};
	int v = rm_parse((void *)(long)ctx->data, (void *)(long)ctx->data_end, &pkt);

	consume(v, &pkt);
	return XDP_PASS;
}

SEC("tc")
int rm_base_tc(struct __sk_buff *skb)
{
	struct rm_pkt pkt = {};
	int v = rm_parse((void *)(long)skb->data, (void *)(long)skb->data_end, &pkt);

	consume(v, &pkt);
	return TC_ACT_OK;
}

SEC("tc")
int rm_base_reset(struct __sk_buff *skb)
{
	__u8 *p = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;

	if ((void *)(p + 14 + 4) <= data_end) {
		p[15] &= 0xf0;
		p[16] = 0;
		p[17] = 0;
	}
	bpf_tail_call(skb, &bench_next, 0);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
