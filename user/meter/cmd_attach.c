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
#include "common/params.h"
#include "common/paths.h"
#include "common/tls.h"
#include "daemon.h"
#include "flowlabel/flowlabel.h"

/* stop_requested: the signal that asked for the stop (SIGTERM, SIGINT), 0 while none did. */
static volatile sig_atomic_t stop_requested, reload_requested;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = sig;
}

/* What the command line says: the daemon's options and what attach checks first. */
struct attach_args {
	struct rm_daemon_opts o;
	const char *mode, *fl_dir, *fl_hash;
	int fl_only;
};

enum { O_REPORT_INTERVAL = 1 };

#define A struct attach_args
static const struct rm_opt attach_opts[] = {
	RM_OPT("config", 'c', "FILE", RM_OPT_ARG, "configuration file (see README, \"Configuration\")",
	       RM_OPT_AT(A, o.config_path)),
	RM_OPT("mode", 'M', "MODE", RM_OPT_ARG, "XDP mode: native (default) or generic", RM_OPT_AT(A, mode)),
	RM_OPT("mirror", 'm', NULL, RM_OPT_FLAG, "drop frames after metering (a dedicated mirror/TAP port)",
	       RM_OPT_AT(A, o.mirror)),
	RM_OPT("window", 'w', "W", RM_OPT_UINT, "W for new epochs, %llu..%llu (default %llu, overrides the config)",
	       RM_OPT_AT(A, o.overrides.window), .lo = RM_WINDOW_MIN, .hi = RM_WINDOW_MAX,
	       .hv = { RM_WINDOW_MIN, RM_WINDOW_MAX, RM_WINDOW_DEFAULT }),
	RM_OPT("provision-all", 'a', NULL, RM_OPT_FLAG, "meter every RC connection seen (operator assertion)",
	       RM_OPT_AT(A, o.overrides.provision_all)),
	RM_OPT("flowlabel", 'f', "DIR", RM_OPT_ARG, "also attach the IPv6 Flow Label program (ingress|egress)",
	       RM_OPT_AT(A, fl_dir)),
	RM_OPT("hash", 'H', "VARIANT", RM_OPT_ARG, "flow-label hash: literal (default), crc32, crc32c, mpeg2",
	       RM_OPT_AT(A, fl_hash)),
	RM_OPT("flowlabel-only", 'F', NULL, RM_OPT_FLAG, "attach only the flow-label program and return",
	       RM_OPT_AT(A, fl_only)),
	RM_OPT("census", 'C', NULL, RM_OPT_FLAG,
	       "also count the RoCEv2 connections at tc ingress (rocemeter status IFACE --connections shows them as "
	       "[provision] lines; [meter] census; not with --mirror)",
	       RM_OPT_AT(A, o.census)),
	RM_OPT("report-interval", 'i', "MS", RM_OPT_CALL,
	       "every MS ms, non-final reports of the open epochs that counted a request since their last report "
	       "(default %llu, or [export] report_interval_ms; 0: finals only)",
	       .id = O_REPORT_INTERVAL, .hv = { RM_REPORT_INTERVAL_MS_DEFAULT }),
	RM_OPT("json", 'j', NULL, RM_OPT_FLAG, "print reports as JSON Lines when not exporting", RM_OPT_AT(A, o.json)),
	RM_OPT("wide", 'W', NULL, RM_OPT_FLAG, "text reports: every field (default: a compact line)",
	       RM_OPT_AT(A, o.wide)),
	RM_OPT("keep-pins", 'k', NULL, RM_OPT_FLAG, "leave the map pins in place on exit", RM_OPT_AT(A, o.keep_pins)),
	RM_OPT("replace-stale", 'R', NULL, RM_OPT_FLAG,
	       "remove pins left by a crashed attachment (no XDP program of them is attached, no daemon holds them) "
	       "instead of refusing; a live meter is never replaced",
	       RM_OPT_AT(A, o.replace_stale)),
	RM_OPT("metrics", 0, "ADDR:PORT", RM_OPT_ARG,
	       "serve Prometheus metrics on http://ADDR:PORT/metrics ([meter] metrics; default off; PORT 0: any free "
	       "port)",
	       RM_OPT_AT(A, o.metrics)),
	RM_OPT("log-level", 'L', "LEVEL", RM_OPT_LOG_LEVEL,
	       "err, warning, notice (default), info or debug (debug also shows the verifier's log of a refused "
	       "program)"),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};
#undef A

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter attach IFACE [OPTIONS]\n\n"
		   "Load the XDP meter, attach it to IFACE, pin its maps and program under\n"
		   "/sys/fs/bpf/rocemeter/NETNS/IFINDEX/ and stay in the foreground: drain epoch events,\n"
		   "make periodic and final reports, and export them ([export] in the config\n"
		   "file) or print them. SIGHUP reloads the configuration; SIGINT/SIGTERM close\n"
		   "every open epoch with a final report, flush the export and detach; SIGUSR1\n"
		   "and SIGUSR2 are ignored. Signals that arrive while it starts are acted on\n"
		   "once it runs.\n\n"
		   "Options:\n");
	rm_opts_help(f, attach_opts, 27, 6);
	fprintf(f, "\n"
		   "Inspect while running: rocemeter status IFACE (it names the pin directory\n"
		   "/sys/fs/bpf/rocemeter/NETNS/IFINDEX/), or\n"
		   "  bpftool map dump pinned /sys/fs/bpf/rocemeter/NETNS/IFINDEX/contexts\n");
}

