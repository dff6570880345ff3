// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flowlabel.c - [FLOWLABEL] in userspace: the label of a connection, and the
 * attach/detach/status API of the tc program bpf/flowlabel.bpf.c (see
 * flowlabel.h for the contracts).
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/errmsg.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/paths.h"
#include "flowlabel.h"
#include "flowlabel.skel.h"

const char *const rm_flowlabel_variant_names[RM_FL__VARIANTS + 1] = {
	[RM_FL_LITERAL] = "literal",
	[RM_FL_CRC32] = "crc32",
	[RM_FL_CRC32C] = "crc32c",
	[RM_FL_MPEG2] = "mpeg2",
};

#define RM_FL_STAT_NAME_(suffix, name, desc) name,
static const char *const stat_names[RM_FL_STAT__COUNT] = { RM_FL_STATS(RM_FL_STAT_NAME_) };
#define RM_FL_STAT_DESC_(suffix, name, desc) desc,
static const char *const stat_descs[RM_FL_STAT__COUNT] = { RM_FL_STATS(RM_FL_STAT_DESC_) };

int rm_flowlabel_variant_from_name(const char *name)
{
	for (int i = 0; name && i < RM_FL__VARIANTS; i++)
		if (!strcmp(name, rm_flowlabel_variant_names[i]))
			return i;
	return -1;
}

const char *rm_flowlabel_variant_name(uint32_t variant)
{
	return variant < RM_FL__VARIANTS ? rm_flowlabel_variant_names[variant] : "?";
}

int rm_flowlabel_direction_from_name(const char *name)
{
	if (name && !strcmp(name, "ingress"))
		return RM_FL_INGRESS;
	if (name && !strcmp(name, "egress"))
		return RM_FL_EGRESS;
	return -1;
}

const char *rm_flowlabel_direction_name(int direction)
{
	return direction == RM_FL_INGRESS ? "ingress" : direction == RM_FL_EGRESS ? "egress" : "?";
}

uint32_t rm_flowlabel_compute(const struct rm_fl_params *p, const struct in6_addr *src, const struct in6_addr *dst,
			      int has_sqp, uint32_t sqp, uint32_t dqp, uint32_t *hash32)
{
	struct rm_fl_sliced tabs; /* 10 KiB */
	__u8 in[RM_FL_INPUT_MAX];
	__u32 len, h;

	rm_fl_sliced_init(p, &tabs);
	len = rm_fl_input(in, has_sqp, sqp & 0xffffff, dqp & 0xffffff, &src->s6_addr[14], &dst->s6_addr[14]);
	h = rm_fl_crc_sliced(p, &tabs, in, len);
	if (hash32)
		*hash32 = h;
	return rm_fl_label(h);
}

/* Open the skeleton and set its .rodata from opts (not loaded yet). */
static struct flowlabel *open_configured(const struct rm_flowlabel_opts *opts, char *err, size_t errlen)
{
	struct rm_fl_params p = { .variant = opts->variant, .mix = opts->mix ? 1 : 0, .seed = opts->seed };
	struct flowlabel *skel;

	if (opts->variant >= RM_FL__VARIANTS) {
		rm_errf(err, errlen, "unknown hash variant %u", opts->variant);
		errno = EINVAL;
		return NULL;
	}
	skel = flowlabel__open();
	if (!skel) {
		rm_errf(err, errlen, "cannot open the flow-label BPF object: %s", strerror(errno));
		return NULL;
	}
	skel->rodata->fl_variant = p.variant;
	skel->rodata->fl_mix = p.mix;
	skel->rodata->fl_seed = p.seed;
	rm_fl_sliced_init(&p, (struct rm_fl_sliced *)&skel->rodata->fl_tabs);
	return skel;
}

struct flowlabel *rm_flowlabel_open_load(const struct rm_flowlabel_opts *opts, char *err, size_t errlen)
{
	struct flowlabel *skel = open_configured(opts, err, errlen);
	int rc;

	if (!skel)
		return NULL;
	rc = flowlabel__load(skel);
	if (rc) {
		rm_errf(err, errlen, "cannot load the flow-label BPF program: %s", strerror(-rc));
		flowlabel__destroy(skel);
		errno = -rc;
		return NULL;
	}
	return skel;
}

