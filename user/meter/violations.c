// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* violations.c - list and re-enable violated connections (see violations.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/errmsg.h"
#include "common/log.h"
#include "common/map_iter.h"
#include "common/paths.h"
#include "pins.h"
#include "provision.h"
#include "rocemeter/bth.h"
#include "violations.h"
#include "common/sort.h"

void rm_violations_fds_of(const struct rm_meter *m, struct rm_violations_fds *f)
{
	f->violations_fd = m->violations_fd;
	f->viol_state_fd = m->viol_state_fd;
	f->contexts_fd = m->contexts_fd;
	f->ctl_fd = m->ctl_fd;
	f->own = 0;
}

static int open_pin(const struct rm_ifkey *k, const char *name, int *fd, char *err, size_t errlen)
{
	char path[512];

	if (rm_paths_pin(k, name, path, sizeof(path))) {
		rm_errf(err, errlen, "pin path for %s too long", k->ifname);
		return -ENAMETOOLONG;
	}
	*fd = bpf_obj_get(path);
	if (*fd < 0) {
		int e = -errno;

		if (e == -ENOENT)
			rm_errf(err, errlen, "the meter is not attached to %s (no %s)", k->ifname, path);
		else
			rm_errf(err, errlen, "%s: %s", path, strerror(-e));
		return e;
	}
	return 0;
}

int rm_violations_open_pinned(const struct rm_ifkey *k, struct rm_violations_fds *f, char *err, size_t errlen)
{
	int e;

	memset(f, 0, sizeof(*f));
	f->violations_fd = f->viol_state_fd = f->contexts_fd = f->ctl_fd = -1;
	f->own = 1;
	if ((e = open_pin(k, "violations", &f->violations_fd, err, errlen)) ||
	    (e = open_pin(k, "viol_state", &f->viol_state_fd, err, errlen)) ||
	    (e = open_pin(k, "contexts", &f->contexts_fd, err, errlen)) ||
	    (e = open_pin(k, RM_PIN_CTL, &f->ctl_fd, err, errlen))) {
		rm_violations_close(f);
		return e;
	}
	if (!rm_meter_map_fits(f->violations_fd, sizeof(struct rm_ctx_key), sizeof(struct rm_violation)) ||
	    !rm_meter_map_fits(f->viol_state_fd, sizeof(__u32), sizeof(struct rm_viol_state)) ||
	    !rm_meter_map_fits(f->contexts_fd, sizeof(struct rm_ctx_key), sizeof(struct rm_ctx))) {
		rm_errf(err, errlen, "the pins of %s come from another rocemeter version", k->ifname);
		rm_violations_close(f);
		return -EPROTO;
	}
	return 0;
}

void rm_violations_close(struct rm_violations_fds *f)
{
	if (!f->own)
		return;
	if (f->violations_fd >= 0)
		close(f->violations_fd);
	if (f->viol_state_fd >= 0)
		close(f->viol_state_fd);
	if (f->contexts_fd >= 0)
		close(f->contexts_fd);
	if (f->ctl_fd >= 0)
		close(f->ctl_fd);
	f->violations_fd = f->viol_state_fd = f->contexts_fd = f->ctl_fd = -1;
}

static int by_key(const void *a, const void *b)
{
	return memcmp(&((const struct rm_violation_entry *)a)->key, &((const struct rm_violation_entry *)b)->key,
		      sizeof(struct rm_ctx_key));
}

static int append(struct rm_violation_entry **v, size_t *n, size_t *cap, const struct rm_violation_entry *e)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		struct rm_violation_entry *t = realloc(*v, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		*v = t;
		*cap = c;
	}
	(*v)[(*n)++] = *e;
	return 0;
}

