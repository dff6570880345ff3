// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * replay.c - `rocemeter replay`: run the real XDP meter over capture files
 * (libpcap: pcap and pcapng, Ethernet link type) with BPF_PROG_TEST_RUN, in
 * file order, with the capture's timestamps as arrival times, and print the
 * reports one Transport Session would carry.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "common/command.h"
#include "common/config.h"
#include "export/ipfix.h"
#include "meter/meter.h"
#include "common/report_json.h"
#include "common/report_text.h"
#include "meter/reporter.h"

struct replay_out {
	int json;
	FILE *ipfix;                /* --ipfix-out */
	struct rm_ipfix_encoder enc;
	struct rm_report *pending;  /* reports not yet written to the IPFIX file */
	size_t n_pending, cap_pending;
	uint32_t export_time;       /* capture time of the last frame, UNIX s */
	int templates_written;
	int failed;
};

/* Write the pending reports (after the Templates, first time) to the IPFIX file. */
static int ipfix_flush(struct replay_out *o)
{
	static uint8_t buf[65535];
	size_t done = 0;

	if (!o->templates_written) {
		size_t len = rm_ipfix_templates_msg(&o->enc, o->export_time, buf, sizeof(buf));

		if (!len || fwrite(buf, 1, len, o->ipfix) != len) {
			o->failed = 1;
			return -1;
		}
		o->templates_written = 1;
	}
	while (done < o->n_pending) {
		size_t used = 0, len = rm_ipfix_data_msg(&o->enc, o->export_time, o->pending + done,
							 o->n_pending - done, &used, buf, sizeof(buf));

		if (!len || !used || fwrite(buf, 1, len, o->ipfix) != len) {
			o->failed = 1;
			return -1;
		}
		done += used;
	}
	o->n_pending = 0;
	return 0;
}

static int sink(void *arg, const struct rm_report *r)
{
	struct replay_out *o = arg;

	if (o->json)
		rm_report_write_json(stdout, r);
	else if (!o->ipfix)
		rm_report_write_text(stdout, r);
	if (o->ipfix) {
		if (o->n_pending == o->cap_pending) {
			size_t cap = o->cap_pending ? o->cap_pending * 2 : 256;
			struct rm_report *t = realloc(o->pending, cap * sizeof(*t));

			if (!t) {
				o->failed = 1;
				return -1;
			}
			o->pending = t;
			o->cap_pending = cap;
		}
		o->pending[o->n_pending++] = *r;
		if (o->n_pending >= 512)
			ipfix_flush(o);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter replay [OPTIONS] PCAP...\n\n"
		"Run the XDP meter over capture files (pcap or pcapng, Ethernet), in the\n"
		"order given, as one stream, with the capture timestamps as arrival times.\n"
		"Prints one report per line: a final report at each closure, non-final\n"
		"reports every --report-interval of capture time, and at the end of input a\n"
		"final report (finalEpoch) for every open epoch.\n\n"
		"Options:\n"
		"  -c, --config FILE          configuration file ([meter] and [provision])\n"
		"  -w, --window W             history width W in PSN positions, 1..4194304\n"
		"                             (default 1024, or the config file's)\n"
		"  -a, --provision-all        meter every RC connection seen (the operator\n"
		"                             asserts that seed 000's profile applies)\n"
		"  -i, --report-interval MS   non-final reports every MS ms of capture time\n"
		"                             (default: final reports only)\n"
		"  -j, --json                 JSON Lines, keys = the Information Element names\n"
		"  -o, --ipfix-out FILE       also write the reports as an IPFIX file (the\n"
		"                             bytes one exporter session would send)\n"
		"  -s, --stats-json FILE      write the statistics as JSON to FILE\n"
		"                             (default: a summary on standard error)\n"
		"  -m, --max-contexts N       context table size (default 65536)\n"
		"  -h, --help                 this text\n\n"
		"Exit status: 0 ok, 1 a capture could not be read (no report printed),\n"
		"2 usage or configuration error.\n");
}

