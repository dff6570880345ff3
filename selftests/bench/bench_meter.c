// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_meter.c - ns/packet of the XDP meter (bpf/meter.bpf.c) with
 * BPF_PROG_TEST_RUN, as a ratio to the parse-only XDP baseline
 * (selftests/progs/baseline.bpf.c) measured in the same run (targets: docs/benchmarks.md "Targets").
 * Figures, never assertions. Root.
 *
 * Every figure runs through the driver of selftests/progs/bench.bpf.c, which gives
 * each run a new PSN and dest QP and tail-calls the program under test, so
 * "driver -> parse-only" is the baseline and "driver -> nothing" shows the
 * driver's own cost. Each case has its own meter (fresh maps) and its own
 * driver; the N contexts are created and every context has seen at least
 * two requests before timing. Batches are interleaved over the cases (case
 * 1, 2, ..., case 1, 2, ...) so that noise from the shared machine hits all
 * of them alike; the kernel reports the mean ns of the runs of a batch (whole
 * ns); we print median, min and max over batches.
 *
 * After the timed runs the meter's own statistics must show every frame as
 * an eligible RC request (nothing unprovisioned, no table full); otherwise
 * the program says so and exits 1, because the figure would not be the
 * meter's work.
 *
 * Output: a Markdown table on stdout.
 * Usage: bench_meter [-b BATCHES] [-t MS_PER_BATCH] [-q] [-m] [-f TEXT] [-n CONTEXTS]
 *   -b  batches per case (default 11, at most 101)
 *   -t  target duration of one batch in ms (default 40)
 *   -q  quick: 1 and 1,000 contexts only, 5 batches, 10 ms
 *   -m  the map memory table alone
 *   -f  only the meter cases whose name holds TEXT (and the baseline), no memory table
 *   -n  only the meter cases of CONTEXTS contexts (with -f: both), no memory table; for a
 *       profile of one case (perf record) or focused old/new pairs
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "meter/meter.h"
#include "capture/capture.h"
#include "rocemeter/bench.h"
#include "rocemeter/bth.h"
#include "rocemeter/seqobs.h"
#include "selftests/progs/bench.skel.h"
#include "meter.skel.h"
#include "selftests/progs/baseline.skel.h"
#include "frames.h"

#define MAX_BATCHES 101
#define MAX_CASES   96
#define PAYLOAD     64
/* RM_BENCH_EMIT_EACH: runs between two drains, so that the 4 MiB ring
 * buffer never fills (an event takes 152 bytes with its header). */
#define EMIT_RUN_MAX 20000

enum target { T_DIRECT_PASS, T_DIRECT_BASE, T_DRV_PASS, T_DRV_BASE, T_DRV_METER };

/* provision_all; one exact line (host pair, dest QP, P_Key) per context; one any-QP line for the host pair */
enum prov_kind { PROV_ALL, PROV_EXACT, PROV_ANY_QP };

struct bcase {
	const char *name;
	enum target target;
	int mode;         /* enum rm_bench_mode */
	int replay_clock; /* meter loaded with replay = 1: no clock read */
	uint32_t nctx;    /* live contexts */
	uint32_t window;  /* W of the meter */
	uint32_t step;    /* RM_BENCH_JUMP */
	uint32_t burst;   /* back-to-back requests of one context (bench_burst; 1: round-robin) */
	int prov;         /* enum prov_kind: how the meter is provisioned */
	uint32_t cut;     /* breakdown: enum rm_bench_cut of the meter */
	uint32_t bflags;  /* breakdown: RM_BENCH_* extra work per request */
	int breakdown;    /* a row of the breakdown table, not of the main one */
	const char *skip; /* not run, and why */
	char why[160];
	struct bench *drv; /* own driver (own counter) */
	struct rm_meter m;
	int prog_fd;
	uint32_t repeat;
	uint64_t runs;          /* timed runs */
	struct ring_buffer *rb; /* RM_BENCH_EMIT_EACH: drained after every run */
	int nb;
	double ns[MAX_BATCHES];
	double med, min, max;
	/* A mirrored frame (NULL: the plain one): its bytes, its BTH's offset,
	 * the [capture] the meter is loaded with. */
	const uint8_t *fr;
	size_t fr_len;
	uint32_t bth_off;
	uint32_t seq_off; /* its GRE sequence number's offset (0: none), a new one per request */
	const struct rm_capture_settings *capture;
};

static struct bcase cases[MAX_CASES];
static int ncases;
static struct baseline *base;
static uint8_t frame[256];
static size_t frame_len;

/* One untagged IPv4 RoCEv2 SEND Only request: the driver rewrites dest QP and PSN. */
static size_t make_frame(uint8_t *f)
{
	struct rm_frame_spec s = { .ipv4 = 1,
				   .opcode = RM_OPCODE_RC_SEND_ONLY,
				   .payload = PAYLOAD,
				   .src = { 10, 0, 0, 1 },
				   .dst = { 10, 0, 0, 2 } };

	return rm_frame_build(f, sizeof(frame), &s);
}

/*
 * The plain frame as a switch mirrors it to the monitoring host: outer
 * Ethernet + IPv4 from 192.0.2.1, then GRE with a sequence number and an
 * ERSPAN II (8 bytes) or III (12 bytes) header of session 7, or UDP to 4789
 * and VXLAN with VNI 5001. Returns its length; *bth_off: the BTH's offset.
 */
enum mirror_kind { MK_ERSPAN2, MK_ERSPAN3, MK_VXLAN };

static size_t mirror_frame(uint8_t *out, size_t cap, enum mirror_kind k, uint32_t *bth_off)
{
	static const uint8_t outer_ip[20] = { 0x45, 0, 0, 0, 0, 1, 0, 0, 64, 0, 0, 0, 192, 0, 2, 1, 192, 0, 2, 100 };
	size_t hdr = k == MK_ERSPAN2 ? 8 + 8 : k == MK_ERSPAN3 ? 8 + 12 : 8 + 8, n = 14 + 20 + hdr, tot;
	uint8_t *h = out + 34;

	if (n + frame_len > cap)
		return 0;
	memset(out, 0, n);
	memcpy(out, frame, 12); /* the inner MAC addresses serve the outer frame too */
	out[12] = 0x08;
	memcpy(out + 14, outer_ip, 20);
	tot = 20 + hdr + frame_len;
	out[16] = (uint8_t)(tot >> 8);
	out[17] = (uint8_t)tot;
	out[23] = k == MK_VXLAN ? 17 : 47;
	if (k == MK_VXLAN) {
		size_t ulen = 8 + 8 + frame_len;

		h[0] = 0x9c, h[1] = 0x40, h[2] = 0x12, h[3] = 0xb5; /* 40000 -> 4789 */
		h[4] = (uint8_t)(ulen >> 8), h[5] = (uint8_t)ulen;
		h[8] = 0x08;                              /* I */
		h[12] = 0x00, h[13] = 0x13, h[14] = 0x89; /* VNI 5001 */
	} else {
		h[0] = 0x10; /* S */
		h[2] = k == MK_ERSPAN2 ? 0x88 : 0x22;
		h[3] = k == MK_ERSPAN2 ? 0xbe : 0xeb;
		h[7] = 1;                             /* sequence number 1 */
		h[8] = k == MK_ERSPAN2 ? 0x10 : 0x20; /* version 1 or 2 */
		h[11] = 7;                            /* session 7 */
	}
	memcpy(out + n, frame, frame_len);
	*bth_off = (uint32_t)(n + RM_BENCH_BTH_OFFSET);
	return n + frame_len;
}

