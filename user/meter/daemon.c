// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * daemon.c - the meter daemon of `rocemeter attach` (see daemon.h): set-up,
 * one pass of the loop, reload (SIGHUP), capture discontinuity, and the
 * orderly stop (docs/architecture.md "Every closure is atomic").
 */
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <systemd/sd-daemon.h>

#include "census/census.h"
#include "common/clock.h"
#include "common/errmsg.h"
#include "common/jsonw.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/map_iter.h"
#include "common/metrics.h"
#include "common/paths.h"
#include "common/report_json.h"
#include "common/report_text.h"
#include "daemon.h"
#include "export/export.h"
#include "features.h"
#include "identity.h"
#include "meter.h"
#include "meter.skel.h"
#include "meter_metrics.h"
#include "observe.h"
#include "pins.h"
#include "provision.h"
#include "reporter.h"
#include "violations.h"

/* Where reports go while attached. */
struct live_sink {
	int json;
	int wide;                     /* text: every field */
	struct rm_exporter *exporter; /* NULL: print */
	uint64_t session;             /* Transport Session the reporter's IDs belong to */
	int discard;                  /* closing epochs for a new session: nothing to send them on */
	uint64_t discarded;
	uint64_t closures[5]; /* final reports by reason: the closure_bits order, then none */
};

/* The closure reasons counted apart (RM_DAEMON_STATS closures_*), in that order. */
static const uint16_t closure_bits[4] = { RM_FLAG_PROFILE_VIOLATION, RM_FLAG_CAPTURE_DISCONTINUITY,
					  RM_FLAG_STATE_EXHAUSTION, RM_FLAG_SERIAL_DISCONTINUITY };

struct rm_daemon {
	const char *ifname;
	int ifindex;
	struct rm_ifkey key; /* pins, lock and run files: network namespace and ifindex */
	const char *config_path;
	struct rm_config_overrides overrides;
	struct rm_config_file cfg;
	struct rm_meter meter;
	struct rm_reporter rep;
	struct live_sink sink;
	struct rm_observe obs;
	uint64_t derived_obs; /* the default observationPointId (identity.h); 0 when configured */
	uint64_t table_full_seen;
	uint64_t unattributed_seen;               /* RM_STAT_UNATTRIBUTED at the last check */
	uint64_t mirror_gaps_seen;                /* RM_STAT_MIRROR_GAPS at the last check */
	uint64_t unrecorded_seen;                 /* RM_STAT_VIOLATIONS_UNRECORDED at the last check */
	uint64_t violations_seen;                 /* RM_STAT_VIOLATIONS at the last check */
	struct rm_violations_logged *viol_logged; /* the disabled connections logged; NULL until the first */
	int lock_fd;
	int link_fd;
	int keep_pins;
	int flowlabel;
	int census;
	struct rm_metrics_server *metrics;
	struct rm_daemon_stats pub; /* the counters a scrape shows: written under the server's lock */
	uint64_t pub_session;
	struct rm_seq_point pub_points[RM_REPORTER_MAX_POINTS]; /* the reporter's, npoints of them */
	size_t pub_npoints;
};

static int live_sink_fn(void *arg, const struct rm_report *r)
{
	struct live_sink *s = arg;

	if (r->flags & RM_FLAG_FINAL_EPOCH) {
		size_t i = 0;

		while (i < 4 && !(r->flags & closure_bits[i]))
			i++;
		s->closures[i]++; /* the first reason bit, or none */
	}
	if (s->discard) {
		s->discarded++;
		return -1;
	}
	if (s->exporter) /* drops are counted by the exporter */
		return rm_exporter_submit(s->exporter, s->session, r, 1) ? -1 : 0;
	if (s->json)
		rm_report_write_json(stdout, r);
	else
		rm_report_write_text(stdout, r, s->wide);
	fflush(stdout);
	return 0;
}

/* The daemon's counters now (RM_DAEMON_STATS). */
static void daemon_stats(const struct rm_daemon *d, struct rm_daemon_stats *ds)
{
	ds->reports = d->rep.reports;
	ds->final_reports = d->rep.final_reports;
	ds->reports_not_made_id_exhausted = d->rep.id_exhausted;
	ds->closed_for_new_session = d->sink.discarded;
	ds->closures_profile_violation = d->sink.closures[0];
	ds->closures_capture_discontinuity = d->sink.closures[1];
	ds->closures_state_exhaustion = d->sink.closures[2];
	ds->closures_serial_discontinuity = d->sink.closures[3];
	ds->closures_none = d->sink.closures[4];
}

/* Hand the counters to the metrics server (a scrape sees them whole). */
static void publish(struct rm_daemon *d)
{
	if (!d->metrics)
		return;
	rm_metrics_lock(d->metrics);
	daemon_stats(d, &d->pub);
	d->pub_session = d->sink.session;
	memcpy(d->pub_points, d->rep.points, d->rep.npoints * sizeof(d->rep.points[0]));
	d->pub_npoints = d->rep.npoints;
	rm_metrics_unlock(d->metrics);
}