int rm_violations_list(const struct rm_violations_fds *f, struct rm_violation_entry **out, size_t *n)
{
	struct rm_violation_entry *v = NULL, e;
	struct rm_ctx_key key;
	struct rm_map_iter it = rm_map_iter_start(f->violations_fd, &key);
	size_t cnt = 0, cap = 0, in_map;
	struct rm_ctx ctx;

	while (rm_map_iter_next(&it)) {
		memset(&e, 0, sizeof(e));
		e.key = key;
		e.in_map = 1;
		if (bpf_map_lookup_elem(f->violations_fd, &key, &e.v))
			continue; /* re-enabled meanwhile */
		if (append(&v, &cnt, &cap, &e))
			goto nomem;
	}
	in_map = cnt;
	rm_sort(v, in_map, sizeof(*v), by_key);
	/* Contexts that hold a violation the map could not (it was full). */
	it = rm_map_iter_start(f->contexts_fd, &key);
	while (rm_map_iter_next(&it)) {
		if (bpf_map_lookup_elem_flags(f->contexts_fd, &key, &ctx, BPF_F_LOCK) ||
		    !rm_ctx_flag(&ctx, RM_CTX_VIOLATED))
			continue;
		memset(&e, 0, sizeof(e));
		e.key = key;
		if (in_map && bsearch(&e, v, in_map, sizeof(*v), by_key))
			continue;
		if (append(&v, &cnt, &cap, &e))
			goto nomem;
	}
	rm_sort(v, cnt, sizeof(*v), by_key);
	*out = v;
	*n = cnt;
	return 0;
nomem:
	free(v);
	return -ENOMEM;
}

int rm_violations_reenable(const struct rm_violations_fds *f, const struct rm_ctx_key *key)
{
	struct rm_ctl c;
	int e;

	memset(&c, 0, sizeof(c));
	c.op = RM_CTL_REENABLE;
	c.key = *key;
	e = rm_meter_ctl_fd(f->ctl_fd, &c);
	if (e)
		return e;
	return c.status == RM_CTL_OK;
}

int rm_violations_fail_safe(const struct rm_violations_fds *f)
{
	struct rm_viol_state vs;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(f->viol_state_fd, &zero, &vs))
		return -errno;
	return vs.fail_safe != 0;
}

int rm_violations_clear_fail_safe(const struct rm_violations_fds *f)
{
	struct rm_ctl c;

	memset(&c, 0, sizeof(c));
	c.op = RM_CTL_CLEAR_FAIL_SAFE;
	return rm_meter_ctl_fd(f->ctl_fd, &c);
}

/* The pattern of pat[0..npat) that covers key, or -1; npat < 0: every key. */
static int covering(const struct rm_provision *pat, int npat, const struct rm_ctx_key *key)
{
	if (npat < 0)
		return 0;
	for (int p = 0; p < npat; p++)
		if (rm_prov_line_covers(&pat[p], key))
			return p;
	return -1;
}

/* Re-enable the listed connections that the patterns cover (npat < 0: all). */
static int reenable_covered(const struct rm_violations_fds *f, const struct rm_violation_entry *v, size_t n,
			    const struct rm_provision *pat, int npat, struct rm_ctx_key **done, size_t *ndone)
{
	struct rm_ctx_key *keys = calloc(n ? n : 1, sizeof(*keys));
	size_t k = 0;
	int e = 0;

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int r;

		if (covering(pat, npat, &v[i].key) < 0)
			continue;
		r = rm_violations_reenable(f, &v[i].key);
		if (r < 0) {
			e = r;
			break;
		}
		if (r > 0)
			keys[k++] = v[i].key;
	}
	*done = keys;
	*ndone = k;
	return e;
}

int rm_violations_reenable_matching(const struct rm_violations_fds *f, const struct rm_provision *pat, int npat,
				    int *unmatched, struct rm_ctx_key **done, size_t *ndone)
{
	struct rm_violation_entry *v = NULL;
	size_t n = 0;
	int e;

	*unmatched = -1;
	*done = NULL;
	*ndone = 0;
	e = rm_violations_list(f, &v, &n);
	if (e)
		return e;
	/* Every pattern must name a disabled connection: else change nothing. */
	for (int p = 0; p < npat && *unmatched < 0; p++) {
		size_t i = 0;

		while (i < n && !rm_prov_line_covers(&pat[p], &v[i].key))
			i++;
		if (i == n)
			*unmatched = p;
	}
	if (*unmatched < 0)
		e = reenable_covered(f, v, n, pat, npat, done, ndone);
	free(v);
	return e;
}

int rm_violations_reenable_all(const struct rm_violations_fds *f, int *was_fail_safe, struct rm_ctx_key **done,
			       size_t *ndone)
{
	struct rm_violation_entry *v = NULL;
	size_t n = 0;
	int e;

	*done = NULL;
	*ndone = 0;
	*was_fail_safe = rm_violations_fail_safe(f) > 0;
	e = rm_violations_list(f, &v, &n);
	if (!e)
		e = reenable_covered(f, v, n, NULL, -1, done, ndone);
	free(v);
	/* The connections a lost violation disabled are unknown: --all
	 * re-enables them too, by leaving the fail-safe. */
	if (!e)
		e = rm_violations_clear_fail_safe(f);
	return e;
}

