// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_attach.c - `rocemeter attach`: parse the options, then either attach
 * the flow-label program alone, or run the meter daemon (daemon.h) in the
 * foreground until SIGINT/SIGTERM; SIGHUP reloads the configuration;
 * SIGUSR1 and SIGUSR2 are ignored. The five are blocked from the first
 * instruction until their handlers exist and the daemon has started, then
 * acted on: none can kill the daemon while it starts or leave pins behind.
 */
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/caps.h"
#include "common/command.h"
#include "common/signals.h"
#include "common/config.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/paths.h"
#include "common/tls.h"
#include "daemon.h"
#include "flowlabel/flowlabel.h"

static volatile sig_atomic_t stop_requested, reload_requested;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter attach IFACE [OPTIONS]\n\n"
		"Load the XDP meter, attach it to IFACE, pin its maps and program under\n"
		"/sys/fs/bpf/rocemeter/NETNS/IFINDEX/ and stay in the foreground: drain epoch events,\n"
		"make periodic and final reports, and export them ([export] in the config\n"
		"file) or print them. SIGHUP reloads the configuration; SIGINT/SIGTERM close\n"
		"every open epoch with a final report, flush the export and detach; SIGUSR1\n"
		"and SIGUSR2 are ignored. Signals that arrive while it starts are acted on\n"
		"once it runs.\n\n"
		"Options:\n"
		"  -c, --config FILE        configuration file (see README, \"Configuration\")\n"
		"  -M, --mode MODE          XDP mode: native (default) or generic\n"
		"  -m, --mirror             drop frames after metering (a dedicated mirror/TAP port)\n"
		"  -w, --window W           W for new epochs, %u..%u (default %u, overrides the\n"
		"                           config)\n"
		"  -a, --provision-all      meter every RC connection seen (operator assertion)\n"
		"  -f, --flowlabel DIR      also attach the IPv6 Flow Label program (ingress|egress)\n"
		"  -H, --hash VARIANT       flow-label hash: literal (default), crc32, crc32c, mpeg2\n"
		"  -F, --flowlabel-only     attach only the flow-label program and return\n"
		"  -C, --census             also count the RoCEv2 connections at tc ingress\n"
		"                           (rocemeter status IFACE --connections shows them as\n"
		"                           [provision] lines; [meter] census; not with --mirror)\n"
		"  -i, --report-interval MS every MS ms, non-final reports of the open epochs that\n"
		"                           counted a request since their last report\n"
		"                           (default %u, or [export] report_interval_ms; 0: finals only)\n"
		"  -j, --json               print reports as JSON Lines when not exporting\n"
		"  -W, --wide               text reports: every field (default: a compact line)\n"
		"  -k, --keep-pins          leave the map pins in place on exit\n"
		"  -R, --replace-stale      remove pins left by a crashed attachment (no XDP\n"
		"                           program of them is attached, no daemon holds them)\n"
		"                           instead of refusing; a live meter is never replaced\n"
		"      --metrics ADDR:PORT  serve Prometheus metrics on http://ADDR:PORT/metrics\n"
		"                           ([meter] metrics; default off; PORT 0: any free port)\n"
		"  -L, --log-level LEVEL    err, warning, notice (default), info or debug (debug\n"
		"                           also shows the verifier's log of a refused program)\n"
		"  -h, --help               this text\n\n"
		"Inspect while running: rocemeter status IFACE (it names the pin directory\n"
		"/sys/fs/bpf/rocemeter/NETNS/IFINDEX/), or\n"
		"  bpftool map dump pinned /sys/fs/bpf/rocemeter/NETNS/IFINDEX/contexts\n",
		RM_WINDOW_MIN, RM_WINDOW_MAX, RM_WINDOW_DEFAULT, RM_REPORT_INTERVAL_MS_DEFAULT);
}

