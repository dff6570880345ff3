// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * status.c - what `rocemeter status` reads (see status.h): an interface's
 * pins into struct rm_status, the census of `attach --census`, and the
 * other network namespaces with pins. cmd_status.c prints; nothing here
 * prints to standard output.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/command.h"
#include "common/errmsg.h"
#include "common/log.h"
#include "common/map_iter.h"
#include "common/opts.h"
#include "netns.h"
#include "pins.h"
#include "status.h"

/* What the kernel says of k's pins: attached, stale, or in the hands of a starting or stopping daemon. */
static const char *meter_state(const struct rm_ifkey *k, uint32_t *prog_id)
{
	int live = rm_pin_meter_live(k, prog_id), lock;

	if (live > 0)
		return "live";
	lock = rm_pin_lock(k, 0, NULL, 0);
	if (lock == -EBUSY)
		return "busy";
	rm_pin_unlock(lock);
	return "stale";
}

/*
 * The connections a profile violation disabled (maps `violations` and
 * `contexts`) and the fail-safe of a full violations map, into status.
 */
static void read_violations(const struct rm_ifkey *k, struct rm_status *status)
{
	struct rm_violations_fds f;
	char err[512];

	if (rm_violations_open_pinned(k, &f, err, sizeof(err)))
		return; /* an attachment of an older version, or being removed */
	status->fail_safe = rm_violations_fail_safe(&f) > 0;
	status->have_violations = rm_violations_list(&f, &status->viol, &status->n_viol) == 0;
	rm_violations_close(&f);
}

/* The daemon's counters from its stats file (docs/json.md "daemon"; same mount namespace only), or NULL. */
static json_t *read_daemon(const struct rm_ifkey *k)
{
	char path[512];

	if (rm_paths_run_file(k, RM_RUN_STATS, path, sizeof(path)))
		return NULL;
	return json_load_file(path, 0, NULL);
}

/*
 * The contexts map of this build's layout? A map pinned by another version
 * is skipped (a lookup would write past struct rm_ctx), and fd closed.
 */
static int contexts_fit(int fd)
{
	if (rm_meter_map_fits(fd, sizeof(struct rm_ctx_key), sizeof(struct rm_ctx)))
		return 1;
	rm_log_cmd(RM_LOG_WARNING, "contexts pinned by another rocemeter version: not shown");
	close(fd);
	return 0;
}

/* The window pool's shape (map `windows`, docs/meter.md "Memory"), into status. */
static void read_pool(const struct rm_ifkey *k, struct rm_status *status)
{
	char path[512];
	int fd;

	if (rm_paths_pin(k, "windows", path, sizeof(path)) || (fd = bpf_obj_get(path)) < 0)
		return;
	status->have_pool = rm_meter_read_pool(fd, &status->pool) == 0;
	close(fd);
}

/* Room for one more element of *a (n of them, *cap allocated, size bytes each): 0, or -ENOMEM. */
static int grow(void **a, size_t n, size_t *cap, size_t size, size_t first)
{
	size_t ncap = *cap ? 2 * *cap : first;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*a, ncap * size);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = ncap;
	return 0;
}

/* The sessions of map `mirror_unknown` of k, when it is pinned, into status. */
static void read_unknown(const struct rm_ifkey *k, struct rm_status *status)
{
	struct rm_mirror_key key;
	struct rm_map_iter it;
	char path[512];
	size_t cap = 0;
	uint64_t n;
	int fd;

	if (rm_paths_pin(k, "mirror_unknown", path, sizeof(path)) || (fd = bpf_obj_get(path)) < 0)
		return;
	it = rm_map_iter_start(fd, &key);
	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem(fd, &key, &n))
			continue;
		if (grow((void **)&status->unknown, status->n_unknown, &cap, sizeof(*status->unknown), 16))
			break;
		status->unknown[status->n_unknown++] = (struct rm_status_unknown){ .key = key, .frames = n };
	}
	close(fd);
}

/*
 * The mirror sessions of k (maps `mirror_sessions` and `mirror_unknown`,
 * docs/deployment.md "Proving coverage of every ECMP path"), into status;
 * have_mirror stays 0 without the pins or with another version's layout.
 */
static void read_mirror(const struct rm_ifkey *k, struct rm_status *status)
{
	struct rm_mirror_session v;
	struct rm_mirror_key key;
	struct rm_map_iter it;
	char path[512];
	size_t cap = 0;
	int fd;

	if (rm_paths_pin(k, "mirror_sessions", path, sizeof(path)) || (fd = bpf_obj_get(path)) < 0)
		return;
	if (!rm_meter_map_fits(fd, sizeof(struct rm_mirror_key), sizeof(struct rm_mirror_session))) {
		rm_log_cmd(RM_LOG_WARNING, "mirror sessions pinned by another rocemeter version: not shown");
		close(fd);
		return;
	}
	status->have_mirror = 1;
	it = rm_map_iter_start(fd, &key);
	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		if (grow((void **)&status->mirror, status->n_mirror, &cap, sizeof(*status->mirror), 16))
			break;
		v.name[sizeof(v.name) - 1] = '\0';
		status->mirror[status->n_mirror++] = (struct rm_status_mirror){ .key = key, .v = v };
	}
	close(fd);
	read_unknown(k, status);
}

