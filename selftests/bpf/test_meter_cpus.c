// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_meter_cpus.c - the BPF build of the sequence observation engine
 * (bpf/meter.bpf.c + include/rocemeter/seqobs.h) run with BPF_PROG_TEST_RUN
 * (root), with frames built here byte by byte ([IBPKT] BTH layout):
 *
 *  - [SEQOBS]'s verification examples give the counters [SEQOBS] states;
 *  - exactness across CPUs (docs/architecture.md "Exact per context, whatever CPU sees the packet"): one context's requests
 *    processed alternately on CPU 0 and CPU 1 (two threads pinned with
 *    sched_setaffinity, strictly alternating) give the same counters and
 *    final events as the same order on one CPU; a concurrent run of both
 *    CPUs over the even / odd halves of a PSN range keeps every invariant
 *    of [SEQOBS] and counts every request exactly once. (Threads, because
 *    BPF_F_TEST_RUN_ON_CPU is refused for XDP programs: EINVAL here.)
 *  - worst case at W = 2^22 (forward jumps of W - 1 then W, then W + 1);
 *  - profile violations (malformed request, READ) close the epoch with
 *    profileViolation, later SENDs are not counted; a reload's
 *    re-provisioning of an unchanged connection keeps it disabled, an
 *    explicit re-enable meters it again;
 *  - a violation is kept in its own map whatever the context table's state:
 *    a READ that finds the table full, then an eviction, still leaves the
 *    connection disabled; when the violations map is full too, the
 *    fail-safe refuses every new connection until re-enabled;
 *  - mirror mode returns XDP_DROP after metering.
 *
 * Expected values come from [SEQOBS]'s text and from counting arguments on
 * the sent PSNs (explained at each test), never from running the program.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "meter/meter.h"
#include "meter/reporter.h"
#include "meter/violations.h"
#include "meter.skel.h"
#include "rocemeter/bench.h"
#include "rocemeter/meter.h"
#include "frames.h"
#include "selftest.h"
#include "seqpool.h"

#define M24       (1u << 24)
#define FRAME_MAX 128

static const uint8_t SRC_IP[4] = { 192, 0, 2, 1 };
static const uint8_t DST_IP[4] = { 198, 51, 100, 2 };

/* ---- frames ------------------------------------------------------------ */

/*
 * Ethernet + IPv4 + UDP (dport) + BTH + after_bth bytes (extended headers
 * and data) + 4-byte ICRC placeholder, by the one frame builder
 * (tests/lib/frames.h). Returns the frame length.
 */
static size_t build_frame_ex(uint8_t *f, uint8_t opcode, uint32_t qp, uint32_t psn, size_t after_bth, uint16_t dport,
			     uint8_t tver)
{
	struct rm_frame_spec s = { .ipv4 = 1,
				   .udp_dport = dport,
				   .opcode = opcode,
				   .tver = tver,
				   .dqp = qp,
				   .psn = psn,
				   .no_deth = 1,
				   .payload = (uint32_t)after_bth };

	memcpy(s.src, SRC_IP, 4);
	memcpy(s.dst, DST_IP, 4);
	return rm_frame_build(f, FRAME_MAX, &s);
}

/* A well-formed request: SEND Only carries no extended header, 8 data bytes. */
static size_t build_send(uint8_t *f, uint32_t qp, uint32_t psn)
{
	return build_frame_ex(f, RM_OPCODE_RC_SEND_ONLY, qp, psn, 8, 4791, 0);
}

/* ---- fixture ----------------------------------------------------------- */

static struct rm_ctx_key ctx_key(uint32_t qp)
{
	struct rm_ctx_key k;

	memset(&k, 0, sizeof(k));
	memcpy(k.src, SRC_IP, 4);
	memcpy(k.dst, DST_IP, 4);
	k.family = 4;
	k.dest_qp = qp;
	k.pkey = 0xffff;
	return k;
}

#define MAX_EVENTS 1024
struct events {
	int n;
	struct rm_event ev[MAX_EVENTS];
};

static int on_event(void *arg, void *data, size_t size)
{
	struct events *e = arg;

	if (size >= sizeof(struct rm_event) && e->n < MAX_EVENTS)
		memcpy(&e->ev[e->n++], data, sizeof(struct rm_event));
	return 0;
}

struct fx {
	struct rm_meter m;
	struct ring_buffer *rb;
	struct events ev;
};

static void fx_load_settings(struct fx *f, const struct rm_meter_settings *s)
{
	char err[512];

	memset(f, 0, sizeof(*f));
	if (rm_meter_load(&f->m, s, 1, err, sizeof(err)))
		fail_msg("rm_meter_load(W=%u): %s", s->window, err);
	f->rb = ring_buffer__new(f->m.events_fd, on_event, &f->ev, NULL);
	assert_non_null(f->rb);
}

static void fx_load(struct fx *f, uint32_t window, int provision_all)
{
	struct rm_meter_settings s = {
		.window = window,
		.max_contexts = 8,
		.provision_all = provision_all,
		.idle_timeout_ms = 0,
		.max_violations = 64,
	};

	fx_load_settings(f, &s);
}

static void fx_free(struct fx *f)
{
	ring_buffer__free(f->rb);
	rm_meter_unload(&f->m);
}

/* Run one frame; returns the program's XDP action. */
static uint32_t run_raw(struct fx *f, const uint8_t *frame, size_t len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)len, .repeat = 1);

	assert_int_equal(bpf_prog_test_run_opts(f->m.xdp_fd, &o), 0);
	return o.retval;
}

static uint64_t ts_of(uint64_t i)
{
	return 1700000000000000000ull + i * 1000; /* 1 us apart, UNIX ns */
}

static void send_psns(struct fx *f, uint32_t qp, const uint32_t *psn, int n)
{
	uint8_t fr[FRAME_MAX];

	for (int i = 0; i < n; i++) {
		size_t len = build_send(fr, qp, psn[i]);

		assert_int_equal(rm_meter_replay_frame(&f->m, fr, (uint32_t)len, (uint32_t)len, ts_of((uint64_t)i)), 0);
	}
}

static int ctl(struct fx *f, uint32_t op, uint16_t reason, uint32_t qp, struct rm_seq_counters *out)
{
	struct rm_ctl c;

	memset(&c, 0, sizeof(c));
	c.op = op;
	c.reason = reason;
	c.key = ctx_key(qp);
	assert_int_equal(rm_meter_ctl(&f->m, &c), 0);
	if (out)
		*out = c.snap;
	return c.status;
}

static struct rm_seq_counters snap(struct fx *f, uint32_t qp)
{
	struct rm_seq_counters c;

	assert_int_equal(ctl(f, RM_CTL_SNAPSHOT, 0, qp, &c), 0);
	return c;
}

static void stats(struct fx *f, uint64_t out[RM_STAT__COUNT])
{
	assert_int_equal(rm_meter_read_stats(f->m.stats_fd, out), 0);
}

static void drain(struct fx *f)
{
	f->ev.n = 0;
	assert_true(ring_buffer__consume(f->rb) >= 0);
}

/* Final events for qp, in order, into out (up to max). */
static int finals_of(struct fx *f, uint32_t qp, struct rm_seq_counters *out, int max)
{
	int n = 0;

	for (int i = 0; i < f->ev.n; i++)
		if (f->ev.ev[i].type == RM_EV_EPOCH_FINAL && f->ev.ev[i].key.dest_qp == qp && n < max)
			out[n++] = f->ev.ev[i].snap;
	return n;
}

