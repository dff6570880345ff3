// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_replay.c - `rocemeter replay`: parse the options, run the offline
 * meter (replay.h) over the capture files, print the reports (text or JSON
 * Lines) and the statistics.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/command.h"
#include "common/config.h"
#include "common/jsonw.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/report_json.h"
#include "common/report_text.h"
#include "meter/meter.h"
#include "replay.h"

static void print_stats(FILE *f, const struct rm_replay_result *res, int json);

/* 0, or -errno once standard output has failed (stdio keeps the error). */
static int stdout_status(void)
{
	return ferror(stdout) ? -(errno ? errno : EIO) : 0;
}

static int print_json(void *arg, const struct rm_report *r)
{
	rm_report_write_json(stdout, r); /* stdio keeps the error and its errno */
	return stdout_status();
}

static int print_text(void *arg, const struct rm_report *r)
{
	rm_report_write_text(stdout, r, *(const int *)arg);
	return stdout_status();
}

/* Write the statistics to path; 0, or -1 with the reason logged. */
static int write_stats_json(const char *path, const struct rm_replay_result *res)
{
	FILE *f = fopen(path, "w");
	int e;

	if (!f) {
		rm_log_cmd(RM_LOG_ERR, "%s: %s", path, strerror(errno));
		return -1;
	}
	print_stats(f, res, 1);
	e = fflush(f) || ferror(f) ? (errno ? errno : EIO) : 0;
	if (fclose(f) && !e)
		e = errno ? errno : EIO;
	if (e) {
		rm_log_cmd(RM_LOG_ERR, "%s: %s", path, strerror(e));
		return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter replay [OPTIONS] PCAP...\n\n"
		"Run the XDP meter over capture files (pcap or pcapng, Ethernet), in the\n"
		"order given, as one stream, with the capture timestamps as arrival times\n"
		"(made non-decreasing: a frame stamped before an earlier one is metered at\n"
		"the latest time seen, counted as timestamps_backwards).\n"
		"Prints one report per line: a final report at each closure, non-final\n"
		"reports at every --report-interval boundary of capture time of the epochs\n"
		"that counted a request since their last report (epochs idle longer than\n"
		"idle_timeout_ms close first), and at the end of input a final report\n"
		"(finalEpoch) for every open epoch.\n\n"
		"Options:\n"
		"  -c, --config FILE          configuration file ([meter], [capture] and [provision])\n"
		"  -e, --encapsulation LIST   mirror encapsulations to take off, over [capture]:\n"
		"                             plain, erspan (erspan1, erspan2, erspan3), vxlan,\n"
		"                             rspan, comma separated, or auto (all); sessions no\n"
		"                             observation_point line names get derived IDs\n"
		"  -w, --window W             history width W in PSN positions, %u..%u\n"
		"                             (default %u, or the config file's)\n"
		"  -a, --provision-all        meter every RC connection seen (the operator\n"
		"                             asserts that the sequence observation profile applies)\n"
		"  -i, --report-interval MS   report boundaries every MS ms of capture time:\n"
		"                             non-final reports of the epochs that changed\n"
		"                             (default: final reports only)\n"
		"  -j, --json                 JSON Lines, keys = the Information Element names\n"
		"  -o, --ipfix-out FILE       also write the reports as an IPFIX file (the\n"
		"                             bytes one exporter session would send)\n"
		"  -s, --stats-json FILE      write the statistics as JSON to FILE\n"
		"                             (default: a summary on standard error)\n"
		"  -m, --max-contexts N       context table size (default %u)\n"
		"  -M, --max-windows N        windows in the pool for epochs whose pending\n"
		"                             positions reach more than 63 behind the highest\n"
		"                             (default: automatic, see rocemeter.conf max_windows)\n"
		"  -W, --wide                 text: every field of each report (default: a\n"
		"                             compact line)\n"
		"  -h, --help                 this text\n\n"
		"On a terminal, standard error shows the progress (frames replayed).\n\n"
		"Exit status: 0 ok, 1 a capture could not be read (no report printed) or\n"
		"an output (standard output, --ipfix-out, --stats-json) could not be\n"
		"written (the run stops at the first write error), 2 usage or\n"
		"configuration error.\n",
		RM_WINDOW_MIN, RM_WINDOW_MAX, RM_WINDOW_DEFAULT, RM_MAX_CONTEXTS_DEFAULT);
}