void rm_violations_format_key(const struct rm_ctx_key *k, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int af = k->family == 6 ? AF_INET6 : AF_INET;
	size_t n;

	inet_ntop(af, k->src, src, sizeof(src));
	inet_ntop(af, k->dst, dst, sizeof(dst));
	snprintf(buf, len, "%s > %s qp 0x%06x pkey 0x%04x", src, dst, k->dest_qp, k->pkey);
	n = strlen(buf);
	if (k->vlan[0] || k->vlan[1])
		snprintf(buf + n, len - n, " vlan %u/%u", k->vlan[0], k->vlan[1]);
}

const char *rm_violation_cause_name(int cause)
{
	switch (cause) {
	case RM_VIOLATION_UNSUPPORTED:
		return "unsupported";
	case RM_VIOLATION_MALFORMED:
		return "malformed";
	case RM_VIOLATION_FOREIGN:
		return "foreign";
	default:
		return "?";
	}
}

void rm_violations_describe(const struct rm_violation_entry *e, char *buf, size_t len)
{
	const char *name = rm_opcode_name(e->v.opcode);

	if (!e->in_map)
		snprintf(buf, len, "opcode unknown (held by its context: the violations map was full)");
	else if (name)
		snprintf(buf, len, "%s (opcode 0x%02x) at PSN %u, %s", name, e->v.opcode, e->v.psn,
			 rm_violation_cause_name(e->v.cause));
	else
		snprintf(buf, len, "opcode 0x%02x at PSN %u, %s", e->v.opcode, e->v.psn,
			 rm_violation_cause_name(e->v.cause));
}

struct rm_violations_logged {
	struct rm_violation_entry *v; /* the disabled connections logged, sorted by key */
	size_t n;
};

struct rm_violations_logged *rm_violations_logged_new(void)
{
	return calloc(1, sizeof(struct rm_violations_logged));
}

void rm_violations_logged_free(struct rm_violations_logged *l)
{
	if (l)
		free(l->v);
	free(l);
}

/* One line per connection, with the fields journald keeps (the daemon's IFACE among them). */
static void log_violation(const struct rm_violation_entry *e, const char *ifname)
{
	char key[128], what[160], op[8], psn[12];
	const char *name = rm_opcode_name(e->v.opcode);
	struct rm_log_field f[] = { { "CONNECTION", key },
				    { "VIOLATION", e->in_map ? rm_violation_cause_name(e->v.cause) : "unknown" },
				    { "OPCODE", op },
				    { "OPCODE_NAME", name ? name : "" },
				    { "PSN", psn } };

	rm_violations_format_key(&e->key, key, sizeof(key));
	rm_violations_describe(e, what, sizeof(what));
	snprintf(op, sizeof(op), "0x%02x", e->v.opcode);
	snprintf(psn, sizeof(psn), "%u", e->v.psn);
	rm_log_fields(RM_LOG_WARNING, f, e->in_map ? 5 : 2,
		      "profile violation on %s: %s; epoch closed with profileViolation, connection not metered "
		      "until reprovisioned ('rocemeter reenable %s')",
		      key, what, ifname);
}

int rm_violations_log_new(const struct rm_violations_fds *f, struct rm_violations_logged *l, const char *ifname)
{
	struct rm_violation_entry *v = NULL;
	size_t n = 0;
	int e, lines = 0;

	e = rm_violations_list(f, &v, &n);
	if (e)
		return e;
	for (size_t i = 0; i < n; i++) {
		const struct rm_violation_entry *old = l->n ? bsearch(&v[i], l->v, l->n, sizeof(*v), by_key) : NULL;

		/* Logged already, unless it was re-enabled and violated again since. */
		if (old && old->in_map == v[i].in_map && old->v.first_ns == v[i].v.first_ns)
			continue;
		log_violation(&v[i], ifname);
		lines++;
	}
	/* Re-enabled connections leave the set: a new violation logs again. */
	free(l->v);
	l->v = v;
	l->n = n;
	return lines;
}