struct expect {
	uint64_t requests, skipped, filled, expired, abandoned, repeated, late;
	uint32_t pending;
};

#define assert_counters(c, e)                                      \
	do {                                                       \
		assert_int_equal((c).requests, (e).requests);      \
		assert_int_equal((c).skipped, (e).skipped);        \
		assert_int_equal((c).filled, (e).filled);          \
		assert_int_equal((c).expired, (e).expired);        \
		assert_int_equal((c).abandoned, (e).abandoned);    \
		assert_int_equal((c).pending, (e).pending);        \
		assert_int_equal((c).repeated, (e).repeated);      \
		assert_int_equal((c).unclassified_late, (e).late); \
	} while (0)

/* [SEQOBS]: the relationships that must hold at every snapshot. */
static void assert_invariants(const struct rm_seq_counters *c, int final)
{
	assert_true(c->window >= 1);
	assert_int_equal(c->skipped, c->filled + c->expired + c->abandoned + c->pending);
	assert_true(c->pending <= c->window - 1);
	assert_true(c->requests >= 1);
	assert_true(c->repeated + c->unclassified_late + c->filled <= c->requests - 1);
	if (final)
		assert_int_equal(c->pending, 0);
	else
		assert_int_equal(c->abandoned, 0);
}

/* ---- [SEQOBS] "Verification Examples", through the BPF program ------------ */

static void test_seed_examples_w4(void **state)
{
	static const uint32_t ex1[] = { 100, 102, 101, 103, 102 };
	static const uint32_t ex2[] = { 100, 99, 100 };
	static const uint32_t ex3[] = { 100, 102, 106 };
	static const uint32_t ex4[] = { 16777214, 16777215, 0, 1 };
	static const uint32_t ex5[] = { 100, 100 + (1u << 23) };
	struct rm_seq_counters c, fin[4];
	struct fx f;
	uint8_t fr[FRAME_MAX];
	size_t len;

	(void)state;
	fx_load(&f, 4, 1);

	/* W=4, 100,102,101,103,102: requests=5, skipped=1, filled=1, repeated=1, rest 0. */
	send_psns(&f, 1, ex1, 5);
	c = snap(&f, 1);
	assert_counters(c, ((struct expect){ .requests = 5, .skipped = 1, .filled = 1, .repeated = 1 }));
	assert_int_equal(c.window, 4);
	assert_invariants(&c, 0);

	/* W=4, 100,99,100: requests=3, unclassifiedLate=1, repeated=1. */
	send_psns(&f, 2, ex2, 3);
	c = snap(&f, 2);
	assert_counters(c, ((struct expect){ .requests = 3, .late = 1, .repeated = 1 }));
	assert_invariants(&c, 0);

	/* W=4, 100,102,106: skipped=4, expired=1, pending=3; closing: abandoned=3, pending=0. */
	send_psns(&f, 3, ex3, 3);
	c = snap(&f, 3);
	assert_counters(c, ((struct expect){ .requests = 3, .skipped = 4, .expired = 1, .pending = 3 }));
	assert_invariants(&c, 0);
	assert_int_equal(ctl(&f, RM_CTL_CLOSE, 0, 3, &c), 0);
	assert_counters(c, ((struct expect){ .requests = 3, .skipped = 4, .expired = 1, .abandoned = 3 }));
	assert_int_equal(c.flags & RM_FLAG_DEFINED_MASK, RM_FLAG_FINAL_EPOCH);
	assert_invariants(&c, 1);
	/* A later packet cannot fill the closed result: 103 starts a new epoch. */
	{
		uint32_t gen = c.epoch_gen;
		static const uint32_t late[] = { 103 };

		send_psns(&f, 3, late, 1);
		c = snap(&f, 3);
		assert_counters(c, ((struct expect){ .requests = 1 }));
		assert_int_equal(c.epoch_gen, gen + 1);
	}

	/* 16777214,16777215,0,1 advance continuously with no skipped positions. */
	send_psns(&f, 4, ex4, 4);
	c = snap(&f, 4);
	assert_counters(c, ((struct expect){ .requests = 4 }));

	/* A jump of 2^23 closes as ambiguous (serialDiscontinuity); the request
	 * starts the new epoch and is counted there once. */
	drain(&f);
	send_psns(&f, 5, ex5, 2);
	assert_true(ring_buffer__consume(f.rb) >= 0);
	assert_int_equal(finals_of(&f, 5, fin, 4), 1);
	assert_counters(fin[0], ((struct expect){ .requests = 1 }));
	assert_int_equal(fin[0].flags & RM_FLAG_DEFINED_MASK, RM_FLAG_FINAL_EPOCH | RM_FLAG_SERIAL_DISCONTINUITY);
	c = snap(&f, 5);
	assert_counters(c, ((struct expect){ .requests = 1 }));
	assert_int_equal(c.epoch_gen, fin[0].epoch_gen + 1);

	/* Not a request: an ACK changes no state. */
	len = build_frame_ex(fr, RM_OPCODE_RC_ACKNOWLEDGE, 1, 200, 4, 4791, 0);
	assert_int_equal(rm_meter_replay_frame(&f.m, fr, (uint32_t)len, (uint32_t)len, ts_of(99)), 0);
	c = snap(&f, 1);
	assert_counters(c, ((struct expect){ .requests = 5, .skipped = 1, .filled = 1, .repeated = 1 }));
	fx_free(&f);
}

/* W=1: any forward advance greater than one starts a fresh epoch; no pending positions exist. */
static void test_seed_example_w1(void **state)
{
	static const uint32_t psn[] = { 100, 101, 103, 104, 104, 103 };
	struct rm_seq_counters c, fin[4];
	struct fx f;

	(void)state;
	fx_load(&f, 1, 1);
	drain(&f);
	send_psns(&f, 7, psn, 6);
	assert_true(ring_buffer__consume(f.rb) >= 0);
	/* 100,101 (d=1): one epoch of 2; 103 (d=2 > W): closes it, starts anew. */
	assert_int_equal(finals_of(&f, 7, fin, 4), 1);
	assert_counters(fin[0], ((struct expect){ .requests = 2 }));
	assert_int_equal(fin[0].flags & RM_FLAG_DEFINED_MASK, RM_FLAG_FINAL_EPOCH | RM_FLAG_SERIAL_DISCONTINUITY);
	/* New epoch 103,104,104(repeated),103 (before L=H: unclassified late). */
	c = snap(&f, 7);
	assert_counters(c, ((struct expect){ .requests = 4, .repeated = 1, .late = 1 }));
	assert_invariants(&c, 0);
	fx_free(&f);
}

/* ---- profile violations and mirror mode ------------------------------------ */