static int check_ifname(const char *ifname, char *err, size_t errlen)
{
	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE || strchr(ifname, '/') || !strcmp(ifname, ".") ||
	    !strcmp(ifname, "..")) {
		rm_errf(err, errlen, "invalid interface name '%s'", ifname ? ifname : "");
		return -EINVAL;
	}
	return 0;
}

static void tc_hook_init(struct bpf_tc_hook *hook, int ifindex, int direction)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = ifindex;
	hook->attach_point = direction == RM_FL_INGRESS ? BPF_TC_INGRESS : BPF_TC_EGRESS;
}

/* Program id of our filter in `direction`, 0 if none. */
static __u32 tc_prog_id(int ifindex, int direction)
{
	struct bpf_tc_hook hook;
	LIBBPF_OPTS(bpf_tc_opts, q, .handle = RM_FL_TC_HANDLE, .priority = RM_FL_TC_PRIO);
	libbpf_print_fn_t old;
	int rc;

	tc_hook_init(&hook, ifindex, direction);
	old = libbpf_set_print(NULL); /* no clsact yet is not an error here */
	rc = bpf_tc_query(&hook, &q);
	libbpf_set_print(old);
	return rc ? 0 : q.prog_id;
}

int rm_flowlabel_attach(const char *ifname, const struct rm_flowlabel_opts *opts, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct rm_ifkey key;
	struct flowlabel *skel;
	struct bpf_tc_hook hook;
	LIBBPF_OPTS(bpf_tc_opts, to, .handle = RM_FL_TC_HANDLE, .priority = RM_FL_TC_PRIO);
	int ifindex, rc, pinned_before;
	__u32 id;

	rc = check_ifname(ifname, err, errlen);
	if (rc)
		return rc;
	if (opts->direction != RM_FL_INGRESS && opts->direction != RM_FL_EGRESS) {
		rm_errf(err, errlen, "direction must be ingress or egress");
		return -EINVAL;
	}
	ifindex = (int)if_nametoindex(ifname);
	if (!ifindex) {
		rm_errf(err, errlen, "no interface '%s': %s", ifname, strerror(errno));
		return -ENODEV;
	}
	id = tc_prog_id(ifindex, opts->direction);
	if (id) {
		rm_errf(err, errlen,
			"the flow-label program is already attached to %s %s (program id %u); detach it first", ifname,
			rm_flowlabel_direction_name(opts->direction), id);
		return -EEXIST;
	}
	rc = rm_ifkey_by_name(ifname, &key, err, errlen);
	if (rc)
		return rc;
	if (rm_paths_pin_dir(&key, dir, sizeof(dir)) || rm_paths_pin(&key, RM_FL_PIN_NAME, path, sizeof(path))) {
		rm_errf(err, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	/* The meter's rule: a bpffs is mounted where none is. */
	rc = rm_paths_prepare_pins(&key, err, errlen);
	if (rc)
		return rc;
	pinned_before = access(path, F_OK) == 0;

	skel = open_configured(opts, err, errlen);
	if (!skel) {
		rc = errno ? -errno : -EINVAL;
		goto out;
	}
	/* Reuses the pin of the other direction if there is one, else pins at load. */
	rc = bpf_map__set_pin_path(skel->maps.fl_stats, path);
	if (!rc)
		rc = flowlabel__load(skel);
	if (rc) {
		rm_errf(err, errlen, "cannot load the flow-label BPF program: %s", strerror(-rc));
		goto out;
	}
	tc_hook_init(&hook, ifindex, opts->direction);
	rc = bpf_tc_hook_create(&hook);
	if (rc && rc != -EEXIST) {
		rm_errf(err, errlen, "cannot create the clsact qdisc on %s: %s", ifname, strerror(-rc));
		goto out;
	}
	to.prog_fd = bpf_program__fd(skel->progs.rocemeter_fl);
	rc = bpf_tc_attach(&hook, &to); /* no BPF_TC_F_REPLACE: fails if one appeared meanwhile */
	if (rc) {
		rm_errf(err, errlen, "cannot attach the tc filter to %s %s: %s", ifname,
			rm_flowlabel_direction_name(opts->direction), strerror(-rc));
		goto out;
	}
out:
	if (rc && !pinned_before) {
		unlink(path);
		rmdir(dir); /* only if empty */
		if (!rm_paths_netns_dir(key.netns, dir, sizeof(dir)))
			rmdir(dir);
	}
	flowlabel__destroy(skel); /* the filter keeps the program alive */
	return rc;
}

int rm_flowlabel_detach(const char *ifname, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct rm_ifkey key;
	int ifindex, rc, removed = 0;

	rc = check_ifname(ifname, err, errlen);
	if (rc)
		return rc;
	/* Pins are keyed by ifindex: those of a vanished interface are `detach --ifindex`'s. */
	rc = rm_ifkey_by_name(ifname, &key, err, errlen);
	if (rc)
		return rc;
	if (rm_paths_pin_dir(&key, dir, sizeof(dir)) || rm_paths_pin(&key, RM_FL_PIN_NAME, path, sizeof(path))) {
		rm_errf(err, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	ifindex = (int)key.ifindex;
	for (int d = RM_FL_INGRESS; ifindex && d <= RM_FL_EGRESS; d++) {
		struct bpf_tc_hook hook;
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = RM_FL_TC_HANDLE, .priority = RM_FL_TC_PRIO);

		if (!tc_prog_id(ifindex, d))
			continue;
		tc_hook_init(&hook, ifindex, d);
		rc = bpf_tc_detach(&hook, &to);
		if (rc) {
			rm_errf(err, errlen, "cannot detach the tc filter from %s %s: %s", ifname,
				rm_flowlabel_direction_name(d), strerror(-rc));
			return rc;
		}
		removed++;
	}
	if (unlink(path) == 0)
		removed++;
	else if (errno != ENOENT) {
		rm_errf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
		return -errno;
	}
	rmdir(dir); /* fails, as it should, while other pins remain */
	if (!rm_paths_netns_dir(key.netns, dir, sizeof(dir)))
		rmdir(dir); /* the namespace's directory, once empty */
	if (!removed) {
		rm_errf(err, errlen, "the flow-label program is not attached to %s", ifname);
		return 1;
	}
	return 0;
}

/* Variant, mix and seed of a loaded program, read from its .rodata map. */
static int prog_config(__u32 prog_id, struct flowlabel__rodata *ro)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), map_ids[16];
	int fd, found = -ENOENT;

	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return -errno;
	info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	info.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		close(fd);
		return -errno;
	}
	close(fd);
	for (__u32 i = 0; i < info.nr_map_ids && i < 16 && found; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi), key = 0;
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);
		size_t n;

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen)) {
			n = strlen(mi.name);
			if (n >= 7 && !strcmp(mi.name + n - 7, ".rodata") && mi.value_size == sizeof(*ro) &&
			    !bpf_map_lookup_elem(mfd, &key, ro))
				found = 0;
		}
		close(mfd);
	}
	return found;
}

