// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* census.c - load, attach, pin and read the connection census (see census.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "census.h"
#include "census.skel.h"
#include "common/clock.h"
#include "common/errmsg.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/map_iter.h"
#include "common/paths.h"
#include "common/sort.h"

/*
 * BPF_PROG_TEST_RUN takes an XDP frame of at most about 72 KiB (a page and
 * its fragments). The program reads headers only from the first page and
 * every length from census_cfg.wire_len, so the first 64 KiB of a longer
 * frame count the same (as the meter's replay, user/meter/meter.c).
 */
#define RM_CENSUS_RUN_MAX 65536u

/* [capture] for the censuses this process loads (rm_census_set_capture()). */
static const struct rm_capture_settings *census_capture;

void rm_census_set_capture(const struct rm_capture_settings *c)
{
	census_capture = c && c->encap != RM_ENCAP_PLAIN ? c : NULL;
}

/* The mirror encapsulations as the parser's load-time constants. */
static void capture_rodata(struct census *sk)
{
	const struct rm_capture_settings *c = census_capture;

	if (!c)
		return;
	sk->rodata->rm_capture_encap = c->encap;
	sk->rodata->rm_capture_vxlan_port = c->vxlan_port;
	sk->rodata->rm_capture_rspan_vlan = c->rspan_vlan;
	sk->rodata->rm_capture_auto = c->auto_sessions ? 1 : 0;
	sk->bss->rm_auto_next = (__u32)c->n_points;
}

/* The observation_point lines: line i is observation point i + 1 of the keys. */
static int capture_sessions(struct census *sk)
{
	const struct rm_capture_settings *c = census_capture;

	for (int i = 0; c && i < c->n_points; i++) {
		struct rm_mirror_session v;
		struct rm_mirror_key k;

		rm_capture_session_entry(c, i, &k, &v);
		if (bpf_map_update_elem(bpf_map__fd(sk->maps.mirror_sessions), &k, &v, BPF_NOEXIST))
			return -errno;
	}
	return 0;
}

static void init(struct rm_census *c)
{
	memset(c, 0, sizeof(*c));
	c->map_fd = c->stats_fd = -1;
}

/* Open the skeleton, size the table and load it; 0 or -errno with err. */
static int open_load(struct rm_census *c, uint32_t max_connections, char *err, size_t errlen)
{
	int rc;

	init(c);
	rm_log_route_libbpf();
	if (max_connections < RM_CENSUS_MAX_CONNECTIONS_MIN || max_connections > RM_CENSUS_MAX_CONNECTIONS_MAX) {
		rm_errf(err, errlen, "connection table size %u is outside %u..%u", max_connections,
			RM_CENSUS_MAX_CONNECTIONS_MIN, RM_CENSUS_MAX_CONNECTIONS_MAX);
		return -EINVAL;
	}
	c->skel = census__open();
	if (!c->skel) {
		rc = -errno;
		rm_errf(err, errlen, "cannot open the census BPF object: %s", strerror(errno));
		return rc;
	}
	rc = bpf_map__set_max_entries(c->skel->maps.census, max_connections);
	capture_rodata(c->skel);
	if (!rc)
		rc = census__load(c->skel);
	if (!rc)
		rc = capture_sessions(c->skel);
	if (rc) {
		rm_errf(err, errlen,
			"the kernel refused the census BPF program (%s); run with ROCEMETER_LIBBPF_DEBUG=1 for the "
			"verifier log",
			strerror(-rc));
		census__destroy(c->skel);
		c->skel = NULL;
		return rc;
	}
	c->map_fd = bpf_map__fd(c->skel->maps.census);
	c->stats_fd = bpf_map__fd(c->skel->maps.census_stats);
	return 0;
}