static void print_stats(FILE *f, const struct rm_replay_result *res, int json)
{
	const uint64_t *st = res->stats;

	if (json) {
		json_t *o = json_object();

		json_object_set_new(o, "frames_read", rm_json_u64(res->frames_read));
		json_object_set_new(o, "frames_truncated_by_capture", rm_json_u64(res->truncated));
		json_object_set_new(o, "capture_faults", rm_json_u64(res->capture_faults));
		json_object_set_new(o, "timestamps_backwards", rm_json_u64(res->timestamps_backwards));
		for (int i = 0; i < RM_STAT__COUNT; i++)
			json_object_set_new(o, rm_stat_name(i), rm_json_u64(st[i]));
		rm_json_write(f, o);
		return;
	}
	fprintf(f, "replay: %" PRIu64 " frames read\n", res->frames_read);
	if (res->truncated)
		fprintf(f, "  %-26s %" PRIu64 "\n", "truncated_by_capture", res->truncated);
	if (res->capture_faults)
		fprintf(f, "  %-26s %" PRIu64 " (every open epoch closed with captureDiscontinuity)\n",
			"capture_faults", res->capture_faults);
	if (res->timestamps_backwards)
		fprintf(f, "  %-26s %" PRIu64 " (metered at the latest time seen)\n", "timestamps_backwards",
			res->timestamps_backwards);
	for (int i = 0; i < RM_STAT__COUNT; i++)
		if (st[i])
			fprintf(f, "  %-26s %" PRIu64 "\n", rm_stat_name(i), st[i]);
}

static void print_disabled(FILE *f, const struct rm_replay_result *res)
{
	for (size_t i = 0; i < res->n_disabled; i++) {
		const struct rm_ctx_key *key = &res->disabled[i];
		char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
		int af = key->family == 6 ? AF_INET6 : AF_INET;

		inet_ntop(af, key->src, src, sizeof(src));
		inet_ntop(af, key->dst, dst, sizeof(dst));
		fprintf(f, "  disabled by a profile violation: %s > %s qp 0x%06x pkey 0x%04x\n", src, dst, key->dest_qp,
			key->pkey);
	}
}

/* The statistics and the run's last words; returns the exit status. */
static int finish(const struct rm_replay_result *res, const char *stats_json)
{
	if (res->have_stats) {
		if (stats_json) {
			if (write_stats_json(stats_json, res))
				return RM_EXIT_FAIL;
		} else {
			print_stats(stderr, res, 0);
			print_disabled(stderr, res);
		}
	}
	if (res->timestamps_backwards)
		rm_log_cmd(RM_LOG_WARNING,
			   "warning: %" PRIu64 " frames stamped before an earlier frame (up to %" PRIu64
			   " ms back) were metered at the latest time seen",
			   res->timestamps_backwards, (res->backwards_max_ns + 999999) / 1000000);
	if (res->id_exhausted)
		rm_log_cmd(RM_LOG_WARNING, "%" PRIu64 " reports not made: an ID would wrap", res->id_exhausted);
	if (res->close_err[0]) {
		rm_log_cmd(RM_LOG_ERR, "%s", res->close_err);
		return RM_EXIT_FAIL;
	}
	return RM_EXIT_OK;
}