/* The daemon in the foreground until a signal stops it; sigs are blocked (cmd_attach). */
static int run_daemon(const struct rm_daemon_opts *o, const sigset_t *sigs)
{
	struct rm_daemon *d;
	struct sigaction sa;
	char err[1024];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the wait returns at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);

	/* Before anything is made: a missing capability is named, not left to a verifier dump. */
	if (rm_caps_check("attach", RM_CAPS_METER, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_NOPERM;
	}
	d = rm_daemon_start(o, err, sizeof(err));
	if (!d) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_FAIL;
	}
	/* Started (pins made, READY=1 sent): what arrived meanwhile is acted on now. */
	sigprocmask(SIG_UNBLOCK, sigs, NULL);
	while (!stop_requested) {
		unsigned int flags = 0;
		int r = rm_daemon_wait(d, 100);

		if (r < 0 && r != -EINTR)
			break; /* the ring buffer failed: stop as on SIGTERM */
		if (reload_requested) {
			reload_requested = 0;
			flags |= RM_DAEMON_RELOAD;
		}
		if (rm_daemon_step(d, flags) < 0) {
			rm_daemon_stop(d, 0);
			return RM_EXIT_FAIL;
		}
	}
	rm_daemon_stop(d, 1);
	return RM_EXIT_OK;
}