static void test_profile_violation(void **state)
{
	static const uint32_t first[] = { 10, 11, 13 };
	struct rm_provision p[3];
	uint64_t s0[RM_STAT__COUNT], s1[RM_STAT__COUNT];
	struct rm_seq_counters c, fin[4];
	struct fx f;
	uint8_t fr[FRAME_MAX];
	size_t len;
	char err[256];

	(void)state;
	fx_load(&f, 1024, 0);
	memset(p, 0, sizeof(p));
	for (int i = 0; i < 3; i++) {
		p[i].family = 4;
		memcpy(p[i].src, SRC_IP, 4);
		memcpy(p[i].dst, DST_IP, 4);
		p[i].dest_qp = 0x100 + (uint32_t)i;
		p[i].pkey = 0xffff;
	}
	assert_int_equal(rm_meter_provision(&f.m, p, 3, 0, err, sizeof(err)), 0);

	/* A connection that is not provisioned gets no context. */
	stats(&f, s0);
	send_psns(&f, 0x300, first, 1);
	stats(&f, s1);
	assert_int_equal(s1[RM_STAT_NOT_PROVISIONED] - s0[RM_STAT_NOT_PROVISIONED], 1);
	assert_int_equal(ctl(&f, RM_CTL_SNAPSHOT, 0, 0x300, NULL), RM_CTL_NO_CONTEXT);

	/* Malformed: WRITE Only without room for its RETH ([IBPKT]: 16 bytes). */
	drain(&f);
	send_psns(&f, 0x100, first, 3);
	c = snap(&f, 0x100);
	assert_counters(c, ((struct expect){ .requests = 3, .skipped = 1, .pending = 1 }));
	stats(&f, s0);
	len = build_frame_ex(fr, RM_OPCODE_RC_RDMA_WRITE_ONLY, 0x100, 14, 8, 4791, 0);
	assert_int_equal(rm_meter_replay_frame(&f.m, fr, (uint32_t)len, (uint32_t)len, ts_of(50)), 0);
	stats(&f, s1);
	assert_int_equal(s1[RM_STAT_VIOLATIONS] - s0[RM_STAT_VIOLATIONS], 1);
	assert_int_equal(s1[RM_STAT_ELIGIBLE] - s0[RM_STAT_ELIGIBLE], 0);
	assert_true(ring_buffer__consume(f.rb) >= 0);
	assert_int_equal(finals_of(&f, 0x100, fin, 4), 1);
	/* The offending packet is not counted; pending 12 is abandoned. */
	assert_counters(fin[0], ((struct expect){ .requests = 3, .skipped = 1, .abandoned = 1 }));
	assert_int_equal(fin[0].flags & RM_FLAG_DEFINED_MASK, RM_FLAG_FINAL_EPOCH | RM_FLAG_PROFILE_VIOLATION);
	assert_invariants(&fin[0], 1);
	/* Later SENDs (even the one that would fill 12) are not counted. */
	{
		static const uint32_t later[] = { 12, 14, 15 };

		stats(&f, s0);
		send_psns(&f, 0x100, later, 3);
		stats(&f, s1);
		assert_int_equal(s1[RM_STAT_DISABLED] - s0[RM_STAT_DISABLED], 3);
		assert_int_equal(s1[RM_STAT_ELIGIBLE] - s0[RM_STAT_ELIGIBLE], 0);
		assert_int_equal(ctl(&f, RM_CTL_SNAPSHOT, 0, 0x100, &c), RM_CTL_NO_EPOCH);
		assert_int_equal(c.requests, 3);
	}
	/* A reload that leaves the connection's provisioning as it was keeps it
	 * disabled: re-provisioning asks "provisioned now?" and the violation
	 * stands. */
	assert_int_equal(ctl(&f, RM_CTL_REPROVISION, 0, 0x100, NULL), 0);
	stats(&f, s0);
	send_psns(&f, 0x100, (const uint32_t[]){ 16 }, 1);
	stats(&f, s1);
	assert_int_equal(s1[RM_STAT_DISABLED] - s0[RM_STAT_DISABLED], 1);
	assert_int_equal(ctl(&f, RM_CTL_SNAPSHOT, 0, 0x100, NULL), RM_CTL_NO_EPOCH);
	/* An explicit re-enable (`rocemeter reenable`) meters it again, with a fresh epoch. */
	assert_int_equal(ctl(&f, RM_CTL_REENABLE, 0, 0x100, NULL), 0);
	{
		static const uint32_t again[] = { 16 };

		send_psns(&f, 0x100, again, 1);
		c = snap(&f, 0x100);
		assert_counters(c, ((struct expect){ .requests = 1 }));
		assert_int_equal(c.epoch_gen, fin[0].epoch_gen + 1);
	}

	/* An observed READ disables the profile, including after later SENDs. */
	drain(&f);
	send_psns(&f, 0x101, first, 2);
	len = build_frame_ex(fr, RM_OPCODE_RC_RDMA_READ_REQUEST, 0x101, 12, 16, 4791, 0);
	assert_int_equal(rm_meter_replay_frame(&f.m, fr, (uint32_t)len, (uint32_t)len, ts_of(60)), 0);
	send_psns(&f, 0x101, (const uint32_t[]){ 13 }, 1);
	assert_true(ring_buffer__consume(f.rb) >= 0);
	assert_int_equal(finals_of(&f, 0x101, fin, 4), 1);
	assert_counters(fin[0], ((struct expect){ .requests = 2 }));
	assert_int_equal(fin[0].flags & RM_FLAG_DEFINED_MASK, RM_FLAG_FINAL_EPOCH | RM_FLAG_PROFILE_VIOLATION);
	assert_int_equal(ctl(&f, RM_CTL_SNAPSHOT, 0, 0x101, &c), RM_CTL_NO_EPOCH);
	assert_int_equal(c.requests, 2);

	/* A SEND with TVer != 0 on a provisioned connection is malformed too. */
	drain(&f);
	send_psns(&f, 0x102, first, 1);
	len = build_frame_ex(fr, RM_OPCODE_RC_SEND_ONLY, 0x102, 11, 8, 4791, 1);
	assert_int_equal(rm_meter_replay_frame(&f.m, fr, (uint32_t)len, (uint32_t)len, ts_of(70)), 0);
	assert_true(ring_buffer__consume(f.rb) >= 0);
	assert_int_equal(finals_of(&f, 0x102, fin, 4), 1);
	assert_counters(fin[0], ((struct expect){ .requests = 1 }));
	assert_int_equal(fin[0].flags & RM_FLAG_DEFINED_MASK, RM_FLAG_FINAL_EPOCH | RM_FLAG_PROFILE_VIOLATION);
	fx_free(&f);
}

static void test_mirror_drop(void **state)
{
	struct fx f;
	uint8_t fr[FRAME_MAX];
	size_t len;
	struct rm_seq_counters c;

	(void)state;
	fx_load(&f, 1024, 1);
	len = build_send(fr, 9, 500);
	assert_int_equal(run_raw(&f, fr, len), XDP_PASS);
	f.m.skel->data->rm_cfg.mirror = 1;
	len = build_send(fr, 9, 501);
	assert_int_equal(run_raw(&f, fr, len), XDP_DROP);
	/* Also frames that are not RoCEv2 at all (UDP 53) and not requests (ACK). */
	len = build_frame_ex(fr, RM_OPCODE_RC_SEND_ONLY, 9, 502, 8, 53, 0);
	assert_int_equal(run_raw(&f, fr, len), XDP_DROP);
	len = build_frame_ex(fr, RM_OPCODE_RC_ACKNOWLEDGE, 9, 77, 4, 4791, 0);
	assert_int_equal(run_raw(&f, fr, len), XDP_DROP);
	/* Dropped frames were metered first. */
	c = snap(&f, 9);
	assert_counters(c, ((struct expect){ .requests = 2 }));
	f.m.skel->data->rm_cfg.mirror = 0;
	len = build_send(fr, 9, 502);
	assert_int_equal(run_raw(&f, fr, len), XDP_PASS);
	fx_free(&f);
}

