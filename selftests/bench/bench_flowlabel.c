// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_flowlabel.c - figures (never assertions) for the flow-label program
 * against the parse-only baseline of docs/benchmarks.md "Targets"
 * (target: at most 1.5x parse-only). BPF_PROG_TEST_RUN with `repeat`; the
 * kernel reports the mean ns per run of a batch; we print the median over
 * batches. Root.
 *
 * A test run reuses one skb for every repeat, so after the first run the
 * flow-label program would see its own label. To measure the rewrite path,
 * rm_base_reset (selftests/progs/baseline.bpf.c) zeroes the label and tail-calls the
 * program under test; "reset -> parse-only tc" is measured the same way, and
 * the difference of the two is the cost of hashing and writing.
 *
 * Usage: bench_flowlabel [BATCHES [REPEAT]]   (default 21 x 500000, batches at most 101)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowlabel/flowlabel.h"
#include "flowlabel.skel.h"
#include "selftests/progs/baseline.skel.h"
#include "frames.h"

static int batches = 21, repeat = 500000;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#define MAX_CASES   12
#define MAX_BATCHES 101

/* One figure: prog_fd on frame; next_fd >= 0: rm_base_reset tail-calls it. */
struct bench_case {
	const char *name;
	int prog_fd, next_fd;
	const uint8_t *frame;
	size_t len;
};

static double ns[MAX_CASES][MAX_BATCHES], median[MAX_CASES];

static int set_next(struct baseline *b, int fd)
{
	__u32 k = 0;

	return bpf_map_update_elem(bpf_map__fd(b->maps.bench_next), &k, &fd, BPF_ANY);
}

/*
 * Batches interleaved over the cases (case 0, 1, ..., case 0, 1, ...), so
 * that frequency changes and noise from other work hit every case alike.
 */
static int run_cases(struct baseline *b, struct bench_case *c, int n)
{
	uint8_t out[512];

	for (int i = 0; i < batches; i++) {
		for (int j = 0; j < n; j++) {
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = c[j].frame, .data_size_in = (uint32_t)c[j].len,
				    .data_out = out, .data_size_out = sizeof(out), .repeat = (uint32_t)repeat);

			if (c[j].next_fd >= 0 && set_next(b, c[j].next_fd))
				return -1;
			if (bpf_prog_test_run_opts(c[j].prog_fd, &o))
				return -1;
			ns[j][i] = (double)o.duration;
		}
	}
	for (int j = 0; j < n; j++) {
		qsort(ns[j], (size_t)batches, sizeof(double), cmp_double);
		median[j] = ns[j][batches / 2];
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct rm_frame_spec rc = { .opcode = 0x0a, .dqp = 0xABCDEF, .payload = 64 };
	struct rm_frame_spec ud = { .opcode = 0x64, .dqp = 0xABCDEF, .sqp = 0x123456, .payload = 64 };
	struct rm_frame_spec set = rc;
	uint8_t f_rc[256], f_ud[256], f_set[256];
	size_t l_rc, l_ud, l_set;
	struct baseline *b;
	struct flowlabel *fl[4];
	struct rm_flowlabel_opts opts[4] = {
		{ .variant = RM_FL_LITERAL },
		{ .variant = RM_FL_CRC32 },
		{ .variant = RM_FL_MPEG2, .mix = 1, .seed = 0x5eed },
		{ .variant = RM_FL_CRC32C },
	};
	char err[256];
	double xdp, tc, reset_tc, r;

	if (argc > 1)
		batches = atoi(argv[1]);
	if (argc > 2)
		repeat = atoi(argv[2]);
	if (batches < 1 || batches > MAX_BATCHES || repeat < 1) {
		fprintf(stderr, "usage: bench_flowlabel [BATCHES [REPEAT]]\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_flowlabel: needs root\n");
		return 1;
	}
	memcpy(rc.src, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
	memcpy(rc.dst, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
	memcpy(ud.src, rc.src, 16);
	memcpy(ud.dst, rc.dst, 16);
	set = rc;
	set.label = 0x12345;
	l_rc = rm_frame_build(f_rc, sizeof(f_rc), &rc);
	l_ud = rm_frame_build(f_ud, sizeof(f_ud), &ud);
	l_set = rm_frame_build(f_set, sizeof(f_set), &set);

	b = baseline__open_and_load();
	if (!b) {
		fprintf(stderr, "bench_flowlabel: cannot load baseline.bpf.o\n");
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		opts[i].direction = RM_FL_EGRESS;
		fl[i] = rm_flowlabel_open_load(&opts[i], err, sizeof(err));
		if (!fl[i]) {
			fprintf(stderr, "bench_flowlabel: %s\n", err);
			return 1;
		}
	}

	{
		int reset = bpf_program__fd(b->progs.rm_base_reset), n = 0;
		struct bench_case c[MAX_CASES] = {
			{ "parse-only XDP (baseline)", bpf_program__fd(b->progs.rm_base_xdp), -1, f_rc, l_rc },
			{ "parse-only tc", bpf_program__fd(b->progs.rm_base_tc), -1, f_rc, l_rc },
			{ "flowlabel, label already set (untouched)", bpf_program__fd(fl[0]->progs.rocemeter_fl), -1,
			  f_set, l_set },
			{ "reset -> parse-only tc (tail call)", reset, bpf_program__fd(b->progs.rm_base_tc), f_rc,
			  l_rc },
			{ "reset -> flowlabel literal, RC", reset, bpf_program__fd(fl[0]->progs.rocemeter_fl), f_rc,
			  l_rc },
			{ "reset -> flowlabel literal, UD", reset, bpf_program__fd(fl[0]->progs.rocemeter_fl), f_ud,
			  l_ud },
			{ "reset -> flowlabel crc32, RC", reset, bpf_program__fd(fl[1]->progs.rocemeter_fl), f_rc,
			  l_rc },
			{ "reset -> flowlabel crc32c, RC", reset, bpf_program__fd(fl[3]->progs.rocemeter_fl), f_rc,
			  l_rc },
			{ "reset -> flowlabel mpeg2+mix+seed, RC", reset, bpf_program__fd(fl[2]->progs.rocemeter_fl),
			  f_rc, l_rc },
		};

		while (n < MAX_CASES && c[n].name)
			n++;
		if (run_cases(b, c, n)) {
			fprintf(stderr, "bench_flowlabel: BPF_PROG_TEST_RUN failed\n");
			return 1;
		}
		printf("flow label benchmark: BPF_PROG_TEST_RUN, median of %d interleaved batches x %d runs, "
		       "ns/packet (the kernel reports whole ns)\n",
		       batches, repeat);
		xdp = median[0];
		tc = median[1];
		reset_tc = median[3];
		for (int j = 0; j < n; j++) {
			printf("  %-44s %6.1f", c[j].name, median[j]);
			if (j == 2)
				printf("  (%.2fx parse-only XDP)", median[j] / xdp);
			if (j >= 4) {
				/* the rewrite path alone: minus reset + tail call, plus the parse it replaces */
				r = median[j] - reset_tc + tc;
				printf("  => flowlabel ~%.1f: %.2fx parse-only XDP, %.2fx tc", r, r / xdp, r / tc);
			}
			printf("\n");
		}
	}
	for (int i = 0; i < 4; i++)
		flowlabel__destroy(fl[i]);
	baseline__destroy(b);
	return 0;
}