int rm_census_points(const struct rm_census *c, struct rm_census_point *out, int max)
{
	struct rm_mirror_key key;
	struct rm_mirror_session v;
	struct rm_map_iter it;
	int n = 0, fd;

	if (!c->skel)
		return 0;
	fd = bpf_map__fd(c->skel->maps.mirror_sessions);
	it = rm_map_iter_start(fd, &key);
	while (n < max && rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		out[n].key = key;
		out[n].obs = v.obs;
		out[n].id = v.id ? v.id : rm_capture_auto_id(&key);
		for (int i = n; i > 0 && out[i - 1].obs > out[i].obs; i--) { /* by observation point */
			struct rm_census_point t = out[i];

			out[i] = out[i - 1];
			out[i - 1] = t;
		}
		n++;
	}
	return n;
}

int rm_census_load(struct rm_census *c, uint32_t max_connections, char *err, size_t errlen)
{
	return open_load(c, max_connections, err, errlen) ? -1 : 0;
}

int rm_census_run_frame(struct rm_census *c, const void *frame, uint32_t caplen, uint32_t wirelen, uint64_t ts_ns)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame,
		    .data_size_in = caplen < RM_CENSUS_RUN_MAX ? caplen : RM_CENSUS_RUN_MAX, .repeat = 1);

	c->skel->bss->census_cfg.now_ns = ts_ns;
	c->skel->bss->census_cfg.wire_len = wirelen;
	if (bpf_prog_test_run_opts(bpf_program__fd(c->skel->progs.rocemeter_census_xdp), &o))
		return -errno;
	return 0;
}

static void tc_hook_init(struct bpf_tc_hook *hook, int ifindex)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = ifindex;
	hook->attach_point = BPF_TC_INGRESS;
}

/* Program id of the census filter at ifindex's ingress, 0 if none. */
static __u32 tc_prog_id(int ifindex)
{
	struct bpf_tc_hook hook;
	LIBBPF_OPTS(bpf_tc_opts, q, .handle = RM_CENSUS_TC_HANDLE, .priority = RM_CENSUS_TC_PRIO);
	libbpf_print_fn_t old;
	int rc;

	tc_hook_init(&hook, ifindex);
	old = libbpf_set_print(NULL); /* no clsact yet is not an error here */
	rc = bpf_tc_query(&hook, &q);
	libbpf_set_print(old);
	return rc ? 0 : q.prog_id;
}