static void print_stats(FILE *f, const uint64_t *st, uint64_t frames_read, uint64_t truncated, uint64_t faults,
			int json)
{
	if (json) {
		fprintf(f,
			"{\"frames_read\": %" PRIu64 ", \"frames_truncated_by_capture\": %" PRIu64
			", \"capture_faults\": %" PRIu64,
			frames_read, truncated, faults);
		for (int i = 0; i < RM_STAT__COUNT; i++)
			fprintf(f, ", \"%s\": %" PRIu64, rm_stat_name(i), st[i]);
		fprintf(f, "}\n");
		return;
	}
	fprintf(f, "replay: %" PRIu64 " frames read\n", frames_read);
	if (truncated)
		fprintf(f, "  %-26s %" PRIu64 "\n", "truncated_by_capture", truncated);
	if (faults)
		fprintf(f, "  %-26s %" PRIu64 " (every open epoch closed with captureDiscontinuity)\n", "capture_faults",
			faults);
	for (int i = 0; i < RM_STAT__COUNT; i++)
		if (st[i])
			fprintf(f, "  %-26s %" PRIu64 "\n", rm_stat_name(i), st[i]);
}

/* Connections a profile violation disabled: they may have no report at all
 * (the violating request came before any eligible one). */
static void print_disabled(FILE *f, const struct rm_meter *m)
{
	struct rm_ctx_key key, next, *prev = NULL;
	struct rm_ctx v;

	while (bpf_map_get_next_key(m->contexts_fd, prev, &next) == 0) {
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
		int af = next.family == 6 ? AF_INET6 : AF_INET;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem_flags(m->contexts_fd, &key, &v, BPF_F_LOCK) || !v.disabled)
			continue;
		inet_ntop(af, key.src, src, sizeof(src));
		inet_ntop(af, key.dst, dst, sizeof(dst));
		fprintf(f, "  disabled by a profile violation: %s > %s qp 0x%06x pkey 0x%04x\n", src, dst, key.dest_qp,
			key.pkey);
	}
}