/* GET /metrics, on the server's thread with its lock held. */
static void render_metrics(void *arg, FILE *f)
{
	struct rm_daemon *d = arg;
	struct rm_export_stats es;
	struct rm_meter_metrics_view v = { .ifname = d->ifname,
					   .meter = &d->meter,
					   .daemon = &d->pub,
					   .session = d->pub_session,
					   .points = d->pub_points,
					   .npoints = d->pub_npoints,
					   .max_connections = d->cfg.meter.metrics_connections };

	if (d->sink.exporter) { /* thread-safe; stopped only after the server */
		rm_exporter_stats(d->sink.exporter, &es);
		v.export = &es;
	}
	rm_meter_metrics_write(f, &v);
}

/* RUNDIR/NETNS-IFINDEX.stats: one JSON object (docs/json.md "daemon"), replaced whole. */
static void write_stats_file(struct rm_daemon *d)
{
	char path[512], tmp[520];
	struct rm_daemon_stats ds;
	const struct rm_metric_row *rows;
	json_t *o = json_object();
	size_t n;
	FILE *f;

	if (rm_paths_run_file(&d->key, RM_RUN_STATS, path, sizeof(path)))
		goto out;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		goto out;
	json_object_set_new(o, "pid", json_integer(getpid()));
	json_object_set_new(o, "observationPointId", rm_json_u64(d->cfg.meter.observation_point_id));
	daemon_stats(d, &ds);
	rows = rm_daemon_stat_rows(&n);
	rm_json_set_rows(o, rows, n, &ds);
	if (d->sink.exporter) {
		struct rm_export_stats es;
		json_t *e = json_object();

		rm_exporter_stats(d->sink.exporter, &es);
		json_object_set_new(e, "session", rm_json_u64(d->sink.session));
		rows = rm_export_stat_rows(&n);
		rm_json_set_rows(e, rows, n, &es);
		json_object_set_new(o, "export", e);
	}
	rm_json_write(f, o);
	o = NULL;
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
out:
	json_decref(o);
}

/* Close every open epoch under its lock; reports go to the current sink. */
static void close_all(struct rm_daemon *d, uint16_t reason)
{
	rm_reporter_drain(&d->rep); /* finals the datapath made come first */
	rm_reporter_walk(&d->rep, RM_CTL_CLOSE, reason, 0);
}

/* A profile violation disabled a connection: one line per connection, naming the opcode. */
static void log_violations(struct rm_daemon *d)
{
	struct rm_violations_fds f;
	int e;

	if (!d->viol_logged && !(d->viol_logged = rm_violations_logged_new()))
		return;
	rm_violations_fds_of(&d->meter, &f);
	e = rm_violations_log_new(&f, d->viol_logged, d->ifname);
	if (e < 0)
		rm_log(RM_LOG_ERR, "cannot list the connections a profile violation disabled: %s", strerror(-e));
}

/*
 * Capture discontinuity ([SEQOBS]): when complete observation can no longer
 * be established, close every context that may be affected (all of them:
 * the cause cannot be attributed) with captureDiscontinuity. Metering
 * resumes with fresh state: the next request of a context starts a new
 * epoch. A detached XDP link ends the daemon (returns -1).
 */
