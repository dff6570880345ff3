// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach.c - `rocemeter attach` (the long-lived meter daemon) and
 * `rocemeter detach`.
 *
 * attach loads the meter, provisions it, attaches it to the interface with
 * an XDP link owned by this process (the program goes away with the
 * process), pins the maps under /sys/fs/bpf/rocemeter/IFNAME/, and then
 * drains epoch events, makes periodic and idle-expiry reports, and exports
 * them (IPFIX over TLS 1.3, user/export/export.c) or prints them. SIGHUP reloads
 * the configuration, SIGINT/SIGTERM close every open epoch with a final
 * report, flush the export and detach (DESIGN.md decision 4).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <systemd/sd-daemon.h>

#include "common/command.h"
#include "common/config.h"
#include "export/export.h"
#include "flowlabel/flowlabel.h"
#include "meter.h"
#include "meter.skel.h"
#include "observe.h"
#include "pins.h"
#include "common/report_json.h"
#include "common/report_text.h"
#include "reporter.h"

static volatile sig_atomic_t stop_requested, reload_requested;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_requested = 1;
	else
		stop_requested = 1;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Where reports go while attached. */
struct live_sink {
	int json;
	struct rm_exporter *exporter; /* NULL: print */
	uint64_t session;             /* Transport Session the reporter's IDs belong to */
	int discard;                  /* closing epochs for a new session: nothing to send them on */
	uint64_t discarded;
};

static int live_sink_fn(void *arg, const struct rm_report *r)
{
	struct live_sink *s = arg;

	if (s->discard) {
		s->discarded++;
		return -1;
	}
	if (s->exporter) /* drops are counted by the exporter */
		return rm_exporter_submit(s->exporter, s->session, r, 1) ? -1 : 0;
	if (s->json)
		rm_report_write_json(stdout, r);
	else
		rm_report_write_text(stdout, r);
	fflush(stdout);
	return 0;
}

struct daemon {
	const char *ifname;
	int ifindex;
	const char *config_path;
	struct rm_config_file cfg;
	struct rm_meter meter;
	struct rm_reporter rep;
	struct live_sink sink;
	struct ring_buffer *rb;
	struct rm_observe obs;
	uint64_t table_full_seen;
	/* Command-line overrides of the config file, applied again on reload
	 * (-1: not given). */
	long long opt_window, opt_interval;
	int opt_provision_all;
	int link_fd;
	int keep_pins;
	int flowlabel;
	int verbose;
};

static void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rocemeter: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void write_stats_file(struct daemon *d)
{
	char path[512], tmp[520];
	FILE *f;

	if (rm_run_path(d->ifname, "stats", path, sizeof(path)))
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "{\"pid\": %d, \"reports\": %" PRIu64 ", \"final_reports\": %" PRIu64
		   ", \"reports_not_made_id_exhausted\": %" PRIu64 ", \"closed_for_new_session\": %" PRIu64,
		getpid(), d->rep.reports, d->rep.final_reports, d->rep.id_exhausted, d->sink.discarded);
	if (d->sink.exporter) {
		struct rm_export_stats es;

		rm_exporter_stats(d->sink.exporter, &es);
		fprintf(f,
			", \"export\": {\"session\": %" PRIu64 ", \"sessions\": %" PRIu64 ", \"records_sent\": %" PRIu64
			", \"lost_in_flight\": %" PRIu64 ", \"messages_sent\": %" PRIu64
			", \"dropped_queue_full\": %" PRIu64 ", \"dropped_no_session\": %" PRIu64
			", \"dropped_session_lost\": %" PRIu64 ", \"reconnects\": %" PRIu64 "}",
			d->sink.session, es.sessions, es.records_sent, es.lost_in_flight, es.messages_sent,
			es.dropped_queue_full, es.dropped_no_session, es.dropped_session_lost, es.reconnects);
	}
	fprintf(f, "}\n");
	fclose(f);
	rename(tmp, path);
}

/* Close every open epoch under its lock; reports go to the current sink. */
static void close_all(struct daemon *d, uint16_t reason)
{
	ring_buffer__consume(d->rb); /* finals the datapath made come first */
	rm_reporter_walk(&d->rep, RM_CTL_CLOSE, reason, 0);
}