static int cmd_attach(int argc, char **argv)
{
	enum { O_METRICS = 256 };
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },  { "mode", required_argument, 0, 'M' },
		{ "mirror", no_argument, 0, 'm' },	  { "window", required_argument, 0, 'w' },
		{ "provision-all", no_argument, 0, 'a' }, { "flowlabel", required_argument, 0, 'f' },
		{ "hash", required_argument, 0, 'H' },	  { "flowlabel-only", no_argument, 0, 'F' },
		{ "json", no_argument, 0, 'j' },	  { "keep-pins", no_argument, 0, 'k' },
		{ "report-interval", required_argument, 0, 'i' }, { "replace-stale", no_argument, 0, 'R' },
		{ "log-level", required_argument, 0, 'L' },	  { "help", no_argument, 0, 'h' },
		{ "metrics", required_argument, 0, O_METRICS }, { "wide", no_argument, 0, 'W' },
		{ "census", no_argument, 0, 'C' },
		{ 0 },
	};
	static struct rm_config_file cfg; /* large: static */
	struct rm_daemon_opts o;
	struct rm_flowlabel_opts flo = { .variant = 0 };
	const char *fl_dir = NULL, *fl_hash = NULL, *mode = "native";
	int opt, fl_only = 0;
	char err[1024];
	uint64_t v;
	enum rm_log_level level;
	sigset_t sigs;

	rm_signals_block(&sigs); /* first: see the file comment */
	memset(&o, 0, sizeof(o));
	rm_config_overrides_init(&o.overrides);
	while ((opt = getopt_long(argc, argv, "c:M:mw:af:H:Fjki:RL:hWC", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': o.config_path = optarg; break;
		case 'M': mode = optarg; break;
		case 'm': o.mirror = 1; break;
		case 'a': o.overrides.provision_all = 1; break;
		case 'f': fl_dir = optarg; break;
		case 'H': fl_hash = optarg; break;
		case 'F': fl_only = 1; break;
		case 'j': o.json = 1; break;
		case 'k': o.keep_pins = 1; break;
		case 'R': o.replace_stale = 1; break;
		case 'w':
			if (rm_opt_uint("--window", optarg, RM_WINDOW_MIN, RM_WINDOW_MAX, &v, err, sizeof(err))) {
				rm_log_cmd(RM_LOG_ERR, "%s", err);
				return RM_EXIT_USAGE;
			}
			o.overrides.window = (uint32_t)v;
			break;
		case 'i':
			if (rm_opt_uint("--report-interval", optarg, 0, RM_REPORT_INTERVAL_MS_MAX, &v, err,
					sizeof(err))) {
				rm_log_cmd(RM_LOG_ERR, "%s", err);
				return RM_EXIT_USAGE;
			}
			o.overrides.has_report_interval = 1;
			o.overrides.report_interval_ms = v;
			break;
		case O_METRICS: o.metrics = optarg; break;
		case 'W': o.wide = 1; break;
		case 'L':
			if (rm_log_level_from_name(optarg, &level)) {
				rm_log_cmd(RM_LOG_ERR, "--log-level: '%s' is not err, warning, notice, info or debug",
					   optarg);
				return RM_EXIT_USAGE;
			}
			rm_log_set_level(level);
			break;
		case 'C': o.census = 1; break;
		case 'h': usage(stdout); return RM_EXIT_OK;
		default: usage(stderr); return RM_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		rm_log_cmd(RM_LOG_ERR, "give exactly one interface");
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	o.ifname = argv[optind];
	if (!rm_ifname_valid(o.ifname)) {
		rm_log_cmd(RM_LOG_ERR, "'%s' is not a valid interface name", o.ifname);
		return RM_EXIT_USAGE;
	}
	if (!if_nametoindex(o.ifname)) {
		rm_log_cmd(RM_LOG_ERR, "no interface '%s'", o.ifname);
		return RM_EXIT_USAGE;
	}
	rm_log_set_field("IFACE", o.ifname); /* every journal entry of this daemon */
	if (strcmp(mode, "native") && strcmp(mode, "generic")) {
		rm_log_cmd(RM_LOG_ERR, "--mode: '%s' is not native or generic", mode);
		return RM_EXIT_USAGE;
	}
	o.generic = !strcmp(mode, "generic");
	if (fl_dir) {
		flo.direction = rm_flowlabel_direction_from_name(fl_dir);
		if (flo.direction < 0) {
			rm_log_cmd(RM_LOG_ERR, "--flowlabel: '%s' is not ingress or egress", fl_dir);
			return RM_EXIT_USAGE;
		}
		if (fl_hash) {
			int variant = rm_flowlabel_variant_from_name(fl_hash);

			if (variant < 0) {
				rm_log_cmd(RM_LOG_ERR, "--hash: unknown variant '%s'", fl_hash);
				return RM_EXIT_USAGE;
			}
			flo.variant = (uint32_t)variant;
		}
		o.flowlabel = &flo;
	} else if (fl_only || fl_hash) {
		rm_log_cmd(RM_LOG_ERR, "--flowlabel-only and --hash need --flowlabel ingress|egress");
		return RM_EXIT_USAGE;
	}
	if (fl_only) {
		if (rm_flowlabel_attach(o.ifname, &flo, err, sizeof(err))) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_FAIL;
		}
		printf("flow-label program attached to %s (%s)\n", o.ifname, fl_dir);
		return RM_EXIT_OK;
	}

	rm_config_defaults(&cfg);
	if (o.config_path && rm_config_load(o.config_path, &cfg, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	rm_config_apply_overrides(&cfg, &o.overrides);
	/* A TLS setting that cannot work is a configuration error (exit 2, no restart), not a runtime one. */
	if (cfg.export.enabled && !cfg.export.tls.plain_tcp) {
		SSL_CTX *ctx = rm_tls_client_ctx(&cfg.export.tls, err, sizeof(err));

		if (!ctx) {
			rm_log_cmd(RM_LOG_ERR, "%s: [export] %s", o.config_path, err);
			return RM_EXIT_USAGE;
		}
		SSL_CTX_free(ctx);
	}
	o.census |= cfg.meter.census;
	if (o.census && o.mirror) {
		/* tc ingress runs after XDP, which drops every frame in mirror mode. */
		rm_log_cmd(RM_LOG_ERR, "--census (or census = yes) counts at tc ingress, after XDP: with --mirror it "
				       "would see no frame");
		return RM_EXIT_USAGE;
	}
	o.cfg = &cfg;
	return run_daemon(&o, &sigs);
}

RM_COMMAND(attach, 10, "attach the meter (XDP) and/or the flow-label program (tc) to an interface", cmd_attach);