static int pin_paths(const struct rm_ifkey *k, char *dir, char *map, char *stats, char *err, size_t errlen)
{
	if (rm_paths_pin_dir(k, dir, PATH_MAX) || rm_paths_pin(k, RM_CENSUS_PIN_MAP, map, PATH_MAX) ||
	    rm_paths_pin(k, RM_CENSUS_PIN_STATS, stats, PATH_MAX)) {
		rm_errf(err, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

/* How messages name k: its name, or its index once it is gone. */
static const char *label(const struct rm_ifkey *k, char *buf, size_t len)
{
	if (k->ifname[0])
		return k->ifname;
	snprintf(buf, len, "ifindex %u", k->ifindex);
	return buf;
}

int rm_census_attach(struct rm_census *c, const struct rm_ifkey *k, uint32_t max_connections, int pin, char *err,
		     size_t errlen)
{
	char dir[PATH_MAX], map[PATH_MAX], stats[PATH_MAX];
	struct bpf_tc_hook hook;
	LIBBPF_OPTS(bpf_tc_opts, to, .handle = RM_CENSUS_TC_HANDLE, .priority = RM_CENSUS_TC_PRIO);
	const char *ifname = k->ifname;
	int ifindex = (int)k->ifindex, rc, pinned = 0;
	__u32 id;

	init(c);
	rc = pin_paths(k, dir, map, stats, err, errlen);
	if (rc)
		return rc;
	id = tc_prog_id(ifindex);
	if (id) {
		rm_errf(err, errlen,
			"a census is already attached to %s (program id %u): 'rocemeter status %s --connections' shows "
			"it, 'rocemeter detach %s' removes a stale one",
			ifname, id, ifname, ifname);
		return -EEXIST;
	}
	rc = open_load(c, max_connections, err, errlen);
	if (rc)
		return rc;
	c->live = 1;
	if (pin) {
		rc = rm_paths_prepare_pins(k, err, errlen);
		if (!rc &&
		    (bpf_map__pin(c->skel->maps.census, map) || bpf_map__pin(c->skel->maps.census_stats, stats))) {
			rc = -errno;
			rm_errf(err, errlen, "cannot pin the census maps under %s: %s", dir, strerror(errno));
		}
		if (rc)
			goto fail;
		pinned = 1;
	}
	tc_hook_init(&hook, ifindex);
	rc = bpf_tc_hook_create(&hook);
	if (rc && rc != -EEXIST) {
		rm_errf(err, errlen, "cannot create the clsact qdisc on %s: %s", ifname, strerror(-rc));
		goto fail;
	}
	to.prog_fd = bpf_program__fd(c->skel->progs.rocemeter_census);
	rc = bpf_tc_attach(&hook, &to); /* no BPF_TC_F_REPLACE: fails if one appeared meanwhile */
	if (rc) {
		rm_errf(err, errlen, "cannot attach the census tc filter to %s ingress: %s", ifname, strerror(-rc));
		goto fail;
	}
	c->ifindex = ifindex;
	if (pin)
		rm_census_close(c); /* the filter and the pins hold it */
	return 0;
fail:
	if (pinned) {
		unlink(map);
		unlink(stats);
		rmdir(dir); /* only if empty */
	}
	rm_census_close(c);
	return rc;
}

int rm_census_detach(const struct rm_ifkey *k, char *err, size_t errlen)
{
	char dir[PATH_MAX], map[PATH_MAX], stats[PATH_MAX], lbl[32];
	int rc, removed = 0;

	rc = pin_paths(k, dir, map, stats, err, errlen);
	if (rc)
		return rc;
	/* A vanished interface took its tc filters with it: only the pins may remain. */
	if (k->ifname[0] && tc_prog_id((int)k->ifindex)) {
		struct bpf_tc_hook hook;
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = RM_CENSUS_TC_HANDLE, .priority = RM_CENSUS_TC_PRIO);

		tc_hook_init(&hook, (int)k->ifindex);
		rc = bpf_tc_detach(&hook, &to);
		if (rc) {
			rm_errf(err, errlen, "cannot detach the census tc filter from %s: %s", k->ifname,
				strerror(-rc));
			return rc;
		}
		removed++;
	}
	for (int i = 0; i < 2; i++) {
		const char *path = i ? stats : map;

		if (unlink(path) == 0) {
			removed++;
		} else if (errno != ENOENT) {
			rc = -errno;
			rm_errf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
			return rc;
		}
	}
	if (removed > 0) {
		rmdir(dir); /* fails, as it should, while other pins remain */
		if (!rm_paths_netns_dir(k->netns, dir, sizeof(dir)))
			rmdir(dir); /* empty once the namespace's last interface is gone */
	}
	if (!removed) {
		rm_errf(err, errlen, "no census is attached to %s", label(k, lbl, sizeof(lbl)));
		return 1;
	}
	return 0;
}

int rm_census_pinned(const struct rm_ifkey *k)
{
	char path[PATH_MAX];

	return !rm_paths_pin(k, RM_CENSUS_PIN_MAP, path, sizeof(path)) && access(path, F_OK) == 0;
}

int rm_census_open_pinned(struct rm_census *c, const struct rm_ifkey *k, char *err, size_t errlen)
{
	char dir[PATH_MAX], map[PATH_MAX], stats[PATH_MAX], lbl[32];
	int rc;

	init(c);
	rc = pin_paths(k, dir, map, stats, err, errlen);
	if (rc)
		return rc;
	c->live = 1;
	c->map_fd = bpf_obj_get(map);
	if (c->map_fd < 0) {
		rc = errno == ENOENT ? 1 : -errno;
		if (rc == 1)
			rm_errf(err, errlen, "no census is attached to %s", label(k, lbl, sizeof(lbl)));
		else
			rm_errf(err, errlen, "%s: %s", map, strerror(errno));
		return rc;
	}
	c->stats_fd = bpf_obj_get(stats);
	if (c->stats_fd < 0) {
		rc = -errno;
		rm_errf(err, errlen, "%s: %s", stats, strerror(errno));
		rm_census_close(c);
		return rc;
	}
	return 0;
}

int rm_census_live(const char *ifname, uint32_t max_connections, uint32_t seconds, volatile sig_atomic_t *stop,
		   struct rm_census_result *res, char *err, size_t errlen)
{
	struct rm_census c;
	struct rm_ifkey k;
	uint64_t end;
	int rc;

	memset(res, 0, sizeof(*res));
	if (rm_ifkey_by_name(ifname, &k, err, errlen) || rm_census_attach(&c, &k, max_connections, 0, err, errlen))
		return -1;
	end = rm_clock_mono_ns() + (uint64_t)seconds * 1000000000ull;
	while (!(stop && *stop) && rm_clock_mono_ns() < end)
		usleep(100000);
	/* Detach first: what is read is then what the census counted in its time. */
	rc = rm_census_detach(&k, err, errlen);
	if (rc < 0) {
		rm_census_close(&c);
		return -1;
	}
	rc = rm_census_read(&c, res);
	rm_census_close(&c);
	if (rc) {
		rm_errf(err, errlen, "cannot read the census: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

static int cmp_u32(uint32_t a, uint32_t b)
{
	return a < b ? -1 : a > b;
}

/* Family, source, destination, QP, P_Key, VLANs: the order of the printed table. */
static int cmp_entry(const void *pa, const void *pb)
{
	const struct rm_ctx_key *a = &((const struct rm_census_entry *)pa)->key;
	const struct rm_ctx_key *b = &((const struct rm_census_entry *)pb)->key;
	int r;

	if ((r = cmp_u32(a->family, b->family)) || (r = memcmp(a->src, b->src, 16)) ||
	    (r = memcmp(a->dst, b->dst, 16)) || (r = cmp_u32(a->dest_qp, b->dest_qp)) ||
	    (r = cmp_u32(a->pkey, b->pkey)) || (r = cmp_u32(a->vlan[0], b->vlan[0])))
		return r;
	return cmp_u32(a->vlan[1], b->vlan[1]);
}

/* Add one CPU's value into the sum. */
static void add_cpu(struct rm_census_val *sum, const struct rm_census_val *v)
{
	if (!v->frames)
		return;
	for (int i = 0; i < RM_CENSUS_CLASS__COUNT; i++)
		sum->packets[i] += v->packets[i];
	for (int i = 0; i < 4; i++)
		sum->opcodes[i] |= v->opcodes[i];
	sum->malformed += v->malformed;
	sum->varies |= v->varies;
	if (sum->frames && (v->udp_sport != sum->udp_sport))
		sum->varies |= RM_CENSUS_VARIES_SPORT;
	if (sum->frames && (v->flow_label != sum->flow_label))
		sum->varies |= RM_CENSUS_VARIES_LABEL;
	if (sum->frames && v->has_src_qp && sum->has_src_qp && v->src_qp != sum->src_qp)
		sum->varies |= RM_CENSUS_VARIES_SQP;
	/* The hash fields of the earliest frame over the CPUs. */
	if (!sum->frames || v->first_ns < sum->first_ns) {
		sum->udp_sport = v->udp_sport;
		sum->flow_label = v->flow_label;
	}
	if (v->has_src_qp && (!sum->has_src_qp || v->first_ns < sum->first_ns)) {
		sum->src_qp = v->src_qp;
		sum->has_src_qp = 1;
	}
	if (!sum->frames || v->first_ns < sum->first_ns)
		sum->first_ns = v->first_ns;
	if (v->last_ns > sum->last_ns)
		sum->last_ns = v->last_ns;
	sum->frames += v->frames;
}

/* The sessions of map `mirror_unknown` into res->unknown, by kind, source, session. */
static void read_unknown(const struct rm_census *c, struct rm_census_result *res)
{
	struct rm_mirror_key key;
	struct rm_map_iter it;
	uint64_t n;
	int fd;

	if (!c->skel)
		return;
	fd = bpf_map__fd(c->skel->maps.mirror_unknown);
	it = rm_map_iter_start(fd, &key);
	while (res->n_unknown < RM_MIRROR_UNKNOWN_MAX && rm_map_iter_next(&it)) {
		struct rm_census_unknown *u = res->unknown;
		int i = res->n_unknown++;

		if (bpf_map_lookup_elem(fd, &key, &n)) {
			res->n_unknown--;
			continue;
		}
		for (; i > 0 && memcmp(&u[i - 1].key, &key, sizeof(key)) > 0; i--)
			u[i] = u[i - 1];
		u[i] = (struct rm_census_unknown){ .key = key, .frames = n };
	}
}

int rm_census_read(const struct rm_census *c, struct rm_census_result *res)
{
	int ncpu = libbpf_num_possible_cpus();
	struct rm_ctx_key key;
	struct rm_map_iter it = rm_map_iter_start(c->map_fd, &key);
	struct rm_census_stats *sv;
	struct rm_census_val *vals;
	uint64_t offset = 0;
	size_t cap = 0;
	__u32 zero = 0;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	res->n_points = rm_census_points(c, res->points, RM_OBS_MAX);
	read_unknown(c, res);
	if (ncpu <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	sv = calloc((size_t)ncpu, sizeof(*sv));
	if (!vals || !sv) {
		rc = -ENOMEM;
		goto out;
	}
	if (bpf_map_lookup_elem(c->stats_fd, &zero, sv) == 0)
		for (int cpu = 0; cpu < ncpu; cpu++)
			for (int i = 0; i < RM_CENSUS_STAT__COUNT; i++)
				res->stats[i] += sv[cpu].v[i];
	/* Live times are monotonic: one offset to UNIX time for the whole read. */
	if (c->live)
		offset = (uint64_t)rm_clock_unix_offset_ns();
	while (rm_map_iter_next(&it)) {
		struct rm_census_entry *e;

		if (bpf_map_lookup_elem(c->map_fd, &key, vals))
			continue; /* removed meanwhile */
		if (res->n == cap) {
			struct rm_census_entry *t = realloc(res->entries, (cap = cap ? cap * 2 : 64) * sizeof(*t));

			if (!t) {
				rc = -ENOMEM;
				goto out;
			}
			res->entries = t;
		}
		e = &res->entries[res->n];
		memset(e, 0, sizeof(*e));
		e->key = key;
		for (int cpu = 0; cpu < ncpu; cpu++)
			add_cpu(&e->v, &vals[cpu]);
		if (!e->v.frames)
			continue; /* inserted, not yet counted */
		e->v.first_ns += offset;
		e->v.last_ns += offset;
		res->n++;
	}
	rm_sort(res->entries, res->n, sizeof(*res->entries), cmp_entry);
out:
	free(vals);
	free(sv);
	if (rc)
		rm_census_result_free(res);
	return rc;
}

void rm_census_result_free(struct rm_census_result *res)
{
	free(res->entries);
	res->entries = NULL;
	res->n = 0;
}

void rm_census_close(struct rm_census *c)
{
	if (c->skel) {
		census__destroy(c->skel); /* closes the maps' fds */
	} else {
		if (c->map_fd >= 0)
			close(c->map_fd);
		if (c->stats_fd >= 0)
			close(c->stats_fd);
	}
	c->skel = NULL;
	c->map_fd = c->stats_fd = -1;
}