/* ---- worst case at W = 2^22 --------------------------------------------- */

static void test_worst_case_w22(void **state)
{
	const uint32_t W = RM_WINDOW_MAX;
	struct rm_seq_counters c, fin[4];
	struct fx f;

	(void)state;
	fx_load(&f, W, 1);
	drain(&f);
	/* 0, then W-1 (d = W-1: skipped W-2), then 2W-1 (d = W: skipped W-1;
	 * L becomes W, so positions 1..W-2 expire; W..2W-2 are pending). */
	send_psns(&f, 11, (const uint32_t[]){ 0, W - 1, 2 * W - 1 }, 3);
	c = snap(&f, 11);
	assert_counters(
		c, ((struct expect){ .requests = 3, .skipped = 2ull * W - 3, .expired = W - 2, .pending = W - 1 }));
	assert_invariants(&c, 0);
	/* Fill the lowest retained position W and the highest pending 2W-2. */
	send_psns(&f, 11, (const uint32_t[]){ W, 2 * W - 2, W - 1 }, 3);
	c = snap(&f, 11);
	assert_counters(c, ((struct expect){ .requests = 6,
					     .skipped = 2ull * W - 3,
					     .filled = 2,
					     .expired = W - 2,
					     .pending = W - 3,
					     .late = 1 }));
	/* d = W + 1 is a serial discontinuity: all pending positions are abandoned. */
	send_psns(&f, 11, (const uint32_t[]){ (3 * W) & (M24 - 1) }, 1);
	assert_true(ring_buffer__consume(f.rb) >= 0);
	assert_int_equal(finals_of(&f, 11, fin, 4), 1);
	assert_counters(fin[0], ((struct expect){ .requests = 6,
						  .skipped = 2ull * W - 3,
						  .filled = 2,
						  .expired = W - 2,
						  .abandoned = W - 3,
						  .late = 1 }));
	assert_int_equal(fin[0].flags & RM_FLAG_DEFINED_MASK, RM_FLAG_FINAL_EPOCH | RM_FLAG_SERIAL_DISCONTINUITY);
	assert_invariants(&fin[0], 1);
	c = snap(&f, 11);
	assert_counters(c, ((struct expect){ .requests = 1 }));
	/* Exactly W from a fresh start: d = W is still accepted. */
	send_psns(&f, 11, (const uint32_t[]){ (4 * W) & (M24 - 1) }, 1);
	c = snap(&f, 11);
	assert_counters(c, ((struct expect){ .requests = 2, .skipped = W - 1, .pending = W - 1 }));
	fx_free(&f);
}

/* ---- exactness across CPUs ------------------------------------------------ */

static int ncpus_online(void)
{
	cpu_set_t s;

	if (sched_getaffinity(0, sizeof(s), &s))
		return 0;
	return CPU_ISSET(0, &s) && CPU_ISSET(1, &s) ? 2 : 1;
}

static int pin_to(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		return -1;
	return sched_getcpu() == cpu ? 0 : -1;
}

/* A deterministic stream with forward jumps (some beyond W), reordering,
 * repeats and late arrivals; xorshift so the stream is reproducible. */
static uint32_t *make_stream(int n, uint32_t window, uint32_t base)
{
	uint32_t *p = calloc((size_t)n, sizeof(*p)), h = base;
	uint64_t x = 0x9E3779B97F4A7C15ull;

	for (int i = 0; i < n; i++) {
		uint32_t r;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = (uint32_t)(x % 1000);
		if (r < 700)
			h += 1;
		else if (r < 850)
			h += 2 + (uint32_t)((x >> 20) % 5);
		else if (r < 855)
			h += window + 1 + (uint32_t)((x >> 24) % 100); /* serial discontinuity */
		else if (r < 870)
			h += 0; /* repeat */
		if (r >= 870)   /* behind: within the window or before it */
			p[i] = (h - (uint32_t)((x >> 30) % (2 * window + 2))) & (M24 - 1);
		else
			p[i] = h & (M24 - 1);
	}
	return p;
}

struct alt {
	struct rm_meter *m;
	const uint32_t *psn;
	int n;
	uint32_t qp;
	sem_t turn[2];
	int err[2];
	int wrong_cpu[2];
};

struct alt_arg {
	struct alt *a;
	int t;
};

static void *alt_thread(void *p)
{
	struct alt_arg *aa = p;
	struct alt *a = aa->a;
	int t = aa->t;
	uint8_t fr[FRAME_MAX];

	if (pin_to(t)) {
		a->err[t] = -1;
		/* keep taking turns so the other thread is not stuck */
	}
	for (int i = t; i < a->n; i += 2) {
		size_t len;

		sem_wait(&a->turn[t]);
		if (sched_getcpu() != t)
			a->wrong_cpu[t]++;
		len = build_send(fr, a->qp, a->psn[i]);
		if (rm_meter_replay_frame(a->m, fr, (uint32_t)len, (uint32_t)len, ts_of((uint64_t)i)))
			a->err[t] = -2;
		sem_post(&a->turn[1 - t]);
	}
	return NULL;
}

static void lookup_ctx(struct fx *f, uint32_t qp, struct rm_ctx *out)
{
	struct rm_ctx_key k = ctx_key(qp);

	assert_int_equal(bpf_map_lookup_elem_flags(f->m.contexts_fd, &k, out, BPF_F_LOCK), 0);
}