/*
 * Capture discontinuity (seed 000): when complete observation can no longer
 * be established, close every context that may be affected (all of them:
 * the cause cannot be attributed) with captureDiscontinuity. Metering
 * resumes with fresh state: the next request of a context starts a new
 * epoch. A detached XDP link ends the daemon (returns -1).
 */
static int check_observation(struct daemon *d)
{
	uint64_t st[RM_STAT__COUNT] = { 0 };
	char why[256];
	int bits;

	rm_meter_read_stats(d->meter.stats_fd, st);
	/* eviction = oldest: a full table refused contexts; make room (1% of the table). */
	if (d->cfg.meter.evict && st[RM_STAT_TABLE_FULL] > d->table_full_seen) {
		unsigned int n = d->cfg.meter.max_contexts / 100 ? d->cfg.meter.max_contexts / 100 : 1;

		ring_buffer__consume(d->rb);
		int e = rm_reporter_evict(&d->rep, n);

		if (e > 0)
			log_msg("context table full: evicted %d contexts (stateExhaustion)", e);
	}
	d->table_full_seen = st[RM_STAT_TABLE_FULL];
	bits = rm_observe_poll(&d->obs, st[RM_STAT_RINGBUF_DROPS]);
	if (!bits)
		return 0;
	rm_observe_describe(bits, why, sizeof(why));
	log_msg("capture discontinuity (%s): closing every open epoch with captureDiscontinuity", why);
	close_all(d, RM_FLAG_CAPTURE_DISCONTINUITY);
	if (bits & RM_OBS_RINGBUF) {
		/* Finals were lost: their epochs stay in the ID table; drop them. */
		ring_buffer__consume(d->rb);
		rm_ids_forget(d->rep.ids);
	}
	if (bits & RM_OBS_LINK_GONE) {
		log_msg("the XDP program was detached from %s by someone else; stopping", d->ifname);
		return -1;
	}
	return 0;
}

/*
 * SIGHUP: a window or policy change closes the affected epochs (finalEpoch,
 * seed 000 "Identity and Epoch Lifecycle"); a connection disabled by a
 * profile violation is metered again only because it is provisioned again.
 */