/* --report-interval MS: given (0 too) over [export] report_interval_ms. */
static int attach_option(void *target, const struct rm_opt *e, const char *value)
{
	struct attach_args *a = target;
	char err[256];
	uint64_t v;

	if (rm_opt_uint("--report-interval", value, 0, RM_REPORT_INTERVAL_MS_MAX, &v, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	a->o.overrides.has_report_interval = 1;
	a->o.overrides.report_interval_ms = v;
	return 0;
}

static const struct rm_cmd_opts attach_cmd = {
	.t = attach_opts, .usage = usage, .usage_on_error = 1, .call = attach_option
};

/* The daemon in the foreground until a signal stops it; sigs are blocked (cmd_attach). */
static int run_daemon(const struct rm_daemon_opts *o, const sigset_t *sigs)
{
	struct rm_daemon *d;
	char err[1024];

	rm_signals_handle(on_signal, RM_SIGNALS_HUP | RM_SIGNALS_IGNORE_REST); /* the wait returns at once */

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
	if (stop_requested)
		rm_log(RM_LOG_NOTICE, "%s received: stopping", stop_requested == SIGINT ? "SIGINT" : "SIGTERM");
	rm_daemon_stop(d, 1);
	return RM_EXIT_OK;
}

static int cmd_attach(int argc, char **argv)
{
	static struct rm_config_file cfg; /* large: static */
	struct attach_args args = { .mode = "native" };
	struct rm_daemon_opts *op = &args.o;
	struct rm_flowlabel_opts flo = { .variant = 0 };
	char err[1024];
	sigset_t sigs;
	int rc;

	rm_signals_block(&sigs); /* first: see the file comment */
	rm_config_overrides_init(&args.o.overrides);
	rc = rm_opts_parse(&attach_cmd, argc, argv, &args);
	if (rc >= 0)
		return rc;
	if (optind != argc - 1) {
		rm_log_cmd(RM_LOG_ERR, "give exactly one interface");
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	op->ifname = argv[optind];
	if (!rm_ifname_valid(op->ifname)) {
		rm_log_cmd(RM_LOG_ERR, "'%s' is not a valid interface name", op->ifname);
		return RM_EXIT_USAGE;
	}
	if (!if_nametoindex(op->ifname)) {
		rm_log_cmd(RM_LOG_ERR, "no interface '%s'", op->ifname);
		return RM_EXIT_USAGE;
	}
	rm_log_set_field("IFACE", op->ifname); /* every journal entry of this daemon */
	if (strcmp(args.mode, "native") && strcmp(args.mode, "generic")) {
		rm_log_cmd(RM_LOG_ERR, "--mode: '%s' is not native or generic", args.mode);
		return RM_EXIT_USAGE;
	}
	op->generic = !strcmp(args.mode, "generic");
	if (args.fl_dir) {
		flo.direction = rm_flowlabel_direction_from_name(args.fl_dir);
		if (flo.direction < 0) {
			rm_log_cmd(RM_LOG_ERR, "--flowlabel: '%s' is not ingress or egress", args.fl_dir);
			return RM_EXIT_USAGE;
		}
		if (args.fl_hash) {
			int variant = rm_flowlabel_variant_from_name(args.fl_hash);

			if (variant < 0) {
				rm_log_cmd(RM_LOG_ERR, "--hash: unknown variant '%s'", args.fl_hash);
				return RM_EXIT_USAGE;
			}
			flo.variant = (uint32_t)variant;
		}
		op->flowlabel = &flo;
	} else if (args.fl_only || args.fl_hash) {
		rm_log_cmd(RM_LOG_ERR, "--flowlabel-only and --hash need --flowlabel ingress|egress");
		return RM_EXIT_USAGE;
	}
	if (args.fl_only) {
		if (rm_flowlabel_attach(op->ifname, &flo, err, sizeof(err))) {
			rm_log_cmd(RM_LOG_ERR, "%s", err);
			return RM_EXIT_FAIL;
		}
		printf("flow-label program attached to %s (%s)\n", op->ifname, args.fl_dir);
		return RM_EXIT_OK;
	}

	rm_config_defaults(&cfg);
	if (op->config_path && rm_config_load(op->config_path, &cfg, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	rm_config_apply_overrides(&cfg, &op->overrides);
	/* A TLS setting that cannot work is a configuration error (exit 2, no restart), not a runtime one. */
	if (cfg.export.enabled && !cfg.export.tls.plain_tcp) {
		SSL_CTX *ctx = rm_tls_client_ctx(&cfg.export.tls, err, sizeof(err));

		if (!ctx) {
			rm_log_cmd(RM_LOG_ERR, "%s: [export] %s", op->config_path, err);
			return RM_EXIT_USAGE;
		}
		SSL_CTX_free(ctx);
	}
	op->census |= cfg.meter.census;
	if (op->census && op->mirror) {
		/* tc ingress runs after XDP, which drops every frame in mirror mode. */
		rm_log_cmd(RM_LOG_ERR, "--census (or census = yes) counts at tc ingress, after XDP: with --mirror it "
				       "would see no frame");
		return RM_EXIT_USAGE;
	}
	op->cfg = &cfg;
	return run_daemon(op, &sigs);
}

RM_COMMAND(attach, 10, "attach the meter (XDP) and/or the flow-label program (tc) to an interface", cmd_attach);