static void test_alternating_cpus_equal_one_cpu(void **state)
{
	const int n = 20000;
	const uint32_t W = 64;
	uint32_t *psn = make_stream(n, W, 5000);
	struct fx one, two;
	struct rm_seq_counters c1, c2;
	struct rm_ctx x1, x2;
	uint64_t s1[RM_STAT__COUNT], s2[RM_STAT__COUNT];
	struct rm_event *fin1 = calloc(4096, sizeof(*fin1)), *fin2 = calloc(4096, sizeof(*fin2));
	int nf1 = 0, nf2 = 0;
	cpu_set_t saved;

	(void)state;
	if (ncpus_online() < 2)
		skip();
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);

	/* Reference: every request on CPU 0, in order. */
	fx_load(&one, W, 1);
	assert_int_equal(pin_to(0), 0);
	{
		uint8_t fr[FRAME_MAX];

		for (int i = 0; i < n; i++) {
			size_t len = build_send(fr, 21, psn[i]);

			assert_int_equal(
				rm_meter_replay_frame(&one.m, fr, (uint32_t)len, (uint32_t)len, ts_of((uint64_t)i)), 0);
			if (i % 32 == 31 || i == n - 1) { /* drain often: the event buffer is small here */
				one.ev.n = 0;
				assert_true(ring_buffer__consume(one.rb) >= 0);
				for (int e = 0; e < one.ev.n && nf1 < 4096; e++)
					if (one.ev.ev[e].type == RM_EV_EPOCH_FINAL)
						fin1[nf1++] = one.ev.ev[e];
			}
		}
	}
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);

	/* Same order, alternately on CPU 0 (even indexes) and CPU 1 (odd). */
	fx_load(&two, W, 1);
	{
		struct alt a = { .m = &two.m, .psn = psn, .n = n, .qp = 21 };
		struct alt_arg aa[2] = { { &a, 0 }, { &a, 1 } };
		pthread_t th[2];

		sem_init(&a.turn[0], 0, 1);
		sem_init(&a.turn[1], 0, 0);
		for (int t = 0; t < 2; t++)
			assert_int_equal(pthread_create(&th[t], NULL, alt_thread, &aa[t]), 0);
		for (int t = 0; t < 2; t++)
			pthread_join(th[t], NULL);
		for (int t = 0; t < 2; t++) {
			assert_int_equal(a.err[t], 0);
			assert_int_equal(a.wrong_cpu[t], 0);
		}
		sem_destroy(&a.turn[0]);
		sem_destroy(&a.turn[1]);
	}
	for (;;) {
		two.ev.n = 0;
		assert_true(ring_buffer__consume(two.rb) >= 0);
		if (!two.ev.n)
			break;
		for (int e = 0; e < two.ev.n && nf2 < 4096; e++)
			if (two.ev.ev[e].type == RM_EV_EPOCH_FINAL)
				fin2[nf2++] = two.ev.ev[e];
	}

	/* The stream has serial discontinuities: several closed epochs. */
	assert_true(nf1 >= 5);
	assert_true(nf1 < 4096);
	assert_int_equal(nf2, nf1);
	for (int i = 0; i < nf1; i++) {
		assert_memory_equal(&fin1[i].snap, &fin2[i].snap, sizeof(fin1[i].snap));
		assert_invariants(&fin1[i].snap, 1);
	}
	c1 = snap(&one, 21);
	c2 = snap(&two, 21);
	assert_memory_equal(&c1, &c2, sizeof(c1));
	assert_invariants(&c1, 0);
	assert_true(c1.skipped > 0 && c1.filled > 0 && c1.repeated > 0 && c1.unclassified_late > 0);
	lookup_ctx(&one, 21, &x1);
	lookup_ctx(&two, 21, &x2);
	assert_int_equal(rm_seq_s(&x1.seq), rm_seq_s(&x2.seq));
	assert_int_equal(x1.seq.high, x2.seq.high);
	stats(&one, s1);
	stats(&two, s2);
	assert_int_equal(s1[RM_STAT_ELIGIBLE], n);
	assert_int_equal(s2[RM_STAT_ELIGIBLE], n);
	assert_int_equal(s2[RM_STAT_EPOCHS_STARTED], s1[RM_STAT_EPOCHS_STARTED]);
	assert_int_equal(s1[RM_STAT_EPOCHS_STARTED], (uint64_t)nf1 + 1);
	/* Total requests over all epochs = all requests sent, each counted once. */
	{
		uint64_t total = c1.requests;

		for (int i = 0; i < nf1; i++)
			total += fin1[i].snap.requests;
		assert_int_equal(total, n);
	}
	free(fin1);
	free(fin2);
	free(psn);
	fx_free(&one);
	fx_free(&two);
}

struct half {
	struct rm_meter *m;
	pthread_barrier_t *bar;
	uint32_t base, qp;
	int t, n;
	int err, wrong_cpu;
};

static void *half_thread(void *p)
{
	struct half *h = p;
	uint8_t fr[FRAME_MAX];

	if (pin_to(h->t))
		h->err = -1;
	pthread_barrier_wait(h->bar);
	for (int i = 0; i < h->n; i++) {
		uint32_t psn = (h->base + (uint32_t)h->t + 2u * (uint32_t)i) & (M24 - 1);
		size_t len = build_send(fr, h->qp, psn);

		if (rm_meter_replay_frame(h->m, fr, (uint32_t)len, (uint32_t)len, ts_of((uint64_t)i)))
			h->err = -2;
		if (sched_getcpu() != h->t)
			h->wrong_cpu++;
	}
	return NULL;
}

/*
 * Both CPUs at once: CPU 0 sends base, base+2, ..., CPU 1 base+1, base+3,
 * ... (each PSN once, N in all, across the 2^24 wrap). Whatever the
 * interleaving, a new high-water is at most 2 past the old one (d <= 2 <= W),
 * so there is one epoch and no request is repeated. Counting positions:
 * with k = H - S (extended) and b = the PSNs below S (sent before S in PSN
 * order; all unclassified late), every position in (S, H] arrived exactly
 * once, by a forward advance, a fill, or late after it expired, so
 *   requests = N = 1 + k + b, repeated = 0, pending = 0,
 *   unclassifiedLate = expired + b, skipped = filled + expired.
 */
static void concurrent_halves(uint32_t W)
{
	const int n = 200000;
	const uint32_t base = M24 - 100000, qp = 31;
	struct fx f;
	struct half h[2];
	pthread_barrier_t bar;
	pthread_t th[2];
	struct rm_seq_counters c;
	struct rm_ctx x;
	uint64_t st[RM_STAT__COUNT], k, b, s_psn;

	if (ncpus_online() < 2)
		skip();
	fx_load(&f, W, 1);
	pthread_barrier_init(&bar, NULL, 2);
	for (int t = 0; t < 2; t++) {
		h[t] = (struct half){ .m = &f.m, .bar = &bar, .base = base, .qp = qp, .t = t, .n = n / 2 };
		assert_int_equal(pthread_create(&th[t], NULL, half_thread, &h[t]), 0);
	}
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&bar);
	for (int t = 0; t < 2; t++) {
		assert_int_equal(h[t].err, 0);
		assert_int_equal(h[t].wrong_cpu, 0);
	}

	drain(&f);
	assert_int_equal(finals_of(&f, qp, &c, 1), 0); /* no closure */
	stats(&f, st);
	assert_int_equal(st[RM_STAT_ELIGIBLE], n);
	assert_int_equal(st[RM_STAT_EPOCHS_STARTED], 1);
	assert_int_equal(st[RM_STAT_EPOCHS_CLOSED], 0);

	c = snap(&f, qp);
	assert_int_equal(c.window, W);
	assert_int_equal(c.epoch_gen, 1);
	assert_invariants(&c, 0);
	assert_int_equal(c.requests, n);
	assert_int_equal(c.repeated, 0);
	assert_int_equal(c.pending, 0);
	assert_int_equal(c.skipped, c.filled + c.expired);

	lookup_ctx(&f, qp, &x);
	{
		struct rm_seq_counters xc;

		rm_seq_snapshot(&x.seq, &xc);
		assert_memory_equal(&xc, &c, sizeof(c));
	}
	s_psn = rm_seq_s(&x.seq); /* S is the first PSN accounted */
	assert_true(s_psn < M24);
	assert_int_equal(x.seq.high & (M24 - 1), (base + (uint32_t)n - 1) & (M24 - 1)); /* highest PSN sent */
	k = x.seq.high - rm_seq_s(&x.seq);
	b = (s_psn - base) & (M24 - 1);
	assert_true(b < (uint64_t)n);
	assert_int_equal(1 + k + b, n);
	fprintf(stderr, "# W=%u b=%llu expired=%llu filled=%llu late=%llu\n", W, (unsigned long long)b,
		(unsigned long long)c.expired, (unsigned long long)c.filled, (unsigned long long)c.unclassified_late);
	assert_int_equal(c.unclassified_late, c.expired + b);
	if (W >= (uint32_t)n)
		assert_int_equal(c.expired, 0); /* nothing can leave a window wider than the range */
	fx_free(&f);
}