static void reload(struct daemon *d)
{
	static struct rm_config_file nc;
	char err[512];
	struct rm_prov_key next;

	sd_notify(0, "RELOADING=1");
	rm_config_defaults(&nc);
	if (!d->config_path) {
		log_msg("reload: no configuration file; nothing to do");
		goto done;
	}
	if (rm_config_load(d->config_path, &nc, err, sizeof(err))) {
		log_msg("reload refused, keeping the running configuration: %s", err);
		goto done;
	}
	/* What the command line said still overrides the file. */
	if (d->opt_window > 0)
		nc.meter.window = (uint32_t)d->opt_window;
	if (d->opt_provision_all)
		nc.meter.provision_all = 1;
	if (d->opt_interval >= 0)
		nc.export.report_interval_ms = (uint64_t)d->opt_interval;
	if (nc.meter.window > d->meter.window_words * 64) {
		log_msg("reload refused: window %u needs a larger ring than at attach (%u); restart the service",
			nc.meter.window, d->meter.window_words * 64);
		goto done;
	}
	if (!nc.meter.observation_point_id)
		nc.meter.observation_point_id = (uint64_t)d->ifindex;
	if (nc.meter.namespace_vlan != d->cfg.meter.namespace_vlan || nc.meter.max_contexts != d->cfg.meter.max_contexts ||
	    nc.meter.observation_point_id != d->cfg.meter.observation_point_id ||
	    nc.meter.rx_dropped_is_loss != d->cfg.meter.rx_dropped_is_loss) {
		log_msg("reload: namespace, max_contexts, observation_point_id and rx_dropped_is_loss take effect only "
			"on restart; keeping the running ones");
		nc.meter.namespace_vlan = d->cfg.meter.namespace_vlan;
		nc.meter.max_contexts = d->cfg.meter.max_contexts;
		nc.meter.observation_point_id = d->cfg.meter.observation_point_id;
		nc.meter.rx_dropped_is_loss = d->cfg.meter.rx_dropped_is_loss;
	}
	/* The new policy first, so that any request counted after the closure
	 * below belongs to an epoch started under it. */
	d->meter.skel->data->rm_cfg.window = nc.meter.window;
	d->meter.skel->data->rm_cfg.provision_all = nc.meter.provision_all ? 1 : 0;
	d->meter.skel->data->rm_cfg.idle_timeout_ns = nc.meter.idle_timeout_ms * 1000000ull;
	d->meter.window = nc.meter.window;
	/* Empty the provisioning map: always delete the first key. */
	while (bpf_map_get_next_key(d->meter.provision_fd, NULL, &next) == 0)
		bpf_map_delete_elem(d->meter.provision_fd, &next);
	if (rm_meter_provision(&d->meter, nc.provision, nc.n_provision, nc.meter.generation_verified, err,
			       sizeof(err)))
		log_msg("reload: %s", err);
	/* Every context is metered iff it is provisioned now: one disabled by a
	 * profile violation is re-enabled only if still provisioned, one no
	 * longer provisioned is disabled. */
	{
		struct rm_ctx_key key, nk, *pk = NULL;

		while (bpf_map_get_next_key(d->meter.contexts_fd, pk, &nk) == 0) {
			struct rm_ctl c = { .op = RM_CTL_REPROVISION };

			key = nk;
			pk = &key;
			c.key = key;
			rm_meter_ctl(&d->meter, &c);
		}
	}
	/* The policy changed: every open epoch closes (finalEpoch). */
	close_all(d, 0);
	d->rep.generation_verified = nc.meter.generation_verified;
	d->cfg.meter = nc.meter;
	d->cfg.export.report_interval_ms = nc.export.report_interval_ms;
	log_msg("reload: configuration %s applied (window %u, %d provisioning lines)", d->config_path,
		nc.meter.window, nc.n_provision);
done:
	sd_notify(0, "READY=1");
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter attach IFACE [OPTIONS]\n\n"
		"Load the XDP meter, attach it to IFACE, pin its maps under\n"
		"/sys/fs/bpf/rocemeter/IFACE/ and stay in the foreground: drain epoch events,\n"
		"make periodic and final reports, and export them ([export] in the config\n"
		"file) or print them. SIGHUP reloads the configuration; SIGINT/SIGTERM close\n"
		"every open epoch with a final report, flush the export and detach.\n\n"
		"Options:\n"
		"  -c, --config FILE        configuration file (see README, \"Configuration\")\n"
		"  -M, --mode MODE          XDP mode: native (default) or generic\n"
		"  -m, --mirror             drop frames after metering (a dedicated mirror/TAP port)\n"
		"  -w, --window W           W for new epochs, 1..4194304 (overrides the config)\n"
		"  -a, --provision-all      meter every RC connection seen (operator assertion)\n"
		"  -f, --flowlabel DIR      also attach the IPv6 Flow Label program (ingress|egress)\n"
		"  -H, --hash VARIANT       flow-label hash: literal (default), crc32, crc32c, mpeg2\n"
		"  -F, --flowlabel-only     attach only the flow-label program and return\n"
		"  -i, --report-interval MS non-final reports of open epochs every MS ms\n"
		"                           (default 10000, or [export] report_interval_ms; 0: finals only)\n"
		"  -j, --json               print reports as JSON Lines when not exporting\n"
		"  -k, --keep-pins          leave the map pins in place on exit\n"
		"  -R, --replace-stale      remove pins left by a crashed attachment (no live\n"
		"                           rocemeter owns the interface) instead of refusing\n"
		"  -h, --help               this text\n\n"
		"Inspect while running: rocemeter status IFACE, or\n"
		"  bpftool map dump pinned /sys/fs/bpf/rocemeter/IFACE/contexts\n");
}