/* Every context of the pinned contexts map fd (closed here), in map order, into status. */
static void read_contexts(int fd, struct rm_status *status)
{
	struct rm_ctx_key key;
	struct rm_map_iter it = rm_map_iter_start(fd, &key);
	struct rm_ctx val;
	size_t cap = 0;

	status->have_contexts = 1;
	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem_flags(fd, &key, &val, BPF_F_LOCK))
			continue; /* removed meanwhile */
		if (grow((void **)&status->ctx, status->n, &cap, sizeof(*status->ctx), 256)) {
			rm_log_cmd(RM_LOG_WARNING, "out of memory: %zu contexts shown", status->n);
			break;
		}
		status->ctx[status->n].key = key;
		status->ctx[status->n].val = val;
		status->pooled += rm_seq_pooled(&val.seq);
		status->n++;
	}
	close(fd);
}

/*
 * No pins for k, yet its daemon runs: the PID file names a proved rocemeter
 * process (rm_pin_meter_pid(); the run directory is not on bpffs, so it
 * outlives removed pins). Returns its PID, *prog_id the meter's XDP program
 * on the interface (0 if the kernel names another or none); 0 if no daemon.
 */
static int running_unpinned(const struct rm_ifkey *k, uint32_t *prog_id)
{
	char why[512], name[64] = "";
	const char *mode;
	uint32_t id = 0;
	int pid = rm_pin_meter_pid(k, why, sizeof(why));

	if (pid <= 0)
		return 0;
	if (rm_xdp_attached(k->ifindex, &id, name, sizeof(name), &mode) > 0 && !strncmp(name, "rocemeter_xdp", 13))
		*prog_id = id;
	return pid;
}

void rm_status_read(const struct rm_ifkey *k, struct rm_status *status)
{
	char path[512];
	int stats_fd, ctx_fd;

	memset(status, 0, sizeof(*status));
	rm_paths_pin_dir(k, status->dir, sizeof(status->dir));
	if (rm_paths_pin(k, "stats", path, sizeof(path)) || (stats_fd = bpf_obj_get(path)) < 0) {
		status->unpinned_pid = running_unpinned(k, &status->prog_id);
		if (!status->unpinned_pid)
			status->fl_pinned = !rm_paths_pin(k, "fl_stats", path, sizeof(path)) && !access(path, F_OK);
		return;
	}
	status->attached = 1;
	status->have_stats = rm_meter_read_stats(stats_fd, status->stats) == 0;
	close(stats_fd);
	if (!rm_paths_pin(k, "contexts", path, sizeof(path)) && (ctx_fd = bpf_obj_get(path)) >= 0 &&
	    contexts_fit(ctx_fd))
		read_contexts(ctx_fd, status);
	read_pool(k, status);
	read_violations(k, status);
	read_mirror(k, status);
	/* Liveness from the kernel: is the pinned program the interface's XDP program? */
	status->state = meter_state(k, &status->prog_id);
	if (strcmp(status->state, "stale"))
		status->daemon = read_daemon(k);
}

void rm_status_free(struct rm_status *status)
{
	free(status->ctx);
	free(status->viol);
	free(status->mirror);
	free(status->unknown);
	json_decref(status->daemon);
}

int rm_status_census(const struct rm_ifkey *k, const char *label, struct rm_census_result *res, char *err,
		     size_t errlen)
{
	struct rm_census c;
	int rc = rm_census_open_pinned(&c, k, err, errlen);

	if (rc == 1)
		return 1;
	if (rc == 0 && (rc = rm_census_read(&c, res)) < 0)
		rm_errf(err, errlen, "cannot read the census of %s: %s", label, strerror(-rc));
	rm_census_close(&c);
	return rc;
}

int rm_status_other_netns(int (*fn)(uint64_t netns, const char *path, void *arg), void *arg)
{
	uint64_t own = rm_paths_netns(), ns;
	char root[512], path[512];
	int self, self_err, worst = 0, rc;
	struct dirent *e;
	DIR *d;

	snprintf(root, sizeof(root), "%s/rocemeter", rm_paths_bpffs());
	d = opendir(root);
	if (!d)
		return 0;
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	self_err = self < 0 ? errno : 0;
	while ((e = readdir(d))) {
		if (rm_parse_uint(e->d_name, 1, UINT64_MAX, &ns) || ns == own)
			continue;
		if (rm_netns_path(ns, path, sizeof(path))) {
			path[0] = '\0';
		} else if (self < 0 || (rc = rm_netns_enter(path))) {
			/* Held, so not stale, but not readable from here. */
			rm_log_cmd(RM_LOG_WARNING, "network namespace %" PRIu64 " (%s) not read: cannot enter it: %s",
				   ns, path, strerror(self < 0 ? self_err : -rc));
			continue;
		}
		rc = fn(ns, path, arg);
		worst = rc > worst ? rc : worst;
		if (path[0] && setns(self, CLONE_NEWNET)) {
			rm_log_cmd(RM_LOG_ERR, "cannot return to the network namespace: %s", strerror(errno));
			exit(RM_EXIT_FAIL);
		}
	}
	closedir(d);
	if (self >= 0)
		close(self);
	return worst;
}