/* What status reports: the attached directions and the statistics summed over CPUs. */
struct fl_status {
	__u64 sums[RM_FL_STAT__COUNT], total;
	struct {
		__u32 prog_id;   /* 0: not attached */
		int have_config; /* ro read from the program's .rodata */
		struct flowlabel__rodata ro;
	} dir[RM_FL_EGRESS + 1];
};

/* Fill status for ifname. 0, 1 if not attached (nothing pinned), or a negative errno (logged). */
static int read_status(const char *ifname, struct fl_status *status)
{
	char path[PATH_MAX], err[128];
	struct rm_ifkey key;
	__u64 *vals;
	int fd, ncpu, ifindex;

	memset(status, 0, sizeof(*status));
	if (check_ifname(ifname, err, sizeof(err))) {
		rm_log(RM_LOG_ERR, "%s", err);
		return -EINVAL;
	}
	if (rm_ifkey_by_name(ifname, &key, err, sizeof(err)))
		return 1;
	if (rm_paths_pin(&key, RM_FL_PIN_NAME, path, sizeof(path)))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return 1;
		rm_log(RM_LOG_ERR, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		close(fd);
		rm_log(RM_LOG_ERR, "cannot count CPUs: %s", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals) {
		close(fd);
		return -ENOMEM;
	}
	for (__u32 k = 0; k < RM_FL_STAT__COUNT; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			status->sums[k] += vals[c];
		status->total += status->sums[k];
	}
	free(vals);
	close(fd);

	ifindex = (int)if_nametoindex(ifname);
	for (int d = RM_FL_INGRESS; d <= RM_FL_EGRESS; d++) {
		status->dir[d].prog_id = ifindex ? tc_prog_id(ifindex, d) : 0;
		status->dir[d].have_config =
			status->dir[d].prog_id && prog_config(status->dir[d].prog_id, &status->dir[d].ro) == 0;
	}
	return 0;
}

json_t *rm_flowlabel_status_json(const char *ifname)
{
	struct fl_status status;
	json_t *o, *att, *stats;
	int rc = read_status(ifname, &status);

	if (rc)
		return rc > 0 ? json_null() : NULL;
	o = json_object();
	att = json_object();
	stats = json_object();
	if (!o || !att || !stats) {
		json_decref(o);
		json_decref(att);
		json_decref(stats);
		return NULL;
	}
	json_object_set_new(o, "interface", rm_json_text(ifname));
	for (int d = RM_FL_INGRESS; d <= RM_FL_EGRESS; d++) {
		json_t *v = json_null();

		if (status.dir[d].prog_id) {
			v = json_object();
			json_object_set_new(v, "prog_id", json_integer(status.dir[d].prog_id));
			if (status.dir[d].have_config) {
				json_object_set_new(
					v, "hash", json_string(rm_flowlabel_variant_name(status.dir[d].ro.fl_variant)));
				json_object_set_new(v, "mix", json_boolean(status.dir[d].ro.fl_mix));
				json_object_set_new(v, "seeded", json_boolean(status.dir[d].ro.fl_seed));
			}
		}
		json_object_set_new(att, rm_flowlabel_direction_name(d), v);
	}
	json_object_set_new(o, "attached", att);
	for (int k = 0; k < RM_FL_STAT__COUNT; k++)
		json_object_set_new(stats, stat_names[k], rm_json_u64(status.sums[k]));
	json_object_set_new(o, "stats", stats);
	json_object_set_new(o, "frames", rm_json_u64(status.total));
	return o;
}

int rm_flowlabel_status(const char *ifname, FILE *out, int json)
{
	struct fl_status status;
	int rc;

	if (json) {
		json_t *v = rm_flowlabel_status_json(ifname);

		if (!v)
			return -ENOMEM;
		if (json_is_null(v)) {
			json_decref(v);
			return 1;
		}
		return rm_json_write(out, v);
	}
	rc = read_status(ifname, &status);
	if (rc == 1)
		fprintf(out, "flowlabel: not attached to %s\n", ifname);
	if (rc)
		return rc;
	fprintf(out, "flowlabel on %s:\n", ifname);
	for (int d = RM_FL_INGRESS; d <= RM_FL_EGRESS; d++) {
		const char *name = rm_flowlabel_direction_name(d);

		if (!status.dir[d].prog_id)
			fprintf(out, "  %-8s not attached\n", name);
		else if (!status.dir[d].have_config)
			fprintf(out, "  %-8s program id %u\n", name, status.dir[d].prog_id);
		else
			fprintf(out, "  %-8s program id %u, hash %s, mix %s, seed %s\n", name, status.dir[d].prog_id,
				rm_flowlabel_variant_name(status.dir[d].ro.fl_variant),
				status.dir[d].ro.fl_mix ? "on" : "off", status.dir[d].ro.fl_seed ? "set" : "none");
	}
	fprintf(out, "statistics (frames, all CPUs):\n");
	for (int k = 0; k < RM_FL_STAT__COUNT; k++)
		fprintf(out, "  %-15s %12llu  %s\n", stat_names[k], (unsigned long long)status.sums[k], stat_descs[k]);
	fprintf(out, "  %-15s %12llu\n", "frames", (unsigned long long)status.total);
	return 0;
}