static int check_observation(struct rm_daemon *d)
{
	uint64_t stats[RM_STAT__COUNT] = { 0 };
	char why[256];
	int bits;

	rm_meter_read_stats(d->meter.stats_fd, stats);
	/* eviction = oldest: a full table refused contexts; make room (1% of the table). */
	if (d->cfg.meter.evict && stats[RM_STAT_TABLE_FULL] > d->table_full_seen) {
		unsigned int n = d->cfg.meter.max_contexts / 100 ? d->cfg.meter.max_contexts / 100 : 1;

		rm_reporter_drain(&d->rep);
		int e = rm_reporter_evict(&d->rep, n);

		if (e > 0)
			rm_log(RM_LOG_NOTICE, "context table full: evicted %d contexts (stateExhaustion)", e);
	}
	d->table_full_seen = stats[RM_STAT_TABLE_FULL];
	if (stats[RM_STAT_VIOLATIONS_UNRECORDED] > d->unrecorded_seen)
		rm_log(RM_LOG_ERR,
		       "violations map full (max_violations %u): a violated connection could not be recorded; no new "
		       "connection is metered until 'rocemeter reenable %s --all'",
		       d->cfg.meter.max_violations, d->ifname);
	d->unrecorded_seen = stats[RM_STAT_VIOLATIONS_UNRECORDED];
	if (stats[RM_STAT_VIOLATIONS] > d->violations_seen)
		log_violations(d);
	d->violations_seen = stats[RM_STAT_VIOLATIONS];
	/* Frames that may have carried a request of any connection: the
	 * datapath made the epochs open before them stale (each closes at its
	 * next request); close the silent ones now, so that their finals come. */
	if (stats[RM_STAT_UNATTRIBUTED] > d->unattributed_seen && d->cfg.meter.unattributed_is_loss) {
		rm_log(RM_LOG_WARNING,
		       "capture discontinuity (%" PRIu64 " frames that may carry a request named no connection): "
		       "closing the epochs open before them with captureDiscontinuity",
		       stats[RM_STAT_UNATTRIBUTED] - d->unattributed_seen);
		rm_reporter_drain(&d->rep);
		rm_reporter_walk(&d->rep, RM_CTL_CLOSE_STALE, 0, 0);
	}
	d->unattributed_seen = stats[RM_STAT_UNATTRIBUTED];
	/* Mirror loss: a GRE sequence gap made its observation point's epochs stale. */
	if (stats[RM_STAT_MIRROR_GAPS] > d->mirror_gaps_seen) {
		rm_log(RM_LOG_WARNING,
		       "mirror loss (%" PRIu64 " GRE sequence gaps): closing the epochs of those observation points "
		       "with captureDiscontinuity",
		       stats[RM_STAT_MIRROR_GAPS] - d->mirror_gaps_seen);
		rm_reporter_drain(&d->rep);
		rm_reporter_walk(&d->rep, RM_CTL_CLOSE_STALE, 0, 0);
	}
	d->mirror_gaps_seen = stats[RM_STAT_MIRROR_GAPS];
	bits = rm_observe_poll(&d->obs, stats[RM_STAT_RINGBUF_DROPS]);
	if (!bits)
		return 0;
	rm_observe_describe(bits, why, sizeof(why));
	rm_log(RM_LOG_WARNING, "capture discontinuity (%s): closing every open epoch with captureDiscontinuity", why);
	close_all(d, RM_FLAG_CAPTURE_DISCONTINUITY);
	if (bits & RM_OBS_RINGBUF) {
		/* Finals were lost: their epochs stay in the ID table; drop them. */
		rm_reporter_drain(&d->rep);
		rm_ids_forget(d->rep.ids);
	}
	if (bits & RM_OBS_LINK_GONE) {
		rm_log(RM_LOG_ERR, "the XDP program was detached from %s by someone else; stopping", d->ifname);
		return -1;
	}
	return 0;
}

/*
 * A connection a profile violation disabled is re-enabled by a reload only
 * if its provisioning changed (provision.h rm_prov_changed()): an
 * unchanged file is no explicit reprovisioning ([SEQOBS] "Applicability
 * and Provisioning"). Call with the new lines in the provisioning map.
 */
static void reenable_reprovisioned(struct rm_daemon *d, const struct rm_config_file *nc)
{
	struct rm_violations_fds f;
	struct rm_violation_entry *v = NULL;
	size_t n = 0, again = 0;
	int e;

	rm_violations_fds_of(&d->meter, &f);
	e = rm_violations_list(&f, &v, &n);
	if (e) {
		rm_log(RM_LOG_ERR, "reload: cannot list the violated connections: %s", strerror(-e));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!rm_prov_changed(d->cfg.provision, d->cfg.n_provision, d->cfg.meter.provision_all, nc->provision,
				     nc->n_provision, nc->meter.provision_all, &v[i].key))
			continue;
		if (rm_violations_reenable(&f, &v[i].key) > 0)
			again++;
	}
	if (n)
		rm_log(RM_LOG_NOTICE,
		       "reload: %zu connections disabled by a profile violation: %zu re-enabled "
		       "(provisioning changed), %zu stay disabled ('rocemeter reenable %s' re-enables them)",
		       n, again, n - again, d->ifname);
	free(v);
}

/*
 * SIGHUP: a window or policy change closes the affected epochs (finalEpoch,
 * [SEQOBS] "Identity and Epoch Lifecycle"); a connection disabled by a
 * profile violation is metered again only if its provisioning changed.
 */