/* [capture] of the mirror rows: ERSPAN and VXLAN taken off, the session of mirror_frame(). */
static struct rm_capture_settings mirror_capture;

static void mirror_capture_init(void)
{
	rm_capture_defaults(&mirror_capture);
	mirror_capture.encap = RM_ENCAP_PLAIN | (RM_ENCAP_MIRROR & ~RM_ENCAP_RSPAN);
	mirror_capture.n_points = 2;
	mirror_capture.points[0] = (struct rm_obs_line){
		.id = 1, .kind = RM_MIRROR_ERSPAN, .family = 4, .src = { 192, 0, 2, 1 }, .session = 7
	};
	mirror_capture.points[1] = (struct rm_obs_line){ .id = 2, .kind = RM_MIRROR_VXLAN, .session = 5001 };
}

static uint8_t mirror_frames[3][320];

/*
 * The NCCL captures' own order (BENCH_TRACE): the RC SEND and RDMA WRITE
 * requests of every linlinw5_nccl_*.pcap in the capture directory, file
 * after file, each (file, addresses, dest QP) a connection of its own, as
 * context index << 24 | PSN - the connection's lowest PSN. trace_span: one
 * more than the highest relative PSN (every lap advances each connection
 * by it). trace_conns = 0: no capture found (trace_why says so).
 */
static uint32_t trace[RM_BENCH_TRACE_MAX];
static uint32_t trace_len, trace_span, trace_conns;
static char trace_why[640];

struct trace_conn {
	int file;
	uint8_t src[16], dst[16];
	uint32_t qp, low;
};

/* The BTH of an Ethernet frame of RoCEv2 (IPv4/IPv6, UDP 4791, up to two VLAN tags), with
 * its addresses; NULL if it is none. */
static const uint8_t *rocev2_bth(const uint8_t *f, uint32_t len, uint8_t *src, uint8_t *dst)
{
	uint32_t off = 12, ip;
	uint16_t type;

	for (;;) {
		if (off + 2 > len)
			return NULL;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
		if (type != 0x8100 && type != 0x88a8)
			break;
		off += 4;
	}
	ip = off + 2;
	memset(src, 0, 16);
	memset(dst, 0, 16);
	if (type == 0x0800 && ip + 20 <= len && f[ip + 9] == 17) {
		memcpy(src, f + ip + 12, 4);
		memcpy(dst, f + ip + 16, 4);
		off = ip + (uint32_t)(f[ip] & 15) * 4;
	} else if (type == 0x86dd && ip + 40 <= len && f[ip + 6] == 17) {
		memcpy(src, f + ip + 8, 16);
		memcpy(dst, f + ip + 24, 16);
		off = ip + 40;
	} else {
		return NULL;
	}
	if (off + 8 + RM_BTH_LEN > len || f[off + 2] != 0x12 || f[off + 3] != 0xb7) /* UDP to 4791 */
		return NULL;
	return f + off + 8;
}

/* The connection of (file, src, dst, qp): its index, a new one, or -1 when there are too many. */
static int trace_conn_of(struct trace_conn *tc, int file, const uint8_t *src, const uint8_t *dst, uint32_t qp)
{
	for (uint32_t k = 0; k < trace_conns; k++)
		if (tc[k].file == file && tc[k].qp == qp && !memcmp(tc[k].src, src, 16) && !memcmp(tc[k].dst, dst, 16))
			return (int)k;
	if (trace_conns == RM_BENCH_TRACE_CONNS)
		return -1;
	tc[trace_conns] = (struct trace_conn){ .file = file, .qp = qp, .low = 0xffffffff };
	memcpy(tc[trace_conns].src, src, 16);
	memcpy(tc[trace_conns].dst, dst, 16);
	return (int)trace_conns++;
}

static void load_trace_files(const char *dir)
{
	static struct trace_conn tc[RM_BENCH_TRACE_CONNS];
	static uint32_t psn[RM_BENCH_TRACE_MAX];
	char pattern[512], perr[256];
	glob_t g;

	snprintf(pattern, sizeof(pattern), "%s/linlinw5_nccl_*.pcap", dir);
	if (glob(pattern, 0, NULL, &g)) {
		snprintf(trace_why, sizeof(trace_why), "not run: no capture %s", pattern);
		return;
	}
	for (size_t fi = 0; fi < g.gl_pathc && trace_len < RM_BENCH_TRACE_MAX; fi++) {
		struct rm_capture *pc = rm_capture_open(&g.gl_pathv[fi], 1, perr, sizeof(perr));
		struct rm_frame fr;
		const uint8_t *bth;
		uint8_t src[16], dst[16];

		if (!pc)
			continue;
		while (trace_len < RM_BENCH_TRACE_MAX && rm_capture_next(pc, &fr, perr, sizeof(perr)) == 1) {
			int k;

			bth = rocev2_bth(fr.data, fr.caplen, src, dst);
			if (!bth || bth[0] > RM_OPCODE_RC_RDMA_WRITE_ONLY_IMM)
				continue; /* RC SEND and RDMA WRITE requests only ([IBPKT] opcodes 0x00-0x0b) */
			k = trace_conn_of(tc, (int)fi, src, dst, (uint32_t)(bth[5] << 16 | bth[6] << 8 | bth[7]));
			if (k < 0)
				break;
			psn[trace_len] = (uint32_t)(bth[9] << 16 | bth[10] << 8 | bth[11]);
			if (psn[trace_len] < tc[k].low)
				tc[k].low = psn[trace_len];
			trace[trace_len++] = (uint32_t)k << 24;
		}
		rm_capture_close(pc);
	}
	globfree(&g);
	for (uint32_t i = 0; i < trace_len; i++) {
		uint32_t rel = psn[i] - tc[trace[i] >> 24].low;

		trace[i] |= rel;
		if (rel + 1 > trace_span)
			trace_span = rel + 1;
	}
	if (!trace_len) {
		trace_conns = 0;
		snprintf(trace_why, sizeof(trace_why), "not run: no RC request in %s", pattern);
	}
}