static void test_concurrent_halves_w1024(void **state)
{
	(void)state;
	concurrent_halves(1024);
}

static void test_concurrent_halves_w22(void **state)
{
	(void)state;
	concurrent_halves(RM_WINDOW_MAX);
}

/* ---- violations outlive the context table ------------------------------------ */

/* Requests of qp gained in statistic `stat` while sending psn[0..n). */
static uint64_t sent_into(struct fx *f, uint32_t qp, const uint32_t *psn, int n, int stat)
{
	uint64_t a[RM_STAT__COUNT], b[RM_STAT__COUNT];

	stats(f, a);
	send_psns(f, qp, psn, n);
	stats(f, b);
	return b[stat] - a[stat];
}

/* A READ (RETH + ICRC, well formed) of qp at PSN psn. */
static void send_read(struct fx *f, uint32_t qp, uint32_t psn)
{
	uint8_t fr[FRAME_MAX];
	size_t len = build_frame_ex(fr, RM_OPCODE_RC_RDMA_READ_REQUEST, qp, psn, RM_RETH_LEN, 4791, 0);

	assert_int_equal(rm_meter_replay_frame(&f->m, fr, (uint32_t)len, (uint32_t)len, ts_of(psn)), 0);
}

/*
 * max_contexts = 1. A meters; B's READ finds the table full: no context for
 * B, but the violation is recorded (map `violations`). A is evicted (as
 * `eviction = oldest` would): B's SEND may now get a context, and must not
 * be metered ([SEQOBS]: a violation disables the connection "until
 * explicitly reprovisioned"). A, now without context, is metered again in a
 * fresh context (an eviction is no violation).
 */
static void test_violation_outlives_full_table_and_eviction(void **state)
{
	struct rm_meter_settings s = { .window = 64, .max_contexts = 1, .provision_all = 1, .max_violations = 16 };
	uint64_t st[RM_STAT__COUNT];
	struct fx f;

	(void)state;
	fx_load_settings(&f, &s);
	assert_int_equal(sent_into(&f, 0xA, (const uint32_t[]){ 1, 2 }, 2, RM_STAT_ELIGIBLE), 2);
	stats(&f, st);
	send_read(&f, 0xB, 7);
	{
		uint64_t after[RM_STAT__COUNT];

		stats(&f, after);
		assert_int_equal(after[RM_STAT_VIOLATIONS] - st[RM_STAT_VIOLATIONS], 1);
	}
	assert_int_equal(ctl(&f, RM_CTL_EVICT, 0, 0xA, NULL), RM_CTL_OK);
	assert_int_equal(sent_into(&f, 0xB, (const uint32_t[]){ 8, 9 }, 2, RM_STAT_DISABLED), 2);
	assert_int_equal(sent_into(&f, 0xB, (const uint32_t[]){ 10 }, 1, RM_STAT_ELIGIBLE), 0);
	assert_int_equal(ctl(&f, RM_CTL_SNAPSHOT, 0, 0xB, NULL) == RM_CTL_OK, 0);
	/* Nothing took B's free slot: A comes back. */
	assert_int_equal(sent_into(&f, 0xA, (const uint32_t[]){ 3 }, 1, RM_STAT_ELIGIBLE), 1);
	/* The violation is visible in the map, with the READ's opcode. */
	{
		struct rm_ctx_key k = ctx_key(0xB);
		struct rm_violation v;

		assert_int_equal(bpf_map_lookup_elem(f.m.violations_fd, &k, &v), 0);
		assert_int_equal(v.opcode, RM_OPCODE_RC_RDMA_READ_REQUEST);
		assert_int_equal(v.cause, RM_VIOLATION_UNSUPPORTED);
	}
	fx_free(&f);
}

/*
 * max_contexts = 1, max_violations = 1. B's READ fills the violations map;
 * C's READ finds both full: it cannot be recorded, so the fail-safe engages
 * (counted): no new connection is metered, since C could be any of them.
 * A keeps its context and is metered. After A's eviction neither D (never
 * seen) nor C nor A gets a context. Leaving the fail-safe (`rocemeter
 * reenable --all`) meters new connections again; B stays disabled (its
 * violation is in the map) until it is re-enabled itself.
 */
static void test_violations_full_fail_safe(void **state)
{
	struct rm_meter_settings s = { .window = 64, .max_contexts = 1, .provision_all = 1, .max_violations = 1 };
	struct rm_violations_fds vf;
	uint64_t st[RM_STAT__COUNT];
	struct fx f;

	(void)state;
	fx_load_settings(&f, &s);
	rm_violations_fds_of(&f.m, &vf);
	send_psns(&f, 0xA, (const uint32_t[]){ 1 }, 1);
	send_read(&f, 0xB, 5);
	assert_int_equal(rm_violations_fail_safe(&vf), 0);
	send_read(&f, 0xC, 5);
	stats(&f, st);
	assert_int_equal(st[RM_STAT_VIOLATIONS], 2);
	assert_int_equal(st[RM_STAT_VIOLATIONS_UNRECORDED], 1);
	assert_int_equal(rm_violations_fail_safe(&vf), 1);
	assert_int_equal(sent_into(&f, 0xA, (const uint32_t[]){ 2 }, 1, RM_STAT_ELIGIBLE), 1);
	assert_int_equal(ctl(&f, RM_CTL_EVICT, 0, 0xA, NULL), RM_CTL_OK);
	assert_int_equal(sent_into(&f, 0xD, (const uint32_t[]){ 1 }, 1, RM_STAT_FAIL_SAFE_REFUSED), 1);
	assert_int_equal(sent_into(&f, 0xC, (const uint32_t[]){ 6 }, 1, RM_STAT_FAIL_SAFE_REFUSED), 1);
	assert_int_equal(sent_into(&f, 0xA, (const uint32_t[]){ 3 }, 1, RM_STAT_FAIL_SAFE_REFUSED), 1);
	assert_int_equal(sent_into(&f, 0xB, (const uint32_t[]){ 6 }, 1, RM_STAT_DISABLED), 1);

	assert_int_equal(rm_violations_clear_fail_safe(&vf), 0);
	assert_int_equal(rm_violations_fail_safe(&vf), 0);
	assert_int_equal(sent_into(&f, 0xD, (const uint32_t[]){ 2 }, 1, RM_STAT_ELIGIBLE), 1);
	assert_int_equal(sent_into(&f, 0xB, (const uint32_t[]){ 7 }, 1, RM_STAT_DISABLED), 1);
	fx_free(&f);
}

/*
 * rm_violations_list() names every violated connection once, from the map
 * and from contexts; rm_violations_reenable() takes one out: its next
 * request is metered in a fresh epoch, the other stays disabled.
 */