static int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },	  { "window", required_argument, 0, 'w' },
		{ "provision-all", no_argument, 0, 'a' },	  { "report-interval", required_argument, 0, 'i' },
		{ "json", no_argument, 0, 'j' },		  { "ipfix-out", required_argument, 0, 'o' },
		{ "stats-json", required_argument, 0, 's' },	  { "max-contexts", required_argument, 0, 'm' },
		{ "help", no_argument, 0, 'h' },		  { 0 },
	};
	static struct rm_config_file cfg;
	const char *config = NULL, *ipfix_out = NULL, *stats_json = NULL;
	long long window = -1, max_ctx = -1, interval = 0;
	int provision_all = 0, opt, r, ret = RM_EXIT_FAIL;
	struct replay_out out = { 0 };
	struct rm_meter meter = { 0 };
	struct rm_reporter rep = { 0 };
	struct ring_buffer *rb = NULL;
	struct rm_capture *cap = NULL;
	struct rm_frame fr;
	char err[512];
	uint64_t st[RM_STAT__COUNT], frames = 0, frames_read = 0, truncated = 0, short_frames = 0, capture_faults = 0, next_report = 0,
		 next_idle_sweep = 0;
	char *end;

	while ((opt = getopt_long(argc, argv, "c:w:ai:jo:s:m:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'a': provision_all = 1; break;
		case 'j': out.json = 1; break;
		case 'o': ipfix_out = optarg; break;
		case 's': stats_json = optarg; break;
		case 'w':
			window = strtoll(optarg, &end, 0);
			if (*end || window < 1 || window > RM_WINDOW_MAX) {
				fprintf(stderr, "rocemeter replay: --window: '%s' is not in 1..%u\n", optarg, RM_WINDOW_MAX);
				return RM_EXIT_USAGE;
			}
			break;
		case 'm':
			max_ctx = strtoll(optarg, &end, 0);
			if (*end || max_ctx < 1 || max_ctx > 16777216) {
				fprintf(stderr, "rocemeter replay: --max-contexts: '%s' is not in 1..16777216\n", optarg);
				return RM_EXIT_USAGE;
			}
			break;
		case 'i':
			interval = strtoll(optarg, &end, 0);
			if (*end || interval < 1) {
				fprintf(stderr, "rocemeter replay: --report-interval: '%s' is not a positive number of ms\n",
					optarg);
				return RM_EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return RM_EXIT_OK;
		default: usage(stderr); return RM_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "rocemeter replay: no capture file given\n");
		usage(stderr);
		return RM_EXIT_USAGE;
	}

	rm_config_defaults(&cfg);
	if (config && rm_config_load(config, &cfg, err, sizeof(err))) {
		fprintf(stderr, "rocemeter replay: %s\n", err);
		return RM_EXIT_USAGE;
	}
	if (window > 0)
		cfg.meter.window = (uint32_t)window;
	if (max_ctx > 0)
		cfg.meter.max_contexts = (uint32_t)max_ctx;
	if (provision_all)
		cfg.meter.provision_all = 1;
	if (!cfg.meter.provision_all && cfg.n_provision == 0)
		fprintf(stderr, "rocemeter replay: warning: nothing is provisioned (use --provision-all or a "
				"[provision] section); no connection will be metered\n");

	/* Every file is checked before any report is printed. */
	if (rm_capture_validate(argv + optind, argc - optind, &frames, err, sizeof(err))) {
		fprintf(stderr, "rocemeter replay: %s\n", err);
		return RM_EXIT_FAIL;
	}

	if (rm_meter_load(&meter, &cfg.meter, 1, err, sizeof(err)) ||
	    rm_meter_provision(&meter, cfg.provision, cfg.n_provision, cfg.meter.generation_verified, err,
			       sizeof(err))) {
		fprintf(stderr, "rocemeter replay: %s\n", err);
		goto out;
	}
	if (ipfix_out) {
		out.ipfix = fopen(ipfix_out, "wb");
		if (!out.ipfix) {
			fprintf(stderr, "rocemeter replay: %s: %s\n", ipfix_out, strerror(errno));
			goto out;
		}
		rm_ipfix_init(&out.enc, cfg.export.pen, cfg.export.observation_domain, cfg.meter.namespace_vlan);
	}
	if (rm_reporter_init(&rep, &meter, cfg.meter.observation_point_id, cfg.meter.namespace_vlan,
			     cfg.meter.generation_verified, 0, sink, &out)) {
		fprintf(stderr, "rocemeter replay: out of memory\n");
		goto out;
	}
	rb = ring_buffer__new(meter.events_fd, rm_reporter_on_event, &rep, NULL);
	if (!rb) {
		fprintf(stderr, "rocemeter replay: cannot open the event ring buffer: %s\n", strerror(errno));
		goto out;
	}

	cap = rm_capture_open(argv + optind, argc - optind, err, sizeof(err));
	if (!cap) {
		fprintf(stderr, "rocemeter replay: %s\n", err);
		goto out;
	}
	while ((r = rm_capture_next(cap, &fr, err, sizeof(err))) == 1) {
		frames_read++;
		out.export_time = (uint32_t)(fr.ts_ns / 1000000000ull);
		if (interval) {
			uint64_t ms = fr.ts_ns / 1000000;

			if (!next_report)
				next_report = ms + (uint64_t)interval;
			while (ms >= next_report) {
				ring_buffer__consume(rb);
				rm_reporter_walk(&rep, RM_CTL_SNAPSHOT, 0, 0);
				next_report += (uint64_t)interval;
			}
		}
		/* Idle expiration of epochs that get no further traffic, swept
		 * once a second of capture time, as `attach` does in real time. */
		if (cfg.meter.idle_timeout_ms && fr.ts_ns >= next_idle_sweep) {
			ring_buffer__consume(rb);
			if (next_idle_sweep)
				rm_reporter_walk(&rep, RM_CTL_CLOSE_IDLE, 0,
						 fr.ts_ns - cfg.meter.idle_timeout_ms * 1000000ull);
			next_idle_sweep = fr.ts_ns + 1000000000ull;
		}
		if (fr.caplen < fr.wirelen)
			truncated++;
		/* The kernel runs XDP only on frames of at least an Ethernet
		 * header; count shorter ones as the program would. */
		if (fr.caplen < 14) {
			short_frames++;
			if (fr.caplen < fr.wirelen) {
				capture_faults++;
				ring_buffer__consume(rb);
				rm_reporter_walk(&rep, RM_CTL_CLOSE, RM_FLAG_CAPTURE_DISCONTINUITY, 0);
			}
			continue;
		}
		r = rm_meter_replay_frame(&meter, fr.data, fr.caplen, fr.wirelen, fr.ts_ns);
		if (r < 0) {
			fprintf(stderr, "rocemeter replay: frame %" PRIu64 ": BPF_PROG_TEST_RUN: %s\n", frames_read,
				strerror(-r));
			goto out;
		}
		ring_buffer__consume(rb);
		/* The capture's snap length cut the frame before it could be
		 * classified: it may have been a request of any context. That is a
		 * capture fault, not a network event (seed 000): every open epoch
		 * closes with captureDiscontinuity and metering starts afresh. */
		if (fr.caplen < fr.wirelen && (r == RM_PARSE_BAD_ETH || r == RM_PARSE_BAD_IP ||
					       r == RM_PARSE_BAD_UDP || r == RM_PARSE_BAD_BTH)) {
			capture_faults++;
			rm_reporter_walk(&rep, RM_CTL_CLOSE, RM_FLAG_CAPTURE_DISCONTINUITY, 0);
		}
	}
	if (r < 0) {
		fprintf(stderr, "rocemeter replay: %s\n", err);
		goto out;
	}
	ring_buffer__consume(rb);
	rm_reporter_walk(&rep, RM_CTL_CLOSE, 0, 0);
	if (out.ipfix && ipfix_flush(&out)) {
		fprintf(stderr, "rocemeter replay: %s: write failed\n", ipfix_out);
		goto out;
	}
	if (rm_meter_read_stats(meter.stats_fd, st) == 0) {
		st[RM_STAT_FRAMES] += short_frames;
		st[RM_STAT_MALFORMED_ETH] += short_frames;
		if (stats_json) {
			FILE *f = fopen(stats_json, "w");

			if (!f) {
				fprintf(stderr, "rocemeter replay: %s: %s\n", stats_json, strerror(errno));
				goto out;
			}
			print_stats(f, st, frames_read, truncated, capture_faults, 1);
			fclose(f);
		} else {
			print_stats(stderr, st, frames_read, truncated, capture_faults, 0);
			print_disabled(stderr, &meter);
		}
	}
	if (rep.id_exhausted)
		fprintf(stderr, "rocemeter replay: %" PRIu64 " reports not made: an ID would wrap\n", rep.id_exhausted);
	ret = out.failed ? RM_EXIT_FAIL : RM_EXIT_OK;
out:
	fflush(stdout);
	if (out.ipfix && fclose(out.ipfix) && ret == RM_EXIT_OK) {
		fprintf(stderr, "rocemeter replay: %s: %s\n", ipfix_out, strerror(errno));
		ret = RM_EXIT_FAIL;
	}
	free(out.pending);
	rm_capture_close(cap);
	ring_buffer__free(rb);
	rm_reporter_free(&rep);
	rm_meter_unload(&meter);
	return ret;
}

RM_COMMAND(replay, 40, "run the meter over capture files (pcap, pcapng) offline", cmd_replay);
