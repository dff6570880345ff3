// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_replay.c - `rocemeter replay`: parse the options, run the offline
 * meter (replay.h) over the capture files, print the reports (text or JSON
 * Lines) and the statistics.
 */
#include <arpa/inet.h>
#include <errno.h>
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
#include "common/params.h"
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

/* What the command line says. */
struct replay_args {
	const char *config, *stats_json, *encapsulation;
	int json, wide;
	struct rm_config_overrides ov;
	struct rm_replay_opts ro;
};

#define R struct replay_args
static const struct rm_opt replay_opts[] = {
	RM_OPT("config", 'c', "FILE", RM_OPT_ARG, "configuration file ([meter], [capture] and [provision])",
	       RM_OPT_AT(R, config)),
	RM_OPT("encapsulation", 'e', "LIST", RM_OPT_ARG,
	       "mirror encapsulations to take off, over [capture]: plain, erspan (erspan1, erspan2, erspan3), vxlan, "
	       "rspan, comma separated, or auto (all); sessions no observation_point line names get derived IDs",
	       RM_OPT_AT(R, encapsulation)),
	RM_OPT("window", 'w', "W", RM_OPT_UINT,
	       "history width W in PSN positions, %llu..%llu (default %llu, or the config file's)",
	       RM_OPT_AT(R, ov.window), .lo = RM_WINDOW_MIN, .hi = RM_WINDOW_MAX,
	       .hv = { RM_WINDOW_MIN, RM_WINDOW_MAX, RM_WINDOW_DEFAULT }),
	RM_OPT("provision-all", 'a', NULL, RM_OPT_FLAG,
	       "meter every RC connection seen (the operator asserts that the sequence observation profile applies)",
	       RM_OPT_AT(R, ov.provision_all)),
	/* Replay's own: [export] report_interval_ms is the daemon's. */
	RM_OPT("report-interval", 'i', "MS", RM_OPT_UINT,
	       "report boundaries every MS ms of capture time: non-final reports of the epochs that changed "
	       "(default: final reports only)",
	       RM_OPT_AT(R, ro.report_interval_ms), .lo = 1, .hi = RM_REPORT_INTERVAL_MS_MAX),
	RM_OPT("json", 'j', NULL, RM_OPT_FLAG, "JSON Lines, keys = the Information Element names", RM_OPT_AT(R, json)),
	RM_OPT("ipfix-out", 'o', "FILE", RM_OPT_ARG,
	       "also write the reports as an IPFIX file (the bytes one exporter session would send)",
	       RM_OPT_AT(R, ro.ipfix_out)),
	RM_OPT("stats-json", 's', "FILE", RM_OPT_ARG,
	       "write the statistics as JSON to FILE (default: a summary on standard error)", RM_OPT_AT(R, stats_json)),
	RM_OPT("max-contexts", 'm', "N", RM_OPT_UINT, "context table size (default %llu)",
	       RM_OPT_AT(R, ov.max_contexts), .lo = RM_MAX_CONTEXTS_MIN, .hi = RM_MAX_CONTEXTS_MAX,
	       .hv = { RM_MAX_CONTEXTS_DEFAULT }),
	RM_OPT("max-windows", 'M', "N", RM_OPT_UINT,
	       "windows in the pool for epochs whose pending positions reach more than 63 behind the highest "
	       "(default: automatic, see rocemeter.conf max_windows)",
	       RM_OPT_AT(R, ov.max_windows), .lo = 1, .hi = RM_MAX_WINDOWS_MAX),
	RM_OPT("wide", 'W', NULL, RM_OPT_FLAG, "text: every field of each report (default: a compact line)",
	       RM_OPT_AT(R, wide)),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};