static void test_violations_list_and_reenable(void **state)
{
	struct rm_meter_settings s = { .window = 64, .max_contexts = 4, .provision_all = 1, .max_violations = 4 };
	struct rm_violations_fds vf;
	struct rm_violation_entry *v = NULL;
	struct rm_ctx_key kb = ctx_key(0xB);
	size_t n = 0;
	struct fx f;

	(void)state;
	fx_load_settings(&f, &s);
	rm_violations_fds_of(&f.m, &vf);
	send_psns(&f, 0xB, (const uint32_t[]){ 1, 2 }, 2);
	send_read(&f, 0xB, 3);
	send_read(&f, 0xC, 1);
	assert_int_equal(rm_violations_list(&vf, &v, &n), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		assert_true(v[i].key.dest_qp == 0xB || v[i].key.dest_qp == 0xC);
		assert_int_equal(v[i].v.opcode, RM_OPCODE_RC_RDMA_READ_REQUEST);
	}
	free(v);
	assert_int_equal(rm_violations_reenable(&vf, &kb), 1);
	assert_int_equal(sent_into(&f, 0xB, (const uint32_t[]){ 9 }, 1, RM_STAT_ELIGIBLE), 1);
	assert_int_equal(snap(&f, 0xB).requests, 1);
	assert_int_equal(sent_into(&f, 0xC, (const uint32_t[]){ 2 }, 1, RM_STAT_DISABLED), 1);
	assert_int_equal(rm_violations_list(&vf, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].key.dest_qp, 0xC);
	free(v);
	assert_int_equal(rm_violations_reenable(&vf, &kb), 0); /* nothing left to re-enable */
	fx_free(&f);
}

/* Reports of a (replay) reporter, collected. */
struct collected {
	int n;
	struct rm_report r[16];
};

static int collect_sink(void *arg, const struct rm_report *r)
{
	struct collected *c = arg;

	if (c->n < 16)
		c->r[c->n++] = *r;
	return 0;
}

/* [SEQOBS]: "The ID and each total counter MUST NOT wrap" and an epoch closes
 * on impending report-ID exhaustion. With the largest report ID lowered to 3,
 * the second non-final report leaves only the final's ID: the reporter closes
 * the epoch under its lock right away (report 3, finalEpoch alone), and the
 * next request starts a new epoch with a new epoch ID. */
static void test_report_id_exhaustion(void **state)
{
	struct fx f;
	struct rm_reporter rep;
	struct collected got = { 0 };
	const uint32_t first[] = { 10, 11 }, more[] = { 12 }, later[] = { 13 };

	fx_load(&f, 64, 1);
	/* The meter runs on the replay clock: times are UNIX ns already. */
	assert_int_equal(rm_reporter_init(&rep, &f.m, 0, 0, 0, 1, collect_sink, &got), 0);
	rm_ids_set_limit(rep.ids, 3);
	send_psns(&f, 0x42, first, 2);
	assert_int_equal(rm_reporter_walk(&rep, RM_CTL_SNAPSHOT, 0, 0), 1);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.r[0].report_id, 1);
	assert_int_equal(got.r[0].flags, RM_FLAG_GENERATION_UNVERIFIED);
	/* No request since: no non-final report is due (docs/architecture.md "Time"). */
	assert_int_equal(rm_reporter_walk(&rep, RM_CTL_SNAPSHOT, 0, 0), 0);
	assert_int_equal(got.n, 1);
	send_psns(&f, 0x42, more, 1);
	assert_int_equal(rm_reporter_walk(&rep, RM_CTL_SNAPSHOT, 0, 0), 1);
	assert_int_equal(got.n, 3);
	assert_int_equal(got.r[1].report_id, 2);
	assert_int_equal(got.r[2].report_id, 3);
	assert_int_equal(got.r[2].epoch_id, 1);
	assert_int_equal(got.r[2].flags, RM_FLAG_FINAL_EPOCH | RM_FLAG_GENERATION_UNVERIFIED);
	assert_int_equal(got.r[2].requests, 3);
	/* Nothing is open any more; the next request starts epoch 2. */
	assert_int_equal(rm_reporter_walk(&rep, RM_CTL_SNAPSHOT, 0, 0), 0);
	send_psns(&f, 0x42, later, 1);
	assert_int_equal(rm_reporter_walk(&rep, RM_CTL_CLOSE, 0, 0), 1);
	assert_int_equal(got.n, 4);
	assert_int_equal(got.r[3].epoch_id, 2);
	assert_int_equal(got.r[3].report_id, 1);
	assert_int_equal(got.r[3].requests, 1);
	rm_reporter_free(&rep);
	fx_free(&f);
}

/*
 * The tiers of the window through the BPF program, against the same engine
 * on the host (include/rocemeter/seqobs.h with tests/lib/seqpool.h, which
 * test_seqobs_random checks against a model of [SEQOBS]): three connections
 * at W = 300 share a pool of one window, with losses found again after
 * more than 63 requests (window taken, then given back by the fill),
 * losses left to expire (given back when the last one leaves), jumps past
 * the inline window, and closures. While one connection holds the window,
 * another that needs one closes with stateExhaustion. Every final event,
 * every open epoch, the counts of windows taken and of epochs closed for
 * want of one, and the pool (its one window zero and free at the end)
 * must agree.
 */
static void test_tiers_bpf_equal_host(void **state)
{
	enum { NQP = 3, N = 6000 };
	const uint32_t W = 300;
	struct rm_meter_settings set = {
		.window = W,
		.max_contexts = 8,
		.max_windows = 1,
		.provision_all = 1,
		.max_violations = 8,
	};
	struct rm_seq_state host[NQP + 1];
	struct rm_seq_counters *hfin = calloc(N, sizeof(*hfin)), *bfin = calloc(N, sizeof(*bfin)), c, hc;
	uint32_t *hqp = calloc(N, sizeof(uint32_t)), *bqp = calloc(N, sizeof(uint32_t));
	uint32_t f[NQP + 1], lost[NQP + 1], nh = 0, nb = 0;
	uint64_t x = 0x7ea5ull, st[RM_STAT__COUNT];
	struct rm_pool pool;
	uint8_t fr[FRAME_MAX];
	struct fx fx;

	(void)state;
	assert_non_null(hfin);
	assert_non_null(bfin);
	fx_load_settings(&fx, &set);
	assert_int_equal(fx.m.pool_windows, 1);
	rm_pool_init(&pool, RM_WINDOW_WORDS(W), 1);
	memset(host, 0, sizeof(host));
	for (uint32_t q = 1; q <= NQP; q++) {
		f[q] = 1000 * q;
		lost[q] = 0;
	}
	for (uint32_t i = 0; i < N; i++) {
		uint32_t q, psn, r;
		struct rm_seq_counters closed;
		int ex, hr;
		size_t len;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		q = 1 + (uint32_t)((x >> 33) % NQP);
		r = (uint32_t)((x >> 40) % 1000);
		if (r < 30 && !lost[q]) { /* a loss, found again later */
			lost[q] = f[q] + 1;
			f[q] += 2;
			psn = f[q];
		} else if (r < 200 && lost[q] && f[q] - lost[q] > 70) { /* found again: filled */
			psn = lost[q];
			lost[q] = 0;
		} else if (r < 202) { /* a jump past the inline window */
			f[q] += 65 + (uint32_t)((x >> 20) % (W - 65));
			psn = f[q];
			lost[q] = 0;
		} else if (r < 206) { /* beyond W: serial discontinuity */
			f[q] += W + 1;
			psn = f[q];
			lost[q] = 0;
		} else {
			psn = ++f[q];
		}
		psn &= M24 - 1;
		len = build_send(fr, q, psn);
		assert_int_equal(rm_meter_replay_frame(&fx.m, fr, (uint32_t)len, (uint32_t)len, ts_of(i)), 0);
		hr = rm_pool_observe(&pool, &host[q], W, psn, ts_of(i), &closed, &ex);
		assert_true(hr > 0);
		assert_null(pool.bug);
		if (hr == RM_SEQ_RESTARTED) {
			hqp[nh] = q;
			hfin[nh++] = closed;
		}
		if (i % 64 == 63 || i == N - 1) {
			drain(&fx);
			for (int e = 0; e < fx.ev.n; e++)
				if (fx.ev.ev[e].type == RM_EV_EPOCH_FINAL) {
					bqp[nb] = fx.ev.ev[e].key.dest_qp;
					bfin[nb++] = fx.ev.ev[e].snap;
				}
		}
	}
	/* the open epochs, then their closure */
	for (uint32_t q = 1; q <= NQP; q++) {
		c = snap(&fx, q);
		rm_seq_snapshot(&host[q], &hc);
		assert_memory_equal(&c, &hc, sizeof(c));
		assert_int_equal(ctl(&fx, RM_CTL_CLOSE, 0, q, &c), RM_CTL_OK);
		assert_int_equal(rm_pool_close(&pool, &host[q], 0, &hc), 1);
		assert_memory_equal(&c, &hc, sizeof(c));
	}
	assert_null(pool.bug);
	assert_int_equal(nb, nh);
	for (uint32_t i = 0; i < nh; i++) {
		assert_int_equal(bqp[i], hqp[i]);
		assert_memory_equal(&bfin[i], &hfin[i], sizeof(hfin[i]));
		assert_invariants(&bfin[i], 1);
	}
	stats(&fx, st);
	fprintf(stderr, "# %u finals; windows taken %llu, epochs closed for want of one %llu\n", nh,
		(unsigned long long)pool.taken, (unsigned long long)pool.exhausted);
	assert_true(pool.taken > 10 && pool.exhausted > 10 && pool.released == pool.taken);
	assert_int_equal(st[RM_STAT_POOL_TAKEN], pool.taken);
	assert_int_equal(st[RM_STAT_POOL_EXHAUSTED], pool.exhausted);
	/* the pool's one window is free and zero */
	{
		size_t words = RM_POOL_VALUE_WORDS(RM_WINDOW_WORDS(W));
		__u64 *v = calloc(words, sizeof(__u64));
		__u32 slot = 0, got;

		assert_int_equal(bpf_map_lookup_elem(fx.m.windows_fd, &slot, v), 0);
		for (size_t k = 0; k < words; k++)
			assert_int_equal(v[k], 0);
		assert_int_equal(bpf_map_lookup_and_delete_elem(fx.m.free_slots_fd, NULL, &got), 0);
		assert_int_equal(got, 0);
		assert_int_not_equal(bpf_map_lookup_and_delete_elem(fx.m.free_slots_fd, NULL, &got), 0);
		free(v);
	}
	rm_pool_free(&pool);
	fx_free(&fx);
	free(hfin);
	free(bfin);
	free(hqp);
	free(bqp);
}