static int pin_maps(struct daemon *d, char *err, size_t errlen)
{
	struct meter *sk = d->meter.skel;
	struct bpf_map *maps[] = { sk->maps.contexts, sk->maps.windows, sk->maps.provision,
				   sk->maps.stats,    sk->maps.events,  sk->maps.free_slots };
	static const char *const names[] = { RM_PIN_MAPS };
	char path[512];

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		if (rm_pin_path(d->ifname, names[i], path, sizeof(path)) || bpf_map__pin(maps[i], path)) {
			snprintf(err, errlen, "cannot pin %s: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },  { "mode", required_argument, 0, 'M' },
		{ "mirror", no_argument, 0, 'm' },	  { "window", required_argument, 0, 'w' },
		{ "provision-all", no_argument, 0, 'a' }, { "flowlabel", required_argument, 0, 'f' },
		{ "hash", required_argument, 0, 'H' },	  { "flowlabel-only", no_argument, 0, 'F' },
		{ "json", no_argument, 0, 'j' },	  { "keep-pins", no_argument, 0, 'k' },
		{ "report-interval", required_argument, 0, 'i' }, { "replace-stale", no_argument, 0, 'R' },
		{ "help", no_argument, 0, 'h' },
		{ 0 },
	};
	static struct daemon d;
	struct rm_flowlabel_opts flo = { .variant = 0 };
	const char *fl_dir = NULL, *fl_hash = NULL, *mode = "native";
	int opt, mirror = 0, provision_all = 0, fl_only = 0, replace_stale = 0, lock_fd = -1, holder, ret = RM_EXIT_FAIL;
	long long window = -1, interval = -1;
	char err[1024], path[512], *end;
	uint64_t next_report = 0, next_sweep = 0;
	struct sigaction sa;
	FILE *pidf;

	memset(&d, 0, sizeof(d));
	d.link_fd = -1;
	while ((opt = getopt_long(argc, argv, "c:M:mw:af:H:Fjki:Rh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': d.config_path = optarg; break;
		case 'M': mode = optarg; break;
		case 'm': mirror = 1; break;
		case 'a': provision_all = 1; break;
		case 'f': fl_dir = optarg; break;
		case 'H': fl_hash = optarg; break;
		case 'F': fl_only = 1; break;
		case 'j': d.sink.json = 1; break;
		case 'k': d.keep_pins = 1; break;
		case 'R': replace_stale = 1; break;
		case 'w':
			window = strtoll(optarg, &end, 0);
			if (*end || window < 1 || window > RM_WINDOW_MAX) {
				fprintf(stderr, "rocemeter attach: --window: '%s' is not in 1..%u\n", optarg, RM_WINDOW_MAX);
				return RM_EXIT_USAGE;
			}
			break;
		case 'i':
			interval = strtoll(optarg, &end, 0);
			if (*end || interval < 0 || interval > 86400000) {
				fprintf(stderr, "rocemeter attach: --report-interval: '%s' is not 0..86400000 ms\n", optarg);
				return RM_EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return RM_EXIT_OK;
		default: usage(stderr); return RM_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "rocemeter attach: give exactly one interface\n");
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	d.ifname = argv[optind];
	d.ifindex = (int)if_nametoindex(d.ifname);
	if (!d.ifindex) {
		fprintf(stderr, "rocemeter attach: no interface '%s'\n", d.ifname);
		return RM_EXIT_USAGE;
	}
	if (strcmp(mode, "native") && strcmp(mode, "generic")) {
		fprintf(stderr, "rocemeter attach: --mode: '%s' is not native or generic\n", mode);
		return RM_EXIT_USAGE;
	}
	if (fl_dir) {
		flo.direction = rm_flowlabel_direction_from_name(fl_dir);
		if (flo.direction < 0) {
			fprintf(stderr, "rocemeter attach: --flowlabel: '%s' is not ingress or egress\n", fl_dir);
			return RM_EXIT_USAGE;
		}
		if (fl_hash) {
			int v = rm_flowlabel_variant_from_name(fl_hash);

			if (v < 0) {
				fprintf(stderr, "rocemeter attach: --hash: unknown variant '%s'\n", fl_hash);
				return RM_EXIT_USAGE;
			}
			flo.variant = (uint32_t)v;
		}
	} else if (fl_only || fl_hash) {
		fprintf(stderr, "rocemeter attach: --flowlabel-only and --hash need --flowlabel ingress|egress\n");
		return RM_EXIT_USAGE;
	}
	if (fl_only) {
		if (rm_pin_prepare(d.ifname) || rm_flowlabel_attach(d.ifname, &flo, err, sizeof(err))) {
			fprintf(stderr, "rocemeter attach: %s\n", err);
			return RM_EXIT_FAIL;
		}
		printf("flow-label program attached to %s (%s)\n", d.ifname, fl_dir);
		return RM_EXIT_OK;
	}

	rm_config_defaults(&d.cfg);
	if (d.config_path && rm_config_load(d.config_path, &d.cfg, err, sizeof(err))) {
		fprintf(stderr, "rocemeter attach: %s\n", err);
		return RM_EXIT_USAGE;
	}
	if (window > 0)
		d.cfg.meter.window = (uint32_t)window;
	if (provision_all)
		d.cfg.meter.provision_all = 1;
	if (interval >= 0)
		d.cfg.export.report_interval_ms = (uint64_t)interval;
	d.opt_window = window;
	d.opt_provision_all = provision_all;
	d.opt_interval = interval;
	if (!d.cfg.meter.observation_point_id)
		d.cfg.meter.observation_point_id = (uint64_t)d.ifindex;

	lock_fd = rm_lock_interface(d.ifname, &holder);
	if (lock_fd < 0) {
		if (holder)
			fprintf(stderr, "rocemeter attach: %s is already metered by process %d\n", d.ifname, holder);
		else
			fprintf(stderr, "rocemeter attach: cannot lock %s: %s\n", d.ifname, strerror(errno));
		return RM_EXIT_FAIL;
	}
	if (!rm_pin_path(d.ifname, "contexts", path, sizeof(path)) && access(path, F_OK) == 0 && replace_stale) {
		/* We hold the interface's lock: no live rocemeter owns these pins. */
		log_msg("removing stale pins of %s left by an attachment that did not exit cleanly", d.ifname);
		rm_pin_remove_meter(d.ifname);
	}
	if (!rm_pin_path(d.ifname, "contexts", path, sizeof(path)) && access(path, F_OK) == 0) {
		fprintf(stderr,
			"rocemeter attach: stale pin directory for %s (%s exists but no rocemeter process owns it);\n"
			"  run 'rocemeter detach %s' first, or attach with --replace-stale\n",
			d.ifname, path, d.ifname);
		d.keep_pins = 1; /* not ours: leave them to detach */
		goto out;
	}
	if (rm_pin_prepare(d.ifname)) {
		fprintf(stderr, "rocemeter attach: cannot prepare the pin directory on bpffs: %s\n", strerror(errno));
		goto out;
	}
	if (rm_meter_load(&d.meter, &d.cfg.meter, 0, err, sizeof(err)) ||
	    rm_meter_provision(&d.meter, d.cfg.provision, d.cfg.n_provision, d.cfg.meter.generation_verified, err,
			       sizeof(err))) {
		fprintf(stderr, "rocemeter attach: %s\n", err);
		goto out;
	}
	d.meter.skel->data->rm_cfg.mirror = mirror;
	{
		LIBBPF_OPTS(bpf_link_create_opts, lo,
			    .flags = !strcmp(mode, "generic") ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);

		d.link_fd = bpf_link_create(d.meter.xdp_fd, d.ifindex, BPF_XDP, &lo);
		if (d.link_fd < 0) {
			fprintf(stderr, "rocemeter attach: cannot attach XDP (%s mode) to %s: %s%s\n", mode, d.ifname,
				strerror(errno),
				!strcmp(mode, "native") ? "; the driver may lack native XDP: try --mode generic" : "");
			goto out;
		}
	}
	if (pin_maps(&d, err, sizeof(err))) {
		fprintf(stderr, "rocemeter attach: %s\n", err);
		goto out;
	}
	if (fl_dir) {
		if (rm_flowlabel_attach(d.ifname, &flo, err, sizeof(err))) {
			fprintf(stderr, "rocemeter attach: %s\n", err);
			goto out;
		}
		d.flowlabel = 1;
	}
	if (!rm_run_path(d.ifname, "pid", path, sizeof(path)) && (pidf = fopen(path, "w"))) {
		fprintf(pidf, "%d\n", getpid());
		fclose(pidf);
	}
	if (d.cfg.export.enabled) {
		d.sink.exporter = rm_exporter_start(&d.cfg.export, d.cfg.meter.namespace_vlan, err, sizeof(err));
		if (!d.sink.exporter) {
			fprintf(stderr, "rocemeter attach: export: %s\n", err);
			goto out;
		}
	}
	if (rm_reporter_init(&d.rep, &d.meter, d.cfg.meter.observation_point_id, d.cfg.meter.namespace_vlan,
			     d.cfg.meter.generation_verified,
			     (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC)), live_sink_fn, &d.sink)) {
		fprintf(stderr, "rocemeter attach: out of memory\n");
		goto out;
	}
	d.rb = ring_buffer__new(d.meter.events_fd, rm_reporter_on_event, &d.rep, NULL);
	if (!d.rb) {
		fprintf(stderr, "rocemeter attach: cannot open the event ring buffer: %s\n", strerror(errno));
		goto out;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	log_msg("attached to %s (ifindex %d, %s XDP, W %u, max_contexts %u%s%s); maps pinned under %s/rocemeter/%s",
		d.ifname, d.ifindex, mode, d.cfg.meter.window, d.cfg.meter.max_contexts,
		d.cfg.meter.provision_all ? ", provision_all" : "", mirror ? ", mirror" : "",
		getenv("ROCEMETER_BPFFS") ?: "/sys/fs/bpf", d.ifname);
	if (d.sink.exporter)
		log_msg("exporting to %s port %u (%s)", d.cfg.export.collector, d.cfg.export.port,
			d.cfg.export.tls.plain_tcp ? "plain TCP" : "TLS 1.3");
	{
		uint64_t st[RM_STAT__COUNT] = { 0 };

		rm_meter_read_stats(d.meter.stats_fd, st);
		rm_observe_init(&d.obs, d.ifname, d.link_fd, st[RM_STAT_RINGBUF_DROPS], d.cfg.meter.rx_dropped_is_loss);
	}
	sd_notify(0, "READY=1");

	while (!stop_requested) {
		uint64_t now;
		int r = ring_buffer__poll(d.rb, 100);

		if (r < 0 && r != -EINTR) {
			log_msg("ring buffer: %s", strerror(-r));
			break;
		}
		now = clock_ns(CLOCK_MONOTONIC);
		d.rep.time_offset_ns = (int64_t)(clock_ns(CLOCK_REALTIME) - now);
		if (reload_requested) {
			reload_requested = 0;
			reload(&d);
		}
		if (d.sink.exporter) {
			uint64_t s = rm_exporter_session(d.sink.exporter);

			if (s != d.sink.session) {
				/* A new Transport Session starts fresh metering state for
				 * every context (seed 000): close what is open; its reports
				 * belong to no session any more. */
				d.sink.discard = 1;
				close_all(&d, 0);
				d.sink.discard = 0;
				rm_ids_reset(d.rep.ids);
				d.sink.session = s;
				if (s)
					log_msg("export: Transport Session %" PRIu64 " established", s);
			}
		}
		if (d.cfg.export.report_interval_ms && now >= next_report) {
			if (next_report) {
				ring_buffer__consume(d.rb);
				rm_reporter_walk(&d.rep, RM_CTL_SNAPSHOT, 0, 0);
			}
			next_report = now + d.cfg.export.report_interval_ms * 1000000ull;
		}
		if (now >= next_sweep) {
			if (d.cfg.meter.idle_timeout_ms && now > d.cfg.meter.idle_timeout_ms * 1000000ull) {
				ring_buffer__consume(d.rb);
				rm_reporter_walk(&d.rep, RM_CTL_CLOSE_IDLE, 0, now - d.cfg.meter.idle_timeout_ms * 1000000ull);
			}
			if (check_observation(&d) < 0) {
				ret = RM_EXIT_FAIL;
				goto out;
			}
			write_stats_file(&d);
			next_sweep = now + 1000000000ull;
		}
	}

	sd_notify(0, "STOPPING=1");
	log_msg("stopping: final reports for every open epoch");
	/* Detach first: a request that arrived after its epoch's closure below
	 * would start an epoch that nobody reports (no request counted in an
	 * epoch without a final report). */
	close(d.link_fd);
	d.link_fd = -1;
	close_all(&d, 0);
	ret = RM_EXIT_OK;
out:
	if (d.sink.exporter) {
		struct rm_export_stats es;

		rm_exporter_stop_stats(d.sink.exporter, 5000, &es);
		log_msg("export: %" PRIu64 " records sent in %" PRIu64 " sessions; dropped: %" PRIu64
			" queue full, %" PRIu64 " without session, %" PRIu64 " with a lost session; %" PRIu64
			" lost in flight (sent, never acknowledged by the collector before its session died); %" PRIu64
			" epochs closed because a new Transport Session began (their final reports had no session)",
			es.records_sent, es.sessions, es.dropped_queue_full, es.dropped_no_session,
			es.dropped_session_lost, es.lost_in_flight, d.sink.discarded);
		d.sink.exporter = NULL;
	}
	if (d.link_fd >= 0)
		close(d.link_fd); /* the XDP link goes with its last reference */
	if (d.flowlabel && rm_flowlabel_detach(d.ifname, err, sizeof(err)) < 0)
		log_msg("%s", err);
	ring_buffer__free(d.rb);
	rm_reporter_free(&d.rep);
	rm_meter_unload(&d.meter);
	if (lock_fd >= 0) {
		if (!d.keep_pins)
			rm_pin_remove_meter(d.ifname);
		if (!rm_run_path(d.ifname, "pid", path, sizeof(path)))
			unlink(path);
		if (!rm_run_path(d.ifname, "stats", path, sizeof(path)))
			unlink(path);
		rm_unlock_interface(d.ifname, lock_fd);
	}
	return ret;
}

static int cmd_detach(int argc, char **argv)
{
	char path[512], err[512];
	int holder = 0, fd, did = 0;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr,
			"Usage: rocemeter detach IFACE\n\n"
			"Stop the meter daemon on IFACE (its open epochs get final reports), remove\n"
			"the flow-label program and every pin under /sys/fs/bpf/rocemeter/IFACE/.\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? RM_EXIT_OK : RM_EXIT_USAGE;
	}
	fd = rm_lock_interface(argv[1], &holder);
	if (fd < 0 && holder > 0) {
		int daemon_pid = holder;

		if (kill(daemon_pid, SIGTERM) == 0) {
			for (int i = 0; i < 200 && fd < 0; i++) { /* up to 20 s for final reports and export */
				usleep(100000);
				fd = rm_lock_interface(argv[1], &holder);
			}
			did = 1;
		}
		if (fd < 0) {
			fprintf(stderr, "rocemeter detach: the daemon on %s (process %d) did not stop\n", argv[1],
				daemon_pid);
			return RM_EXIT_FAIL;
		}
		printf("stopped the meter on %s (process %d)\n", argv[1], daemon_pid);
	}
	if (!rm_pin_path(argv[1], "contexts", path, sizeof(path)) && access(path, F_OK) == 0) {
		rm_pin_remove_meter(argv[1]);
		printf("removed stale meter pins of %s\n", argv[1]);
		did = 1;
	}
	if (rm_flowlabel_detach(argv[1], err, sizeof(err)) == 0) {
		printf("removed the flow-label program from %s\n", argv[1]);
		did = 1;
	}
	if (!rm_pin_dir(argv[1], path, sizeof(path)))
		rmdir(path);
	if (fd >= 0) {
		/* We hold the lock: no daemon runs; its PID and stats files are stale. */
		if (!rm_run_path(argv[1], "pid", path, sizeof(path)))
			unlink(path);
		if (!rm_run_path(argv[1], "stats", path, sizeof(path)))
			unlink(path);
		rm_unlock_interface(argv[1], fd);
	}
	if (!did) {
		if (!if_nametoindex(argv[1]))
			fprintf(stderr, "rocemeter detach: no interface '%s', and no rocemeter pins for it\n", argv[1]);
		else
			fprintf(stderr, "rocemeter detach: rocemeter is not attached to %s\n", argv[1]);
		return RM_EXIT_FAIL;
	}
	return RM_EXIT_OK;
}

RM_COMMAND(attach, 10, "attach the meter (XDP) and/or the flow-label program (tc) to an interface", cmd_attach);
RM_COMMAND(detach, 20, "stop the meter on an interface and remove its programs and pins", cmd_detach);