static int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "window", required_argument, 0, 'w' },
		{ "provision-all", no_argument, 0, 'a' },
		{ "report-interval", required_argument, 0, 'i' },
		{ "json", no_argument, 0, 'j' },
		{ "ipfix-out", required_argument, 0, 'o' },
		{ "stats-json", required_argument, 0, 's' },
		{ "max-contexts", required_argument, 0, 'm' },
		{ "help", no_argument, 0, 'h' },
		{ "wide", no_argument, 0, 'W' },
		{ "max-windows", required_argument, 0, 'M' },
		{ "encapsulation", required_argument, 0, 'e' },
		{ 0 },
	};
	static struct rm_config_file cfg; /* large: static */
	struct rm_config_overrides ov;
	struct rm_replay_opts ro = { .cfg = &cfg };
	struct rm_replay_result res;
	const char *config = NULL, *stats_json = NULL, *encapsulation = NULL;
	int json = 0, opt, ret, wide = 0;
	char err[512];
	uint64_t v;

	rm_config_overrides_init(&ov);
	while ((opt = getopt_long(argc, argv, "c:w:ai:jo:s:m:M:hWe:", opts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			encapsulation = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'a':
			ov.provision_all = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'W':
			wide = 1;
			break;
		case 'o':
			ro.ipfix_out = optarg;
			break;
		case 's':
			stats_json = optarg;
			break;
		case 'w':
			if (rm_opt_uint("--window", optarg, RM_WINDOW_MIN, RM_WINDOW_MAX, &v, err, sizeof(err)))
				goto bad_value;
			ov.window = (uint32_t)v;
			break;
		case 'm':
			if (rm_opt_uint("--max-contexts", optarg, RM_MAX_CONTEXTS_MIN, RM_MAX_CONTEXTS_MAX, &v, err,
					sizeof(err)))
				goto bad_value;
			ov.max_contexts = (uint32_t)v;
			break;
		case 'M':
			if (rm_opt_uint("--max-windows", optarg, 1, RM_MAX_WINDOWS_MAX, &v, err, sizeof(err)))
				goto bad_value;
			ov.max_windows = (uint32_t)v;
			break;
		case 'i':
			/* Replay's own: [export] report_interval_ms is the daemon's. */
			if (rm_opt_uint("--report-interval", optarg, 1, RM_REPORT_INTERVAL_MS_MAX, &v, err,
					sizeof(err)))
				goto bad_value;
			ro.report_interval_ms = v;
			break;
		case 'h':
			usage(stdout);
			return RM_EXIT_OK;
		default:
			usage(stderr);
			return RM_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		rm_log_cmd(RM_LOG_ERR, "no capture file given");
		usage(stderr);
		return RM_EXIT_USAGE;
	}

	rm_config_defaults(&cfg);
	if (config && rm_config_load(config, &cfg, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	rm_config_apply_overrides(&cfg, &ov);
	if (encapsulation && rm_capture_override(&cfg.capture, encapsulation, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "--encapsulation %s: %s", encapsulation, err);
		return RM_EXIT_USAGE;
	}
	if (!cfg.meter.provision_all && cfg.n_provision == 0)
		rm_log_cmd(RM_LOG_WARNING, "warning: nothing is provisioned (use --provision-all or a "
					   "[provision] section); no connection will be metered");

	ro.print = json ? print_json : print_text; /* --ipfix-out writes them too, it does not replace them */
	ro.print_name = "standard output";
	ro.print_arg = &wide;
	ro.progress = isatty(STDERR_FILENO);
	if (rm_replay_run(&ro, argv + optind, argc - optind, &res, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		ret = RM_EXIT_FAIL;
	} else {
		/* What is still buffered may fail too: the run is not done until
		 * it is written. */
		if (ro.print && (fflush(stdout) || ferror(stdout))) {
			rm_log_cmd(RM_LOG_ERR, "standard output: %s", strerror(errno ? errno : EIO));
			ret = RM_EXIT_FAIL;
		} else {
			ret = finish(&res, stats_json);
		}
	}
	fflush(stdout);
	rm_replay_result_free(&res);
	return ret;

bad_value:
	rm_log_cmd(RM_LOG_ERR, "%s", err);
	return RM_EXIT_USAGE;
}

RM_COMMAND(replay, 40, "run the meter over capture files (pcap, pcapng) offline", cmd_replay);