/*
 * The clock of the attached meter (docs/meter.md "Clock"): every request
 * reads the kernel's coarse monotonic clock (bpf_ktime_get_coarse_ns);
 * bpf_ktime_get_ns, 25-30 ns, only at one place, the request of a
 * connection without an open epoch (flowStart). Read from the verified
 * program's instructions with bpftool (which names the helpers).
 */
static void test_live_meter_reads_the_coarse_clock(void **state)
{
	struct rm_meter_settings s = { .window = 64, .max_contexts = 8, .max_violations = 8 };
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	char cmd[128], line[512], err[512];
	int coarse = 0, fine = 0;
	struct rm_meter m;
	FILE *f;

	(void)state;
	if (rm_meter_load(&m, &s, 0, err, sizeof(err)))
		fail_msg("rm_meter_load: %s", err);
	assert_int_equal(bpf_obj_get_info_by_fd(m.xdp_fd, &info, &len), 0);
	snprintf(cmd, sizeof(cmd), "bpftool prog dump xlated id %u", info.id);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		coarse += strstr(line, "call bpf_ktime_get_coarse_ns") != NULL;
		fine += strstr(line, "call bpf_ktime_get_ns") != NULL;
	}
	assert_int_equal(pclose(f), 0);
	rm_meter_unload(&m);
	assert_int_equal(coarse, 1);
	assert_int_equal(fine, 1);
}

/*
 * The benchmark's breakdown (rocemeter/bench.h enum rm_bench_cut): a meter
 * loaded with a cut stops after that step of meter(), the steps before it
 * done and none after. So the difference of two cuts is the cost of the
 * steps between them.
 */
static void test_bench_cuts_stop_where_they_say(void **state)
{
	static const uint32_t psn[] = { 10, 11, 12 };
	uint32_t cuts[] = { RM_CUT_PARSE, RM_CUT_CONTEXT, RM_CUT_ENGINE, RM_CUT_NONE };
	struct rm_meter_settings s = { .window = 64, .max_contexts = 8, .provision_all = 1, .max_violations = 8 };

	(void)state;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		struct rm_meter_load_opts lo = { .replay = 1, .bench_cut = cuts[i] };
		uint64_t st[RM_STAT__COUNT];
		struct rm_ctl c;
		char err[512];
		struct fx f;

		memset(&f, 0, sizeof(f));
		if (rm_meter_load_ex(&f.m, &s, &lo, err, sizeof(err)))
			fail_msg("rm_meter_load_ex(cut %u): %s", cuts[i], err);
		send_psns(&f, 7, psn, 3);
		stats(&f, st);
		assert_int_equal(st[RM_STAT_FRAMES], 3);
		memset(&c, 0, sizeof(c));
		c.op = RM_CTL_SNAPSHOT;
		c.key = ctx_key(7);
		assert_int_equal(rm_meter_ctl(&f.m, &c), 0);
		if (cuts[i] == RM_CUT_PARSE) {
			/* stops before any context exists: none is made */
			assert_int_equal(c.status, RM_CTL_NO_CONTEXT);
		} else if (cuts[i] == RM_CUT_CONTEXT) {
			/* the context is made, no engine runs: no epoch */
			assert_int_equal(c.status, RM_CTL_NO_EPOCH);
		} else {
			/* the engine ran for every request */
			assert_int_equal(c.status, RM_CTL_OK);
			assert_int_equal(c.snap.requests, 3);
		}
		/* the request's statistics come last */
		assert_int_equal(st[RM_STAT_ELIGIBLE], cuts[i] == RM_CUT_NONE ? 3 : 0);
		rm_meter_unload(&f.m);
	}
}

int main(void)
{
	rm_selftest_require_root("BPF_PROG_TEST_RUN");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_examples_w4),
		cmocka_unit_test(test_seed_example_w1),
		cmocka_unit_test(test_profile_violation),
		cmocka_unit_test(test_mirror_drop),
		cmocka_unit_test(test_worst_case_w22),
		cmocka_unit_test(test_alternating_cpus_equal_one_cpu),
		cmocka_unit_test(test_concurrent_halves_w1024),
		cmocka_unit_test(test_concurrent_halves_w22),
		cmocka_unit_test(test_report_id_exhaustion),
		cmocka_unit_test(test_violation_outlives_full_table_and_eviction),
		cmocka_unit_test(test_violations_full_fail_safe),
		cmocka_unit_test(test_violations_list_and_reenable),
		cmocka_unit_test(test_bench_cuts_stop_where_they_say),
		cmocka_unit_test(test_tiers_bpf_equal_host),
		cmocka_unit_test(test_live_meter_reads_the_coarse_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