/* The trace into a driver's bench_trace map. 0, or -1 with err. */
static int load_trace(struct bench *drv, char *err, size_t errlen)
{
	int fd = bpf_map__fd(drv->maps.bench_trace);

	for (uint32_t i = 0; i < trace_len; i++)
		if (bpf_map_update_elem(fd, &i, &trace[i], BPF_ANY)) {
			snprintf(err, errlen, "cannot fill bench_trace: %s", strerror(errno));
			return -1;
		}
	drv->bss->bench_trace_len = trace_len;
	drv->bss->bench_trace_span = trace_span;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The physical reference of the many-context rows: the latency of one
 * dependent random memory access over a working set the size of the
 * contexts map of 65,536 contexts (its memlock figure), a pointer chase
 * through a random cycle over all its 64-byte lines (Sattolo's shuffle),
 * on transparent huge pages where the kernel gives them (the kernel's own
 * objects sit in its direct map of large pages). Measured once per round of
 * batches, so that the machine's load hits it as it hits the meter.
 */
#define CHASE_STEPS (1u << 19)

static void **chase_buf;
static size_t chase_bytes;
static double chase[MAX_BATCHES], chase_med, chase_min, chase_max;
static int chase_n;

static int chase_setup(size_t bytes)
{
	size_t lines = bytes / 64, *order;
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	if (lines < 2)
		return -1;
	const size_t huge = 2u << 20; /* a 2 MiB-aligned start: every 2 MiB of it can be a huge page */
	void *raw = mmap(NULL, lines * 64 + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (raw == MAP_FAILED)
		return -1;
	chase_buf = (void **)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(chase_buf, lines * 64, MADV_HUGEPAGE);
	order = malloc(lines * sizeof(*order));
	if (!order)
		return -1;
	for (size_t i = 0; i < lines; i++)
		order[i] = i;
	for (size_t i = lines - 1; i > 0; i--) { /* Sattolo: one cycle through every line */
		size_t j, t;

		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		j = (size_t)(rnd % i);
		t = order[i], order[i] = order[j], order[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		chase_buf[order[i] * 8] = &chase_buf[order[(i + 1) % lines] * 8];
	free(order);
	chase_bytes = lines * 64;
	return 0;
}

/* The calling thread's CPU time in s: a chase descheduled by the machine's other work is not slower. */
static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ns per dependent access (of the thread's CPU time), one measurement of CHASE_STEPS steps. */
static double chase_once(void)
{
	void **p = chase_buf;
	double t0 = thread_cpu_s();

	for (uint32_t i = 0; i < CHASE_STEPS; i++)
		p = (void **)*p;
	__asm__ volatile("" : : "r"(p) : "memory"); /* the chase is not dead code */
	return (thread_cpu_s() - t0) * 1e9 / CHASE_STEPS;
}

static struct bcase *add(const char *name, enum target t, int mode, uint32_t nctx, uint32_t window)
{
	struct bcase *c = &cases[ncases++];

	c->name = name;
	c->target = t;
	c->mode = mode;
	c->nctx = nctx;
	c->window = window;
	c->step = 1;
	c->burst = 1;
	return c;
}

/* Run c->prog_fd repeat times; the kernel's mean ns per run, or -1. */
static double run(struct bcase *c, uint32_t repeat)
{
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = c->fr ? c->fr : frame,
		    .data_size_in = (uint32_t)(c->fr ? c->fr_len : frame_len), .data_out = out,
		    .data_size_out = sizeof(out), .repeat = repeat);

	if (bpf_prog_test_run_opts(c->prog_fd, &o)) {
		fprintf(stderr, "bench_meter: %s: BPF_PROG_TEST_RUN: %s\n", c->name, strerror(errno));
		return -1;
	}
	if (o.retval != XDP_PASS) {
		fprintf(stderr, "bench_meter: %s: the program returned %u, not XDP_PASS (tail call failed?)\n", c->name,
			o.retval);
		return -1;
	}
	if (c->rb && ring_buffer__consume(c->rb) < 0) {
		fprintf(stderr, "bench_meter: %s: cannot drain the ring buffer\n", c->name);
		return -1;
	}
	return (double)o.duration;
}

/*
 * PROV_EXACT: one line per context (host pair, its dest QP, the frame's
 * P_Key); PROV_ANY_QP: one line for the host pair, any QP (a new context
 * finds it with its second probe, exact then any QP). 0, or -1 with err.
 */
static int provision(struct bcase *c, char *err, size_t errlen)
{
	struct rm_provision one = {
		.family = 4, .src = { 10, 0, 0, 1 }, .dst = { 10, 0, 0, 2 }, .pkey = 0xffff, .any_qp = 1
	};
	struct rm_provision *p;
	int r;

	if (c->prov == PROV_ALL)
		return 0;
	if (c->prov == PROV_ANY_QP)
		return rm_meter_provision(&c->m, &one, 1, 0, err, errlen);
	p = calloc(c->nctx, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < c->nctx; i++) {
		p[i] = one;
		p[i].any_qp = 0;
		p[i].dest_qp = c->drv->data->bench_qp_base + i;
	}
	r = rm_meter_provision(&c->m, p, (int)c->nctx, 0, err, errlen);
	free(p);
	return r;
}

static int discard_event(void *ctx, void *data, size_t size)
{
	return 0;
}

static int setup(struct bcase *c, char *err, size_t errlen)
{
	__u32 k = 0;
	int next;

	if (c->target == T_DIRECT_PASS || c->target == T_DIRECT_BASE) {
		/* the programs alone, no driver: a bench object just for bench_pass */
		c->drv = bench__open_and_load();
		if (!c->drv) {
			snprintf(err, errlen, "cannot load bench.bpf.o: %s", strerror(errno));
			return -1;
		}
		c->prog_fd = c->target == T_DIRECT_PASS ? bpf_program__fd(c->drv->progs.bench_pass)
							: bpf_program__fd(base->progs.rm_base_xdp);
		return 0;
	}
	c->drv = bench__open_and_load();
	if (!c->drv) {
		snprintf(err, errlen, "cannot load bench.bpf.o: %s", strerror(errno));
		return -1;
	}
	c->drv->bss->bench_i = 0;
	c->drv->bss->bench_mode = (__u32)c->mode;
	c->drv->data->bench_nctx = c->nctx;
	c->drv->data->bench_step = c->step;
	c->drv->data->bench_burst = c->burst;
	if (c->mode == RM_BENCH_TRACE && load_trace(c->drv, err, errlen))
		return -1;
	if (c->fr) {
		c->drv->data->bench_bth_off = c->bth_off;
		c->drv->bss->bench_seq_off = c->seq_off;
	}
	c->prog_fd = bpf_program__fd(c->drv->progs.bench_drive);
	if (c->target == T_DRV_METER) {
		struct rm_meter_settings s = {
			.window = c->window,
			/* the default table size, or what the case needs; the default pool,
			 * or a window for every context of the worst case (each holds one) */
			.max_contexts = c->nctx > 65536 ? c->nctx : 65536,
			.max_windows = c->mode == RM_BENCH_JUMP ? c->nctx : 0,
			.provision_all = c->prov == PROV_ALL,
			.idle_timeout_ms = 0,
		};

		struct rm_meter_load_opts lo = {
			.replay = c->replay_clock, .bench_cut = c->cut, .bench_flags = c->bflags, .capture = c->capture
		};

		/* replay = 0: the kernel clock, as when attached */
		if (rm_meter_load_ex(&c->m, &s, &lo, err, errlen) || provision(c, err, errlen))
			return -1;
		if (c->bflags & RM_BENCH_EMIT_EACH) {
			c->rb = ring_buffer__new(c->m.events_fd, discard_event, NULL, NULL);
			if (!c->rb) {
				snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
				return -1;
			}
		}
		next = c->m.xdp_fd;
	} else if (c->target == T_DRV_BASE) {
		next = bpf_program__fd(base->progs.rm_base_xdp);
	} else {
		next = bpf_program__fd(c->drv->progs.bench_pass);
	}
	if (bpf_map_update_elem(bpf_map__fd(c->drv->maps.bench_next), &k, &next, BPF_ANY)) {
		snprintf(err, errlen, "%s: cannot put the program under test into bench_next: %s", c->name,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* Warm up (every context exists and has seen >= 2 requests), then size a batch. */
static int warm(struct bcase *c, double batch_ns)
{
	uint64_t w = (uint64_t)c->nctx * (c->burst > 2 ? c->burst : 2);
	double ns;

	if (c->target == T_DRV_METER && c->mode != RM_BENCH_JUMP && w < 200000)
		w = 200000;
	if (c->target != T_DRV_METER)
		w = 200000;
	while (w) {
		uint32_t r = w > 1000000 ? 1000000 : (uint32_t)w;

		if (c->rb && r > EMIT_RUN_MAX)
			r = EMIT_RUN_MAX;

		if (run(c, r) < 0)
			return -1;
		w -= r;
	}
	ns = run(c, c->mode == RM_BENCH_JUMP ? 20 : 20000);
	if (ns < 0)
		return -1;
	if (ns < 1)
		ns = 1;
	ns = batch_ns / ns;
	c->repeat = ns < 20 ? 20 : ns > 5e6 ? 5000000 : (uint32_t)ns;
	if (c->rb && c->repeat > EMIT_RUN_MAX)
		c->repeat = EMIT_RUN_MAX;
	return 0;
}

static int check_meter(struct bcase *c)
{
	uint64_t st[RM_STAT__COUNT];

	if (rm_meter_read_stats(c->m.stats_fd, st)) {
		fprintf(stderr, "bench_meter: %s: cannot read the statistics\n", c->name);
		return -1;
	}
	if (st[RM_STAT_ELIGIBLE] != st[RM_STAT_FRAMES] || st[RM_STAT_EPOCHS_STARTED] != c->nctx) {
		fprintf(stderr,
			"bench_meter: %s: the meter did not meter every frame: frames %llu, eligible %llu, "
			"epochs started %llu (expected %u), not provisioned %llu, table full %llu\n",
			c->name, (unsigned long long)st[RM_STAT_FRAMES], (unsigned long long)st[RM_STAT_ELIGIBLE],
			(unsigned long long)st[RM_STAT_EPOCHS_STARTED], c->nctx,
			(unsigned long long)st[RM_STAT_NOT_PROVISIONED], (unsigned long long)st[RM_STAT_TABLE_FULL]);
		return -1;
	}
	return 0;
}

/* ns or a ratio with thousands separators: 842151 -> "842,151" */
static const char *fmt_big(double v, int decimals, char *buf, size_t len)
{
	char tmp[48], *p = buf;
	int digits, i;

	snprintf(tmp, sizeof(tmp), "%.*f", decimals, v);
	digits = (int)strcspn(tmp, ".");
	for (i = 0; tmp[i] && (size_t)(p - buf) < len - 2; i++) {
		if (i > 0 && i < digits && (digits - i) % 3 == 0)
			*p++ = ',';
		*p++ = tmp[i];
	}
	*p = 0;
	return buf;
}

static const char *fmt_n(uint32_t n, char *buf, size_t len)
{
	return fmt_big((double)n, 0, buf, len);
}

/*
 * The breakdown table: each stage's row is the meter stopped after it, the
 * increment is the difference to the row above (the first: to the driver
 * alone); the clock, provisioning and ring-buffer rows are differences to
 * the whole meter.
 */
static void print_breakdown(const struct bcase *base, const struct bcase *drv_pass)
{
	const struct bcase *prev = NULL, *whole = NULL;
	uint32_t nctx = 0;

	for (int i = 0; i < ncases; i++) {
		const struct bcase *c = &cases[i];
		char n[16];
		double inc;
		const char *what;

		if (c->breakdown != 1 || c->skip || !c->nb)
			continue;
		if (c->nctx != nctx) {
			nctx = c->nctx;
			prev = drv_pass;
			whole = NULL;
			printf("\nBreakdown of the meter, in-order, W = 1,024, %s context(s): the meter stopped after "
			       "each "
			       "stage (cumulative ns/packet through the driver), then extra work per request.\n\n",
			       fmt_n(nctx, n, sizeof(n)));
			printf("| stage | ns/packet | stage ns | stage x parse-only |\n|---|---:|---:|---:|\n");
			printf("| driver + tail call alone | %.0f | | |\n", drv_pass->med);
		}
		if (c->cut || (!c->replay_clock && !c->bflags && !c->prov)) {
			inc = c->med - prev->med;
			what = c->name;
			prev = c;
			if (!c->cut)
				whole = c;
		} else if (whole) {
			inc = c->replay_clock ? whole->med - c->med : c->med - whole->med;
			what = c->name;
		} else {
			continue;
		}
		printf("| %s | %.0f | %s%.0f | %.2f |\n", what, c->med, c->replay_clock ? "clock: " : "", inc,
		       inc / base->med);
	}
}

/*
 * What steering a packet to another CPU costs the CPU that received it: a
 * redirect into a cpumap (the owner CPU's program drops it), run with
 * BPF_F_TEST_XDP_LIVE_FRAMES so that the redirect is carried out, minus the
 * same run returning XDP_DROP. The calling thread is pinned to CPU 0, the
 * owner is CPU 1. Median ns per packet of 7 runs of 1,000,000, or -1.
 */
static double steer_cost(void)
{
	struct bpf_cpumap_val v = { .qsize = 2048 };
	double d[2][7];
	struct bench *b;
	cpu_set_t one, saved;
	__u32 cpu = 1;
	int fds[2];

	if (libbpf_num_possible_cpus() < 2 || sched_getaffinity(0, sizeof(saved), &saved))
		return -1;
	b = bench__open_and_load();
	if (!b)
		return -1;
	b->bss->bench_cpu_target = cpu;
	v.bpf_prog.fd = bpf_program__fd(b->progs.bench_cpumap_drop);
	if (bpf_map_update_elem(bpf_map__fd(b->maps.bench_cpus), &cpu, &v, 0)) {
		bench__destroy(b);
		return -1;
	}
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	fds[0] = bpf_program__fd(b->progs.bench_steer);
	fds[1] = bpf_program__fd(b->progs.bench_drop);
	for (int r = 0; r < 7; r++)
		for (int k = 0; k < 2; k++) {
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)frame_len,
				    .repeat = 1000000, .flags = BPF_F_TEST_XDP_LIVE_FRAMES);

			d[k][r] = bpf_prog_test_run_opts(fds[k], &o) ? -1 : (double)o.duration;
		}
	sched_setaffinity(0, sizeof(saved), &saved);
	bench__destroy(b);
	qsort(d[0], 7, sizeof(double), cmp_double);
	qsort(d[1], 7, sizeof(double), cmp_double);
	return d[0][0] < 0 || d[1][0] < 0 ? -1 : d[0][3] - d[1][3];
}

/* The per-CPU comparison table (docs/benchmarks.md "Per-CPU state or a spin lock"). */
static void print_percpu(const struct bcase *base)
{
	double steer = steer_cost();

	printf("\nPer-CPU comparison, W = 1,024: the whole meter with the context's bpf_spin_lock (shared state), and "
	       "without it (what a context owned by one CPU costs on that CPU).\n\n");
	printf("| requests | contexts | with the lock | without | saved | saved x parse-only "
	       "|\n|---|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i + 1 < ncases; i++) {
		const struct bcase *a = &cases[i], *b = &cases[i + 1];
		char n[16];

		if (a->breakdown != 2 || b->breakdown != 2 || a->bflags || !(b->bflags & RM_BENCH_NO_LOCK) || a->skip ||
		    b->skip || !a->nb || !b->nb)
			continue;
		printf("| %s | %s | %.0f | %.0f | %.0f | %.2f |\n", a->name, fmt_n(a->nctx, n, sizeof(n)), a->med,
		       b->med, a->med - b->med, (a->med - b->med) / base->med);
	}
	if (steer >= 0)
		printf("\nSteering one packet to its owner CPU through a cpumap: %.0f ns on the receiving CPU "
		       "(live-frame "
		       "test run, redirect minus XDP_DROP), besides the owner CPU's work.\n",
		       steer);
	else
		printf("\nSteering through a cpumap: not measured (needs 2 CPUs and BPF_F_TEST_XDP_LIVE_FRAMES).\n");
}

/* The kernel's memlock figure of a map (what `bpftool map show` prints as memlock). */
static uint64_t map_memlock(int fd)
{
	char path[64], line[256];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %" SCNu64, &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Sum of the memlock figures of every map of the meter; *ctx and *win: contexts and windows. */
static uint64_t meter_memlock(struct rm_meter *m, uint64_t *ctx, uint64_t *win)
{
	struct bpf_map *map;
	uint64_t total = 0;

	*ctx = map_memlock(m->contexts_fd);
	*win = map_memlock(m->windows_fd);
	bpf_object__for_each_map(map, m->skel->obj) total += map_memlock(bpf_map__fd(map));
	return total;
}

/*
 * Map memory from the kernel: the meter loaded with N contexts' worth of
 * table (max_contexts, or the default when N is smaller), then N in-order
 * connections of two requests each through the driver; the memlock
 * figures of its maps (/proc/self/fdinfo, as bpftool reads them) at load
 * and after. The contexts map is not preallocated: its figure counts the
 * elements that exist.
 */
static int memory_table(int quick)
{
	static const struct {
		uint32_t nctx, window;
		int default_size; /* max_contexts left at its default (65,536) */
		const char *target;
	} rows[] = {
		{ 65536, 1024, 1, "" },
		{ 1000000, 1024, 0, "at most 256 MiB" },
		{ 65536, RM_WINDOW_MAX, 1, "" },
		{ 100000, RM_WINDOW_MAX, 0, "at most 1 GiB" },
	};
	char err[512];

	printf("\nMap memory, in-order connections (two requests each), memlock figures of all the meter's maps "
	       "from the kernel (/proc/PID/fdinfo, as bpftool map show):\n\n");
	printf("| contexts | W | max_contexts | pool windows | at load, MiB | after, MiB | contexts map, MiB | "
	       "bytes per context | window pool, MiB | target |\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t n = quick ? rows[i].nctx / 10 : rows[i].nctx, k = 0;
		struct rm_meter_settings ms = {
			.window = rows[i].window,
			.max_contexts = rows[i].default_size ? 65536 : n,
			.provision_all = 1,
			.max_violations = 65536,
		};
		struct rm_meter m;
		struct bench *drv;
		uint64_t st[RM_STAT__COUNT], before, after, ctx, win, left = 2ull * n;
		char nb[16], wb[16], mb[16];
		int next, fd;

		if (rm_meter_load(&m, &ms, 0, err, sizeof(err))) {
			fprintf(stderr, "bench_meter: memory, %u contexts: %s\n", n, err);
			return -1;
		}
		before = meter_memlock(&m, &ctx, &win);
		drv = bench__open_and_load();
		if (!drv)
			return -1;
		drv->bss->bench_mode = RM_BENCH_INORDER;
		drv->data->bench_nctx = n;
		next = m.xdp_fd;
		fd = bpf_program__fd(drv->progs.bench_drive);
		if (bpf_map_update_elem(bpf_map__fd(drv->maps.bench_next), &k, &next, BPF_ANY))
			return -1;
		while (left) {
			uint32_t r = left > 1000000 ? 1000000 : (uint32_t)left;
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)frame_len,
				    .repeat = r);

			if (bpf_prog_test_run_opts(fd, &o))
				return -1;
			left -= r;
		}
		after = meter_memlock(&m, &ctx, &win);
		if (rm_meter_read_stats(m.stats_fd, st) || st[RM_STAT_EPOCHS_STARTED] != n ||
		    st[RM_STAT_ELIGIBLE] != 2ull * n) {
			fprintf(stderr, "bench_meter: memory, %u contexts: the meter did not meter them all\n", n);
			return -1;
		}
		if (rows[i].window == RM_WINDOW_MAX)
			snprintf(wb, sizeof(wb), "2^22");
		else
			fmt_n(rows[i].window, wb, sizeof(wb));
		printf("| %s | %s | %s | %u | %.1f | %.1f | %.1f | %.0f | %.1f | %s |\n", fmt_n(n, nb, sizeof(nb)), wb,
		       fmt_n(ms.max_contexts, mb, sizeof(mb)), m.pool_windows, before / 1048576.0, after / 1048576.0,
		       ctx / 1048576.0, (double)ctx / n, win / 1048576.0, quick ? "(quick: a tenth)" : rows[i].target);
		bench__destroy(drv);
		rm_meter_unload(&m);
	}
	return 0;
}

/* The baseline program, loaded so that a program array of xdp.frags programs takes it. */
static int load_baseline(void)
{
	base = baseline__open();
	if (!base) {
		fprintf(stderr, "bench_meter: cannot open baseline.bpf.o\n");
		return -1;
	}
	/* same program, allowed into an xdp.frags program array (see bench.bpf.c) */
	bpf_program__set_flags(base->progs.rm_base_xdp,
			       bpf_program__flags(base->progs.rm_base_xdp) | BPF_F_XDP_HAS_FRAGS);
	if (baseline__load(base)) {
		fprintf(stderr, "bench_meter: cannot load baseline.bpf.o\n");
		return -1;
	}
	return 0;
}

/*
 * What operators have: messages of B back-to-back packets of one QP, the
 * bursts round-robin over 1,000 and 65,536 QPs (in order and in the mix),
 * and the NCCL captures' own order of connections and PSNs.
 */
static void add_burst_cases(int quick)
{
	static const uint32_t bursts[3] = { 4, 16, 64 }, ns_ctx[2] = { 1000, 65536 };
	static const char *const name[2][3] = {
		{ "meter, in-order, bursts of 4", "meter, in-order, bursts of 16", "meter, in-order, bursts of 64" },
		{ "meter, mix, bursts of 4", "meter, mix, bursts of 16", "meter, mix, bursts of 64" },
	};
	struct bcase *c;

	for (int m = 0; m < 2; m++)
		for (int b = 0; b < 3; b++)
			for (int i = 0; i < 2; i++) {
				if (quick && ns_ctx[i] > 1000)
					continue;
				c = add(name[m][b], T_DRV_METER, m ? RM_BENCH_MIX : RM_BENCH_INORDER, ns_ctx[i], 1024);
				c->burst = bursts[b];
			}
	c = add("meter, the NCCL captures' own order", T_DRV_METER, RM_BENCH_TRACE, trace_conns ? trace_conns : 1,
		1024);
	if (!trace_conns)
		c->skip = trace_why;
}

/* The cases of the main table: the references, then the meter's figures. */
static void add_main_cases(int quick, struct bcase **drv_base, struct bcase **drv_pass)
{
	static const uint32_t ns_ctx[3] = { 1, 1000, 65536 };
	struct bcase *c;

	add("empty XDP program, run directly", T_DIRECT_PASS, 0, 1, 0);
	add("parse-only XDP, run directly", T_DIRECT_BASE, 0, 1, 0);
	*drv_pass = add("driver + tail call alone", T_DRV_PASS, RM_BENCH_INORDER, 1, 0);
	*drv_base = add("driver -> parse-only (the baseline)", T_DRV_BASE, RM_BENCH_INORDER, 1, 0);
	for (int i = 0; i < 3; i++) {
		if (quick && ns_ctx[i] > 1000)
			continue;
		add("meter, in-order (d = 1)", T_DRV_METER, RM_BENCH_INORDER, ns_ctx[i], 1024);
	}
	c = add("meter, in-order, replay clock (no clock read)", T_DRV_METER, RM_BENCH_INORDER, 1, 1024);
	c->replay_clock = 1;
	/* Mirrored copies: the same inner frame, decapsulated (docs/deployment.md). */
	mirror_capture_init();
	add("meter, plain frame, no [capture]", T_DRV_METER, RM_BENCH_INORDER, 1, 1024);
	c = add("meter, plain frame, mirrors taken off ([capture])", T_DRV_METER, RM_BENCH_INORDER, 1, 1024);
	c->capture = &mirror_capture;
	for (int k = MK_ERSPAN2; k <= MK_VXLAN; k++) {
		static const char *const name[] = { "meter, ERSPAN II frame of it (GRE sequence in order)",
						    "meter, ERSPAN III frame of it (GRE sequence in order)",
						    "meter, VXLAN frame of it" };

		c = add(name[k], T_DRV_METER, RM_BENCH_INORDER, 1, 1024);
		c->capture = &mirror_capture;
		c->fr = mirror_frames[k];
		c->fr_len = mirror_frame(mirror_frames[k], sizeof(mirror_frames[k]), (enum mirror_kind)k, &c->bth_off);
		c->seq_off = k == MK_VXLAN ? 0 : 14 + 20 + 4;
	}
	/* The decapsulation's breakdown: the same four frames with the meter
	 * stopped after the headers (RM_CUT_HEADERS: no mirror session) and
	 * after the parse and classification (RM_CUT_PARSE: + the session). */
	for (int k = -1; k <= MK_VXLAN; k++) {
		static const char *const name[2][4] = {
			{ "cut: headers only, plain frame ([capture])", "cut: headers only, ERSPAN II frame",
			  "cut: headers only, ERSPAN III frame", "cut: headers only, VXLAN frame" },
			{ "cut: + mirror session, plain frame ([capture])", "cut: + mirror session, ERSPAN II frame",
			  "cut: + mirror session, ERSPAN III frame", "cut: + mirror session, VXLAN frame" },
		};

		for (int j = 0; j < 2; j++) {
			c = add(name[j][k + 1], T_DRV_METER, RM_BENCH_INORDER, 1, 1024);
			c->capture = &mirror_capture;
			c->cut = j ? RM_CUT_PARSE : RM_CUT_HEADERS;
			if (k < 0)
				continue;
			c->fr = mirror_frames[k];
			c->fr_len = mirror_frame(mirror_frames[k], sizeof(mirror_frames[k]), (enum mirror_kind)k,
						 &c->bth_off);
			c->seq_off = k == MK_VXLAN ? 0 : 14 + 20 + 4;
		}
	}
	for (int i = 0; i < 3; i++) {
		if (quick && ns_ctx[i] > 1000)
			continue;
		add("meter, reorder/duplicate mix", T_DRV_METER, RM_BENCH_MIX, ns_ctx[i], 1024);
	}
	add_burst_cases(quick);
	for (int i = 0; i < 3; i++) {
		if (quick && ns_ctx[i] > 1000)
			continue;
		add("meter, in-order (d = 1)", T_DRV_METER, RM_BENCH_INORDER, ns_ctx[i], RM_WINDOW_MAX);
	}
	for (int i = 0; i < 3; i++) {
		if (quick && ns_ctx[i] > 1000)
			continue;
		c = add("meter, worst case (jumps of W - 1)", T_DRV_METER, RM_BENCH_JUMP, ns_ctx[i], RM_WINDOW_MAX);
		c->step = RM_WINDOW_MAX - 1;
	}
}

/* The cases of the breakdown (print_breakdown()) and of the per-CPU comparison (print_percpu()). */
static void add_breakdown_cases(int quick)
{
	static const uint32_t ns_ctx[3] = { 1, 1000, 65536 };
	struct bcase *c;

	/* The breakdown: the same meter stopped after each stage (enum
	 * rm_bench_cut), in-order at W = 1024, then the extra work of the
	 * provisioning lookup and of a ring-buffer event per request. */
	for (int i = 0; i < 3; i++) {
		static const char *const cut_name[] = {
			[RM_CUT_PERCPU] = "per-CPU statistics and scratch lookups",
			[RM_CUT_PARSE] = "parse and classification",
			[RM_CUT_KEY] = "context key and clock (bpf_ktime_get_coarse_ns)",
			[RM_CUT_CONTEXT] = "context lookup",
			[RM_CUT_ENGINE] = "window lookup and the engine under the lock",
		};

		if (i == 1 || (quick && ns_ctx[i] > 1000) || (!quick && ns_ctx[i] == 1000))
			continue;
		for (uint32_t k = RM_CUT_PERCPU; k <= RM_CUT_ENGINE; k++) {
			c = add(cut_name[k], T_DRV_METER, RM_BENCH_INORDER, ns_ctx[i], 1024);
			c->cut = k;
			c->breakdown = 1;
		}
		c = add("request statistics and events (the whole meter)", T_DRV_METER, RM_BENCH_INORDER, ns_ctx[i],
			1024);
		c->breakdown = 1;
		c = add("the whole meter on the replay clock", T_DRV_METER, RM_BENCH_INORDER, ns_ctx[i], 1024);
		c->replay_clock = 1;
		c->breakdown = 1;
		c = add("+ one exact provisioning line per context (no provision_all)", T_DRV_METER, RM_BENCH_INORDER,
			ns_ctx[i], 1024);
		c->prov = PROV_EXACT;
		c->breakdown = 1;
		c = add("+ one any-QP provisioning line (no provision_all)", T_DRV_METER, RM_BENCH_INORDER, ns_ctx[i],
			1024);
		c->prov = PROV_ANY_QP;
		c->breakdown = 1;
		c = add("+ one ring-buffer event per request", T_DRV_METER, RM_BENCH_INORDER, ns_ctx[i], 1024);
		c->bflags = RM_BENCH_EMIT_EACH;
		c->breakdown = 1;
	}
	/* The per-CPU comparison: the whole meter without the context's lock,
	 * in order and in the reorder/duplicate mix. */
	for (int i = 0; i < 3; i++) {
		if (i == 1 || (quick && ns_ctx[i] > 1000) || (!quick && ns_ctx[i] == 1000))
			continue;
		for (int mode = RM_BENCH_INORDER; mode <= RM_BENCH_MIX; mode++) {
			c = add(mode == RM_BENCH_MIX ? "mix" : "in-order", T_DRV_METER, mode, ns_ctx[i], 1024);
			c->breakdown = 2;
			c = add(mode == RM_BENCH_MIX ? "mix" : "in-order", T_DRV_METER, mode, ns_ctx[i], 1024);
			c->bflags = RM_BENCH_NO_LOCK;
			c->breakdown = 2;
		}
	}
}

/* Mark the cases not to run: not selected by -f TEXT (only) or -n CONTEXTS
 * (only_nctx, 0: any), or too big for this host. */
static void skip_cases(const char *only, uint32_t only_nctx)
{
	struct bcase *c;
	struct sysinfo si;

	/* Skip what would not fit in a quarter of RAM: the worst case keeps a
	 * pool window (520 KiB at W = 2^22) in every context. */
	sysinfo(&si);
	for (int i = 0; i < ncases; i++) {
		struct rm_meter_settings ms = { .window = 0 };
		uint64_t need;

		c = &cases[i];
		if (c->target != T_DRV_METER)
			continue;
		if ((only && !strstr(c->name, only)) || (only_nctx && c->nctx != only_nctx)) {
			c->skip = "not selected (-f, -n)";
			continue;
		}
		if (c->prov == PROV_EXACT && c->nctx > 4096) {
			c->skip = "not run: more contexts than provisioning lines (4,096)";
			continue;
		}
		ms.window = c->window;
		ms.max_contexts = c->nctx > 65536 ? c->nctx : 65536;
		ms.max_windows = c->mode == RM_BENCH_JUMP ? c->nctx : 0;
		need = rm_meter_pool_windows(&ms) * rm_meter_pool_window_bytes(c->window) + (uint64_t)c->nctx * 256;
		if (need <= (uint64_t)si.totalram * si.mem_unit / 4)
			continue;
		snprintf(c->why, sizeof(c->why),
			 "not run: %u pool windows of %llu KiB need %.0f GiB of map memory (host: %.0f GiB)",
			 rm_meter_pool_windows(&ms), (unsigned long long)rm_meter_pool_window_bytes(c->window) / 1024,
			 (double)need / (1ull << 30), (double)si.totalram * si.mem_unit / (1ull << 30));
		c->skip = c->why;
	}
}

/* Set up and warm every case, run the interleaved batches, take the medians. 0, or -1 (said on stderr). */
static int run_cases(int batches, double batch_ms)
{
	struct bcase *c;
	char err[512];

	for (int i = 0; i < ncases; i++) {
		c = &cases[i];
		if (c->skip)
			continue;
		if (setup(c, err, sizeof(err))) {
			fprintf(stderr, "bench_meter: %s, %u contexts, W = %u: %s\n", c->name, c->nctx, c->window, err);
			return -1;
		}
		if (warm(c, batch_ms * 1e6))
			return -1;
		if (!chase_buf && c->target == T_DRV_METER && c->nctx == 65536 && !c->cut)
			chase_setup(map_memlock(c->m.contexts_fd)); /* the table's size, its elements made */
	}
	for (int b = 0; b < batches; b++) {
		if (chase_buf)
			chase[chase_n++] = chase_once();
		for (int i = 0; i < ncases; i++) {
			double ns;

			c = &cases[i];
			if (c->skip)
				continue;
			ns = run(c, c->repeat);
			if (ns < 0)
				return -1;
			c->ns[c->nb++] = ns;
			c->runs += c->repeat;
		}
	}
	if (chase_n) {
		qsort(chase, (size_t)chase_n, sizeof(double), cmp_double);
		chase_med = chase[chase_n / 2];
		chase_min = chase[0];
		chase_max = chase[chase_n - 1];
	}
	for (int i = 0; i < ncases; i++) {
		c = &cases[i];
		if (c->skip || !c->nb)
			continue;
		if (c->target == T_DRV_METER && !c->cut && check_meter(c))
			return -1;
		qsort(c->ns, (size_t)c->nb, sizeof(double), cmp_double);
		c->med = c->ns[c->nb / 2];
		c->min = c->ns[0];
		c->max = c->ns[c->nb - 1];
	}
	return 0;
}

/*
 * The 65,536-context rows in cold memory accesses: (meter at 65,536 - the
 * same meter at 1 context, round-robin) / the latency of one dependent
 * random access over the table's size (chase_once()).
 */
static void print_cold_accesses(void)
{
	char mib[32];

	if (!chase_n) {
		printf("\nPhysical reference: not measured (no 65,536-context row ran).\n");
		return;
	}
	printf("\nPhysical reference, same run: one dependent random memory access over %s MiB (the contexts map "
	       "of 65,536 contexts, its memlock figure; a pointer chase over 64-byte lines, transparent huge "
	       "pages, the thread's CPU time): %.1f ns (%.1f-%.1f), median of %d measurements interleaved with the "
	       "batches.\n\n",
	       fmt_big((double)chase_bytes / 1048576.0, 1, mib, sizeof(mib)), chase_med, chase_min, chase_max, chase_n);
	printf("| figure | W | at 65,536, ns | at 1, ns | difference, ns | cold accesses per packet |\n"
	       "|---|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < ncases; i++) {
		const struct bcase *c = &cases[i], *one = NULL;

		if (c->target != T_DRV_METER || c->nctx != 65536 || c->skip || !c->nb || c->breakdown)
			continue;
		for (int j = 0; j < ncases; j++) {
			const struct bcase *o = &cases[j];

			if (o->target == T_DRV_METER && o->nctx == 1 && o->mode == c->mode && o->window == c->window &&
			    o->burst == 1 && !o->breakdown && !o->replay_clock && !o->capture && !o->fr && !o->skip &&
			    o->nb && !one)
				one = o;
		}
		if (one)
			printf("| %s | %s | %.0f | %.0f | %.0f | %.2f |\n", c->name,
			       c->window == RM_WINDOW_MAX ? "2^22" : "1,024", c->med, one->med, c->med - one->med,
			       (c->med - one->med) / chase_med);
	}
}

/* The main table, and the worst case against in-order at the same W and contexts. */
static void print_main_table(int batches, double batch_ms, const struct bcase *drv_base, const struct bcase *drv_pass)
{
	struct bcase *c;

	printf("XDP meter, BPF_PROG_TEST_RUN: ns/packet, median (min-max) of %d interleaved batches of ~%.0f ms; "
	       "ratio = median / median of \"driver -> parse-only\". SEND Only, IPv4, %zu-byte frames; the kernel "
	       "clock unless stated.\n\n",
	       batches, batch_ms, frame_len);
	printf("| figure | contexts | W | ns/packet | min | max | x parse-only | runs/batch |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < ncases; i++) {
		char n[16], w[16], med[48], mn[48], mx[48], ratio[48];

		c = &cases[i];
		if (c->breakdown)
			continue; /* in their own tables */
		if (c->target == T_DRV_METER) {
			fmt_n(c->nctx, n, sizeof(n));
			if (c->window == RM_WINDOW_MAX)
				snprintf(w, sizeof(w), "2^22");
			else
				fmt_n(c->window, w, sizeof(w));
		} else {
			snprintf(n, sizeof(n), "-");
			snprintf(w, sizeof(w), "-");
		}
		if (c->skip) {
			printf("| %s | %s | %s | %s | | | | |\n", c->name, n, w, c->skip);
			continue;
		}
		fmt_big(c->med / drv_base->med, c->med / drv_base->med >= 100 ? 0 : 2, ratio, sizeof(ratio));
		printf("| %s | %s | %s | %s | %s | %s | %s | %u |\n", c->name, n, w,
		       fmt_big(c->med, 0, med, sizeof(med)), fmt_big(c->min, 0, mn, sizeof(mn)),
		       fmt_big(c->max, 0, mx, sizeof(mx)), ratio, c->repeat);
	}
	printf("\nDriver alone (rewrite + tail call into an empty program): %.0f ns of every figure above "
	       "\"driver -> ...\".\n",
	       drv_pass->med);
	/* worst case against in-order at the same W and contexts (target: at most 4x) */
	for (int i = 0; i < ncases; i++) {
		struct bcase *w = &cases[i], *o = NULL;

		if (w->mode != RM_BENCH_JUMP || w->skip || w->target != T_DRV_METER)
			continue;
		for (int j = 0; j < ncases; j++)
			if (cases[j].target == T_DRV_METER && cases[j].mode == RM_BENCH_INORDER &&
			    !cases[j].replay_clock && cases[j].window == w->window && cases[j].nctx == w->nctx &&
			    cases[j].burst == 1 && !cases[j].capture && !cases[j].fr && !cases[j].skip && cases[j].nb)
				o = &cases[j];
		if (o)
			printf("Worst case / in-order at W = 2^22, %u context(s): %.0fx\n", w->nctx, w->med / o->med);
	}
}

int main(int argc, char **argv)
{
	int batches = 11, quick = 0, memory_only = 0, opt;
	const char *only = NULL;
	uint32_t only_nctx = 0;
	double batch_ms = 40, t0 = now_s();
	struct bcase *drv_base, *drv_pass;

	while ((opt = getopt(argc, argv, "b:t:qmf:n:h")) != -1) {
		switch (opt) {
		case 'b':
			batches = atoi(optarg);
			break;
		case 't':
			batch_ms = atof(optarg);
			break;
		case 'q':
			quick = 1;
			batches = 5;
			batch_ms = 10;
			break;
		case 'm':
			memory_only = 1;
			break;
		case 'f':
			only = optarg;
			break;
		case 'n':
			only_nctx = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: bench_meter [-b BATCHES] [-t MS_PER_BATCH] [-q] [-m] [-f TEXT] [-n "
					"CONTEXTS]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (batches < 1 || batches > MAX_BATCHES || batch_ms <= 0) {
		fprintf(stderr, "bench_meter: batches must be 1..%d and the batch time positive\n", MAX_BATCHES);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_meter: needs root (BPF_PROG_TEST_RUN)\n");
		return 1;
	}
	frame_len = make_frame(frame);
	load_trace_files(getenv("RM_BENCH_PCAPS") ? getenv("RM_BENCH_PCAPS") : "../shared/data/pcaps");
	if (memory_only)
		return memory_table(quick) ? 1 : 0;

	if (load_baseline())
		return 1;

	add_main_cases(quick, &drv_base, &drv_pass);
	add_breakdown_cases(quick);
	skip_cases(only, only_nctx);
	if (run_cases(batches, batch_ms))
		return 1;
	print_main_table(batches, batch_ms, drv_base, drv_pass);
	print_cold_accesses();
	print_breakdown(drv_base, drv_pass);
	print_percpu(drv_base);
	if (!only && !only_nctx && memory_table(quick))
		return 1;
	printf("\n(bench_meter took %.0f s)\n", now_s() - t0);

	for (int i = 0; i < ncases; i++) {
		ring_buffer__free(cases[i].rb);
		if (cases[i].m.skel)
			rm_meter_unload(&cases[i].m);
		if (cases[i].drv)
			bench__destroy(cases[i].drv);
	}
	baseline__destroy(base);
	return 0;
}