#undef R

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter replay [OPTIONS] PCAP...\n\n"
		   "Run the XDP meter over capture files (pcap or pcapng, Ethernet), in the\n"
		   "order given, as one stream, with the capture timestamps as arrival times\n"
		   "(made non-decreasing: a frame stamped before an earlier one is metered at\n"
		   "the latest time seen, counted as timestamps_backwards).\n"
		   "Prints one report per line: a final report at each closure, non-final\n"
		   "reports at every --report-interval boundary of capture time of the epochs\n"
		   "that counted a request since their last report (epochs idle longer than\n"
		   "idle_timeout_ms close first), and at the end of input a final report\n"
		   "(finalEpoch) for every open epoch.\n\n"
		   "Options:\n");
	rm_opts_help(f, replay_opts, 29, 6);
	fprintf(f, "\n"
		   "On a terminal, standard error shows the progress (frames replayed).\n\n"
		   "Exit status: 0 ok, 1 a capture could not be read (no report printed) or\n"
		   "an output (standard output, --ipfix-out, --stats-json) could not be\n"
		   "written (the run stops at the first write error), 2 usage or\n"
		   "configuration error.\n");
}

static const struct rm_cmd_opts replay_cmd = { .t = replay_opts, .usage = usage, .usage_on_error = 1 };

static void print_stats(FILE *f, const struct rm_replay_result *res, int json)
{
	const uint64_t *stats = res->stats;

	if (json) {
		json_t *o = json_object();

		json_object_set_new(o, "frames_read", rm_json_u64(res->frames_read));
		json_object_set_new(o, "frames_truncated_by_capture", rm_json_u64(res->truncated));
		json_object_set_new(o, "capture_faults", rm_json_u64(res->capture_faults));
		json_object_set_new(o, "timestamps_backwards", rm_json_u64(res->timestamps_backwards));
		for (int i = 0; i < RM_STAT__COUNT; i++)
			json_object_set_new(o, rm_stat_name(i), rm_json_u64(stats[i]));
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
		if (stats[i])
			fprintf(f, "  %-26s %" PRIu64 "\n", rm_stat_name(i), stats[i]);
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
	static struct rm_config_file cfg; /* large: static */
	struct replay_args a = { .ro.cfg = &cfg };
	struct rm_replay_opts *ro = &a.ro;
	struct rm_replay_result res;
	char err[512];
	int ret;

	rm_config_overrides_init(&a.ov);
	ret = rm_opts_parse(&replay_cmd, argc, argv, &a);
	if (ret >= 0)
		return ret;
	if (optind >= argc) {
		rm_log_cmd(RM_LOG_ERR, "no capture file given");
		usage(stderr);
		return RM_EXIT_USAGE;
	}

	rm_config_defaults(&cfg);
	if (a.config && rm_config_load(a.config, &cfg, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	rm_config_apply_overrides(&cfg, &a.ov);
	if (a.encapsulation && rm_capture_override(&cfg.capture, a.encapsulation, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "--encapsulation %s: %s", a.encapsulation, err);
		return RM_EXIT_USAGE;
	}
	if (!cfg.meter.provision_all && cfg.n_provision == 0)
		rm_log_cmd(RM_LOG_WARNING, "warning: nothing is provisioned (use --provision-all or a "
					   "[provision] section); no connection will be metered");

	ro->print = a.json ? print_json : print_text; /* --ipfix-out writes them too, it does not replace them */
	ro->print_name = "standard output";
	ro->print_arg = &a.wide;
	ro->progress = isatty(STDERR_FILENO);
	if (rm_replay_run(ro, argv + optind, argc - optind, &res, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		ret = RM_EXIT_FAIL;
	} else {
		/* What is still buffered may fail too: the run is not done until
		 * it is written. */
		if (ro->print && (fflush(stdout) || ferror(stdout))) {
			rm_log_cmd(RM_LOG_ERR, "standard output: %s", strerror(errno ? errno : EIO));
			ret = RM_EXIT_FAIL;
		} else {
			ret = finish(&res, a.stats_json);
		}
	}
	fflush(stdout);
	rm_replay_result_free(&res);
	return ret;
}

RM_COMMAND(replay, 40, "run the meter over capture files (pcap, pcapng) offline", cmd_replay);