static void reload(struct rm_daemon *d)
{
	struct rm_config_file *nc = calloc(1, sizeof(*nc));
	char err[512];
	struct rm_prov_key next;

	sd_notify(0, "RELOADING=1");
	if (!nc) {
		rm_log(RM_LOG_ERR, "reload refused, keeping the running configuration: out of memory");
		goto done;
	}
	rm_config_defaults(nc);
	if (!d->config_path) {
		rm_log(RM_LOG_NOTICE, "reload: no configuration file; nothing to do");
		goto done;
	}
	if (rm_config_load(d->config_path, nc, err, sizeof(err))) {
		rm_log(RM_LOG_ERR, "reload refused, keeping the running configuration: %s", err);
		goto done;
	}
	/* What the command line said still overrides the file. */
	rm_config_apply_overrides(nc, &d->overrides);
	if (nc->meter.window > d->meter.window_words * 64) {
		rm_log(RM_LOG_ERR,
		       "reload refused: window %u needs a larger ring than at attach (%u); restart the service",
		       nc->meter.window, d->meter.window_words * 64);
		goto done;
	}
	if (!nc->meter.observation_point_id)
		nc->meter.observation_point_id = d->derived_obs;
	if (nc->meter.namespace_vlan != d->cfg.meter.namespace_vlan ||
	    nc->meter.max_contexts != d->cfg.meter.max_contexts || nc->meter.max_windows != d->cfg.meter.max_windows ||
	    nc->meter.observation_point_id != d->cfg.meter.observation_point_id ||
	    nc->meter.rx_dropped_is_loss != d->cfg.meter.rx_dropped_is_loss ||
	    nc->meter.max_violations != d->cfg.meter.max_violations) {
		rm_log(RM_LOG_WARNING,
		       "reload: namespace, max_contexts, max_windows, observation_point_id, rx_dropped_is_loss and "
		       "max_violations take effect only on restart; keeping the running ones");
		nc->meter.namespace_vlan = d->cfg.meter.namespace_vlan;
		nc->meter.max_contexts = d->cfg.meter.max_contexts;
		nc->meter.max_windows = d->cfg.meter.max_windows;
		nc->meter.observation_point_id = d->cfg.meter.observation_point_id;
		nc->meter.rx_dropped_is_loss = d->cfg.meter.rx_dropped_is_loss;
		nc->meter.max_violations = d->cfg.meter.max_violations;
	}
	if (memcmp(&nc->capture, &d->cfg.capture, sizeof(nc->capture))) {
		rm_log(RM_LOG_WARNING, "reload: [capture] takes effect only on restart; keeping the running one");
		nc->capture = d->cfg.capture;
	}
	/* The new policy first, so that any request counted after the closure
	 * below belongs to an epoch started under it. */
	d->meter.skel->data->rm_cfg.window = nc->meter.window;
	d->meter.skel->data->rm_cfg.provision_all = nc->meter.provision_all ? 1 : 0;
	d->meter.skel->data->rm_cfg.idle_timeout_ns = nc->meter.idle_timeout_ms * 1000000ull;
	d->meter.skel->data->rm_cfg.unattributed_is_loss = nc->meter.unattributed_is_loss ? 1 : 0;
	d->meter.window = nc->meter.window;
	/* Empty the provisioning map: always delete the first key. */
	while (rm_map_iter_first(d->meter.provision_fd, &next))
		bpf_map_delete_elem(d->meter.provision_fd, &next);
	if (rm_meter_provision(&d->meter, nc->provision, nc->n_provision, nc->meter.generation_verified, err,
			       sizeof(err)))
		rm_log(RM_LOG_ERR, "reload: %s", err);
	reenable_reprovisioned(d, nc);
	/* Every context is metered iff it is provisioned now and not violated:
	 * one no longer provisioned is disabled. */
	{
		struct rm_ctx_key key;
		struct rm_map_iter it = rm_map_iter_start(d->meter.contexts_fd, &key);

		while (rm_map_iter_next(&it)) {
			struct rm_ctl c = { .op = RM_CTL_REPROVISION };

			c.key = key;
			rm_meter_ctl(&d->meter, &c);
		}
	}
	/* The policy changed: every open epoch closes (finalEpoch). */
	close_all(d, 0);
	d->rep.generation_verified = nc->meter.generation_verified;
	d->cfg.meter = nc->meter;
	memcpy(d->cfg.provision, nc->provision, sizeof(nc->provision[0]) * (size_t)nc->n_provision);
	d->cfg.n_provision = nc->n_provision;
	d->cfg.export.report_interval_ms = nc->export.report_interval_ms;
	rm_reporter_set_schedule(&d->rep, d->cfg.export.report_interval_ms, d->cfg.meter.idle_timeout_ms);
	rm_log(RM_LOG_NOTICE, "reload: configuration %s applied (window %u, %d provisioning lines)", d->config_path,
	       nc->meter.window, nc->n_provision);
done:
	free(nc);
	sd_notify(0, "READY=1");
}

static int pin_maps(struct rm_daemon *d, char *err, size_t errlen)
{
	struct meter *sk = d->meter.skel;
	struct bpf_map *maps[] = { sk->maps.contexts,      sk->maps.windows,    sk->maps.provision,
				   sk->maps.stats,         sk->maps.events,     sk->maps.free_slots,
				   sk->maps.violations,    sk->maps.viol_state, sk->maps.mirror_sessions,
				   sk->maps.mirror_unknown };
	static const char *const names[] = { RM_PIN_MAPS };
	char path[512];

	_Static_assert(sizeof(maps) / sizeof(maps[0]) == sizeof(names) / sizeof(names[0]), "RM_PIN_MAPS");
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		if (rm_paths_pin(&d->key, names[i], path, sizeof(path)) || bpf_map__pin(maps[i], path)) {
			rm_errf(err, errlen, "cannot pin %s: %s", path, strerror(errno));
			return -1;
		}
	}
	/* The control program too: `rocemeter reenable` runs it from its own process. */
	if (rm_paths_pin(&d->key, RM_PIN_CTL, path, sizeof(path)) || bpf_program__pin(sk->progs.rocemeter_ctl, path)) {
		rm_errf(err, errlen, "cannot pin %s: %s", path, strerror(errno));
		return -1;
	}
	/* The XDP program (the device-bound one with namespace = vlan in native
	 * mode): `status` and `detach` ask the kernel whether the interface's
	 * XDP program is this one (rm_pin_meter_live()). */
	if (rm_paths_pin(&d->key, RM_PIN_PROG, path, sizeof(path)) || bpf_obj_pin(d->meter.xdp_fd, path)) {
		rm_errf(err, errlen, "cannot pin %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Undo what rm_daemon_start() did, in reverse, as far as it got. */
static void teardown(struct rm_daemon *d)
{
	char err[512];

	rm_metrics_stop(d->metrics); /* first: a scrape reads the maps and the exporter */
	d->metrics = NULL;
	if (d->sink.exporter) {
		struct rm_export_stats es;

		rm_exporter_stop_stats(d->sink.exporter, 5000, &es);
		rm_log(RM_LOG_NOTICE,
		       "export: %" PRIu64 " records sent in %" PRIu64 " sessions; dropped: %" PRIu64
		       " queue full, %" PRIu64 " without session, %" PRIu64 " with a lost session; %" PRIu64
		       " lost in flight (sent, never acknowledged by the collector before its session died); %" PRIu64
		       " epochs closed because a new Transport Session began (their final reports had no session)",
		       es.records_sent, es.sessions, es.dropped_queue_full, es.dropped_no_session,
		       es.dropped_session_lost, es.lost_in_flight, d->sink.discarded);
		d->sink.exporter = NULL;
	}
	if (d->link_fd >= 0)
		close(d->link_fd); /* the XDP link goes with its last reference */
	if (d->flowlabel && rm_flowlabel_detach(d->ifname, err, sizeof(err)) < 0)
		rm_log(RM_LOG_ERR, "%s", err);
	if (d->census && rm_census_detach(&d->key, err, sizeof(err)) < 0)
		rm_log(RM_LOG_ERR, "%s", err);
	rm_reporter_free(&d->rep);
	rm_observe_free(&d->obs);
	rm_violations_logged_free(d->viol_logged);
	rm_meter_unload(&d->meter);
	if (d->lock_fd >= 0) {
		/* Still holding the lock: no other attachment can own these pins. */
		if (!d->keep_pins)
			rm_pin_remove_meter(&d->key);
		rm_pin_remove_run_files(&d->key);
		rm_pin_unlock(d->lock_fd);
	}
	free(d);
}

/* The lock is held: say by whom, as far as it can be proved. */
static void describe_holder(struct rm_daemon *d, char *err, size_t errlen)
{
	uint32_t id = 0;
	char why[256];
	int pid = rm_pin_meter_pid(&d->key, why, sizeof(why));

	if (rm_pin_meter_live(&d->key, &id) <= 0)
		id = 0;
	if (pid > 0)
		rm_errf(err, errlen, "%s is already metered by process %d%s", d->ifname, pid,
			id ? " (XDP program attached)" : " (starting or stopping)");
	else
		rm_errf(err, errlen, "%s is already metered by another rocemeter process%s", d->ifname,
			id ? " (XDP program attached)" : " (starting or stopping)");
}

/*
 * Why bpf_link_create() failed, in words an operator can act on: another
 * XDP program on the interface is named (trying generic mode would not
 * help: one program per interface); only a driver without native XDP gets
 * the --mode generic hint.
 */
static void attach_error(struct rm_daemon *d, const char *mode, int e, char *err, size_t errlen)
{
	uint32_t id = 0;
	const char *other_mode = "";
	char name[64];

	if ((e == EBUSY || e == EEXIST) &&
	    rm_xdp_attached((uint32_t)d->ifindex, &id, name, sizeof(name), &other_mode) > 0) {
		rm_errf(err, errlen,
			"cannot attach XDP to %s: another XDP program is attached there: %s%s%sid %u, %s mode;\n"
			"  remove it first (ip link set dev %s xdp off; 'bpftool prog show id %u' tells what it is)",
			d->ifname, name[0] ? "'" : "", name, name[0] ? "' " : "", id, other_mode, d->ifname, id);
		return;
	}
	if (e == EPERM || e == EACCES) {
		rm_errf(err, errlen, "cannot attach XDP to %s: %s: CAP_NET_ADMIN is needed", d->ifname, strerror(e));
		return;
	}
	rm_errf(err, errlen, "cannot attach XDP (%s mode) to %s: %s%s", mode, d->ifname, strerror(e),
		e == EOPNOTSUPP && strcmp(mode, "generic") ? "; the driver lacks native XDP: try --mode generic" : "");
}

/* A daemon for o, nothing started yet (teardown() undoes nothing); NULL if out of memory. */
static struct rm_daemon *daemon_new(const struct rm_daemon_opts *o)
{
	struct rm_daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->ifname = o->ifname;
	d->ifindex = (int)if_nametoindex(o->ifname);
	d->config_path = o->config_path;
	d->overrides = o->overrides;
	d->cfg = *o->cfg;
	d->sink.json = o->json;
	d->sink.wide = o->wide;
	d->keep_pins = o->keep_pins;
	d->link_fd = -1;
	d->obs.nl_fd = -1;
	d->lock_fd = -1;
	return d;
}

/* Take the lock of d's pin directory into d->lock_fd. 0, or -1 with who holds it, or why not, in err. */
static int lock_pin_dir(struct rm_daemon *d, char *err, size_t errlen)
{
	char why[512];

	d->lock_fd = rm_pin_lock(&d->key, 1, why, sizeof(why));
	if (d->lock_fd < 0) {
		if (d->lock_fd == -EBUSY)
			describe_holder(d, err, errlen);
		else
			rm_errf(err, errlen, "cannot prepare the pin directory on bpffs: %s", why);
		return -1;
	}
	return 0;
}

/*
 * The pins of d's interface, locked: a meter the kernel still runs is never
 * replaced; stale pins are removed with o->replace_stale, else refused.
 * 0, or -1 with the reason in err.
 */
static int claim_pins(struct rm_daemon *d, const struct rm_daemon_opts *o, char *err, size_t errlen)
{
	char path[512], why[512];

	if (rm_ifkey_by_name(d->ifname, &d->key, err, errlen) || lock_pin_dir(d, err, errlen))
		return -1;
	if (rm_pin_meter_exists(&d->key)) {
		uint32_t live_id = 0;
		int live = rm_pin_meter_live(&d->key, &live_id);

		rm_paths_pin_dir(&d->key, path, sizeof(path));
		d->keep_pins = 1; /* not ours: never removed by this attempt */
		if (live != 0) {
			/* Never replace a meter that the kernel still runs. */
			if (live > 0)
				rm_errf(err, errlen,
					"a meter is attached to %s (XDP program id %u, pins %s); not replacing it",
					d->ifname, live_id, path);
			else
				rm_errf(err, errlen, "cannot tell whether the meter pinned at %s is attached: %s", path,
					strerror(-live));
			return -1;
		}
		if (!o->replace_stale) {
			rm_errf(err, errlen,
				"stale pins for %s in %s (no attached XDP program uses them, no process holds them);\n"
				"  run 'rocemeter detach %s' first, or attach with --replace-stale",
				d->ifname, path, d->ifname);
			return -1;
		}
		/* We hold the lock and the kernel runs no program of these pins. */
		rm_log(RM_LOG_NOTICE, "removing stale pins of %s in %s left by an attachment that did not exit cleanly",
		       d->ifname, path);
		rm_pin_remove_meter(&d->key);
		/* A census pinned beside them is that attachment's too (a `connections --live` pins nothing). */
		if (rm_census_pinned(&d->key) && rm_census_detach(&d->key, why, sizeof(why)) < 0)
			rm_log(RM_LOG_WARNING, "%s", why);
		d->keep_pins = o->keep_pins;
		rm_pin_unlock(d->lock_fd); /* the directory went with the pins: lock it anew */
		if (lock_pin_dir(d, err, errlen))
			return -1;
	}
	return 0;
}

/*
 * Load and provision the meter, attach it to the interface (mode: "native"
 * or "generic"), pin its maps, then the flow-label program and the census
 * if asked. 0, or -1 with the reason in err.
 */
static int attach_meter(struct rm_daemon *d, const struct rm_daemon_opts *o, const char *mode, char *err, size_t errlen)
{
	struct rm_meter_load_opts lo = { .replay = 0 };

	/* namespace = vlan in native mode: the device-bound program, which also
	 * reads VLAN tags the NIC took into the packet metadata. */
	lo.dev_bound_ifindex = d->cfg.meter.namespace_vlan && !o->generic ? d->ifindex : 0;
	if (d->cfg.meter.namespace_vlan && o->generic)
		rm_log(RM_LOG_WARNING,
		       "namespace = vlan in generic mode: VLAN tags the NIC takes off (receive VLAN offload) are not "
		       "seen; turn it off (ethtool -K %s rxvlan off) or use native mode",
		       d->ifname);
	lo.capture = &d->cfg.capture;
	/* Name a missing kernel feature before the verifier does. */
	if (rm_features_check(lo.dev_bound_ifindex > 0, err, errlen))
		return -1;
	if (rm_meter_load_ex(&d->meter, &d->cfg.meter, &lo, err, errlen) ||
	    rm_meter_provision(&d->meter, d->cfg.provision, d->cfg.n_provision, d->cfg.meter.generation_verified, err,
			       errlen))
		return -1;
	d->meter.skel->data->rm_cfg.mirror = o->mirror;
	{
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = o->generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);

		d->link_fd = bpf_link_create(d->meter.xdp_fd, d->ifindex, BPF_XDP, &lo);
		if (d->link_fd < 0) {
			attach_error(d, mode, errno, err, errlen);
			return -1;
		}
	}
	if (pin_maps(d, err, errlen))
		return -1;
	if (o->flowlabel) {
		if (rm_flowlabel_attach(d->ifname, o->flowlabel, err, errlen))
			return -1;
		d->flowlabel = 1;
	}
	if (o->census) {
		struct rm_census c;

		/* The same [capture] as the meter's: encapsulations, lines, mirror_sessions = auto. */
		rm_census_set_capture(&d->cfg.capture);
		if (rm_census_attach(&c, &d->key, RM_CENSUS_MAX_CONNECTIONS_DEFAULT, 1, err, errlen))
			return -1;
		d->census = 1;
	}
	return 0;
}

/*
 * The PID file, the reporter on the event ring buffer, then the exporter
 * (last: no failure above leaves a session to take down). 0, or -1 with the
 * reason in err.
 */
static int start_reporting(struct rm_daemon *d, char *err, size_t errlen)
{
	int rc = rm_pin_write_pid(&d->key);

	if (rc)
		rm_log(RM_LOG_WARNING, "cannot write the PID file under %s: %s (detach cannot stop this daemon)",
		       rm_paths_rundir(), strerror(-rc));
	if (rm_reporter_init(&d->rep, &d->meter, d->cfg.meter.observation_point_id, d->cfg.meter.namespace_vlan,
			     d->cfg.meter.generation_verified, 0, live_sink_fn, &d->sink)) {
		rm_errf(err, errlen, "out of memory");
		return -1;
	}
	rm_reporter_set_schedule(&d->rep, d->cfg.export.report_interval_ms, d->cfg.meter.idle_timeout_ms);
	rc = rm_reporter_open_events(&d->rep);
	if (rc) {
		rm_errf(err, errlen, "cannot open the event ring buffer: %s", strerror(-rc));
		return -1;
	}
	/* The exporter last: no failure above leaves a session to take down. */
	if (d->cfg.export.enabled) {
		char why[512];

		d->sink.exporter = rm_exporter_start(&d->cfg.export, d->cfg.meter.namespace_vlan, &d->cfg.capture, why,
						     sizeof(why));
		if (!d->sink.exporter) {
			rm_errf(err, errlen, "export: %s", why);
			return -1;
		}
	}
	return 0;
}

/* Say what was attached and where the reports go; start watching capture loss from the counters now. */
static void announce(struct rm_daemon *d, const struct rm_daemon_opts *o, const char *mode)
{
	char path[512];

	rm_paths_pin_dir(&d->key, path, sizeof(path));
	rm_log(RM_LOG_NOTICE,
	       "attached to %s (ifindex %d, %s XDP, observationPointId %" PRIu64 "%s, W %u, max_contexts %u%s%s%s%s); "
	       "maps pinned under %s",
	       d->ifname, d->ifindex, mode, d->cfg.meter.observation_point_id, d->derived_obs ? " derived" : "",
	       d->cfg.meter.window, d->cfg.meter.max_contexts, d->cfg.meter.provision_all ? ", provision_all" : "",
	       o->mirror ? ", mirror" : "", d->meter.dev_bound ? ", VLAN tags from the packet metadata too" : "",
	       d->census ? ", connection census at tc ingress" : "", path);
	if (d->sink.exporter)
		rm_log(RM_LOG_NOTICE, "exporting to %s port %u (%s)", d->cfg.export.collector, d->cfg.export.port,
		       d->cfg.export.tls.plain_tcp ? "plain TCP" : "TLS 1.3");
	{
		uint64_t stats[RM_STAT__COUNT] = { 0 };

		rm_meter_read_stats(d->meter.stats_fd, stats);
		rm_observe_init(&d->obs, d->ifname, d->link_fd, stats[RM_STAT_RINGBUF_DROPS],
				d->cfg.meter.rx_dropped_is_loss);
		d->unattributed_seen = stats[RM_STAT_UNATTRIBUTED];
	}
}

/* The metrics server, if --metrics or [meter] metrics names an address. 0, or -1 with the reason in err. */
static int start_metrics(struct rm_daemon *d, const struct rm_daemon_opts *o, char *err, size_t errlen)
{
	const char *listen = o->metrics ? o->metrics : d->cfg.meter.metrics;

	if (listen[0]) {
		d->metrics = rm_metrics_start(listen, render_metrics, d, err, errlen);
		if (!d->metrics)
			return -1;
		publish(d);
		rm_log(RM_LOG_NOTICE, "metrics: serving /metrics on %s (port %u)", listen, rm_metrics_port(d->metrics));
	}
	return 0;
}

/* Without observation_point_id, the derived one (identity.h). 0, or -1 with the reason in err. */
static int derive_obs_point(struct rm_daemon *d, char *err, size_t errlen)
{
	char why[512];

	if (d->cfg.meter.observation_point_id)
		return 0;
	if (rm_identity_obs_point(d->ifname, &d->derived_obs, why, sizeof(why))) {
		rm_errf(err, errlen, "no default observationPointId for %s (%s); set observation_point_id in [meter]",
			d->ifname, why);
		return -1;
	}
	d->cfg.meter.observation_point_id = d->derived_obs;
	return 0;
}

struct rm_daemon *rm_daemon_start(const struct rm_daemon_opts *o, char *err, size_t errlen)
{
	const char *mode = o->generic ? "generic" : "native";
	struct rm_daemon *d = daemon_new(o);

	if (!d) {
		rm_errf(err, errlen, "out of memory");
		return NULL;
	}
	if (claim_pins(d, o, err, errlen) || derive_obs_point(d, err, errlen) ||
	    attach_meter(d, o, mode, err, errlen) || start_reporting(d, err, errlen))
		goto fail;
	announce(d, o, mode);
	if (start_metrics(d, o, err, errlen))
		goto fail;
	sd_notify(0, "READY=1");
	return d;
fail:
	teardown(d);
	return NULL;
}

int rm_daemon_wait(struct rm_daemon *d, int timeout_ms)
{
	int r = rm_reporter_poll(&d->rep, timeout_ms);

	if (r < 0 && r != -EINTR)
		rm_log(RM_LOG_ERR, "ring buffer: %s", strerror(-r));
	return r;
}

int rm_daemon_step(struct rm_daemon *d, unsigned int flags)
{
	uint64_t now = rm_clock_mono_ns();
	int tick;

	if (flags & RM_DAEMON_RELOAD)
		reload(d);
	if (d->sink.exporter) {
		uint64_t s = rm_exporter_session(d->sink.exporter);

		if (s != d->sink.session) {
			/* A new Transport Session starts fresh metering state for
			 * every context ([SEQOBS]): close what is open; its reports
			 * belong to no session any more. */
			d->sink.discard = 1;
			close_all(d, 0);
			d->sink.discard = 0;
			rm_ids_reset(d->rep.ids);
			d->sink.session = s;
			if (s)
				rm_log(RM_LOG_NOTICE, "export: Transport Session %" PRIu64 " established", s);
		}
	}
	/* Once a second, and at once when a link event names the interface:
	 * a carrier flap must close the open epochs before more requests join
	 * them. */
	tick = rm_reporter_tick(&d->rep, now);
	if ((tick & RM_TICK_SECOND) || rm_observe_events(&d->obs)) {
		if (check_observation(d) < 0)
			return -1;
	}
	if (tick & RM_TICK_SECOND)
		write_stats_file(d);
	publish(d);
	return 0;
}

void rm_daemon_stop(struct rm_daemon *d, int graceful)
{
	if (graceful) {
		sd_notify(0, "STOPPING=1");
		rm_log(RM_LOG_NOTICE, "stopping: final reports for every open epoch");
		/* Detach first: a request that arrived after its epoch's closure below
		 * would start an epoch that nobody reports (no request counted in an
		 * epoch without a final report). */
		close(d->link_fd);
		d->link_fd = -1;
		close_all(d, 0);
	}
	teardown(d);
}

int rm_daemon_terminate(const struct rm_ifkey *k, int pid, int timeout_ms)
{
	uint64_t start = rm_proc_start_time(pid);
	int fd = -EBUSY;

	if (!start || kill(pid, SIGTERM))
		return -1;
	/* Done when the process is gone (or its PID is another's) and the lock is free. */
	for (int waited = 0; waited < timeout_ms; waited += 100) {
		usleep(100000);
		if (rm_proc_start_time(pid) == start)
			continue;
		fd = rm_pin_lock(k, 0, NULL, 0);
		if (fd != -EBUSY)
			break;
	}
	if (fd == -EBUSY)
		return -1;
	return fd >= 0 ? fd : -ENOENT;
}
