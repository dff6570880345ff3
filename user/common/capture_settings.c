// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * capture_settings.c - the [capture] section (capture_settings.h): mirror encapsulations,
 * the VXLAN port, the RSPAN VLAN and the observation_point lines that map
 * a mirror session to an observationPointId. config.c hands it the keys.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "addr.h"
#include "capture_settings.h"
#include "errmsg.h"
#include "jsonw.h"
#include "opts.h"
#include "safe_text.h"

static const struct {
	const char *name;
	uint32_t bits;
} encap_names[] = {
	{ "plain", RM_ENCAP_PLAIN },
	{ "erspan1", RM_ENCAP_ERSPAN1 },
	{ "erspan2", RM_ENCAP_ERSPAN2 },
	{ "erspan3", RM_ENCAP_ERSPAN3 },
	{ "erspan", RM_ENCAP_ERSPAN1 | RM_ENCAP_ERSPAN2 | RM_ENCAP_ERSPAN3 },
	{ "vxlan", RM_ENCAP_VXLAN },
	{ "rspan", RM_ENCAP_RSPAN },
	{ "auto", RM_ENCAP_PLAIN | RM_ENCAP_MIRROR },
};

int rm_capture_parse_encap(const char *text, uint32_t *out, char *err, size_t errlen)
{
	char buf[256], *save = NULL, *tok;
	uint32_t bits = 0;

	if (strlen(text) >= sizeof(buf)) {
		rm_errf(err, errlen, "encapsulation: too long");
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		size_t i;

		for (i = 0; i < sizeof(encap_names) / sizeof(encap_names[0]); i++)
			if (!strcasecmp(tok, encap_names[i].name))
				break;
		if (i == sizeof(encap_names) / sizeof(encap_names[0])) {
			rm_errf(err, errlen,
				"encapsulation: '%s' is not plain, erspan, erspan1, erspan2, erspan3, vxlan, rspan "
				"or auto",
				tok);
			return -EINVAL;
		}
		bits |= encap_names[i].bits;
	}
	if (!bits) {
		rm_errf(err, errlen, "encapsulation: empty (plain, erspan, erspan1, erspan2, erspan3, vxlan, rspan)");
		return -EINVAL;
	}
	*out = bits;
	return 0;
}

const char *rm_capture_key_text(const struct rm_mirror_key *k, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN] = "";

	if (k->kind == RM_MIRROR_ERSPAN)
		inet_ntop(k->family == 6 ? AF_INET6 : AF_INET, k->src, src, sizeof(src));
	snprintf(buf, len, "%s%s%s session %u", rm_capture_kind_name(k->kind), src[0] ? " " : "", src, k->session);
	return buf;
}

json_t *rm_capture_key_json(const struct rm_mirror_key *k)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "kind", json_string(rm_capture_kind_name(k->kind)));
	if (k->kind == RM_MIRROR_ERSPAN)
		json_object_set_new(o, "source", rm_json_addr(k->family, k->src));
	json_object_set_new(o, "session", json_integer(k->session));
	return o;
}

const char *rm_capture_kind_name(int kind)
{
	switch (kind) {
	case RM_MIRROR_ERSPAN:
		return "erspan";
	case RM_MIRROR_VXLAN:
		return "vxlan";
	case RM_MIRROR_RSPAN:
		return "rspan";
	default:
		return "plain";
	}
}

/* observation_point = ID NAME erspan SRC SESSION | ID NAME vxlan VNI | ID NAME rspan VLAN */
static int obs_line(struct rm_capture_settings *c, const char *value, int line, char *err, size_t errlen)
{
	char id[32], name[128], kind[16], a[64], b[32], extra[8], shown[600];
	const char *bad;
	struct rm_obs_line *p;
	uint64_t x;
	int n = sscanf(value, "%31s %127s %15s %63s %31s %7s", id, name, kind, a, b, extra);

	if (c->n_points >= RM_OBS_MAX) {
		rm_errf(err, errlen, "observation_point: at most %d lines", RM_OBS_MAX);
		return -EINVAL;
	}
	p = &c->points[c->n_points];
	memset(p, 0, sizeof(*p));
	p->line = line;
	if (n < 4) {
		rm_errf(err, errlen,
			"observation_point: '%s' is not ID NAME erspan SRC SESSION, ID NAME vxlan VNI or ID NAME "
			"rspan VLAN",
			value);
		return -EINVAL;
	}
	if (rm_opt_uint("observation_point ID", id, 1, UINT64_MAX, &p->id, err, errlen))
		return -EINVAL;
	if (strlen(name) >= sizeof(p->name)) {
		rm_errf(err, errlen, "observation_point: the name '%s' is longer than %zu bytes",
			rm_text_escape(name, shown, sizeof(shown)), sizeof(p->name) - 1);
		return -EINVAL;
	}
	if ((bad = rm_text_invalid(name, strlen(name)))) { /* the collector's rule for an exporter's name */
		rm_errf(err, errlen, "observation_point: the name '%s' is refused: %s",
			rm_text_escape(name, shown, sizeof(shown)), bad);
		return -EINVAL;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (!strcasecmp(kind, "erspan")) {
		int f = rm_parse_addr(a, p->src);

		if (n != 5) {
			rm_errf(err, errlen,
				"observation_point: erspan takes the outer source address and the session ID");
			return -EINVAL;
		}
		if (f < 0) {
			rm_errf(err, errlen, "observation_point: '%s' is not an IPv4 or IPv6 address", a);
			return -EINVAL;
		}
		p->family = (uint8_t)f;
		if (rm_opt_uint("observation_point session ID", b, 0, 1023, &x, err, errlen))
			return -EINVAL;
		p->kind = RM_MIRROR_ERSPAN;
	} else if (!strcasecmp(kind, "vxlan") || !strcasecmp(kind, "rspan")) {
		int vx = !strcasecmp(kind, "vxlan");

		if (n != 4) {
			rm_errf(err, errlen, "observation_point: %s takes one number (the %s)", kind,
				vx ? "VNI" : "VLAN ID");
			return -EINVAL;
		}
		if (rm_opt_uint(vx ? "observation_point VNI" : "observation_point VLAN ID", a, vx ? 0 : 1,
				vx ? 0xffffff : 4094, &x, err, errlen))
			return -EINVAL;
		p->kind = vx ? RM_MIRROR_VXLAN : RM_MIRROR_RSPAN;
	} else {
		rm_errf(err, errlen, "observation_point: '%s' is not erspan, vxlan or rspan", kind);
		return -EINVAL;
	}
	p->session = (uint32_t)x;
	c->n_points++;
	return 0;
}

int rm_capture_key(struct rm_capture_settings *c, const char *name, const char *value, int line, char *err,
		   size_t errlen)
{
	uint64_t x;

	if (!strcmp(name, "encapsulation")) {
		c->encap_line = line;
		return rm_capture_parse_encap(value, &c->encap, err, errlen);
	}
	if (!strcmp(name, "vxlan_port")) {
		if (rm_opt_uint(name, value, 1, 65535, &x, err, errlen))
			return -EINVAL;
		if (x == RM_ROCEV2_UDP_PORT) {
			rm_errf(err, errlen, "vxlan_port: 4791 is RoCEv2's port");
			return -EINVAL;
		}
		c->vxlan_port = (uint32_t)x;
		return 0;
	}
	if (!strcmp(name, "rspan_vlan")) {
		if (rm_opt_uint(name, value, 1, 4094, &x, err, errlen))
			return -EINVAL;
		c->rspan_vlan = (uint32_t)x;
		return 0;
	}
	if (!strcmp(name, "mirror_sessions")) {
		if (strcmp(value, "table") && strcmp(value, "auto")) {
			rm_errf(err, errlen, "mirror_sessions: '%s' is not 'table' or 'auto'", value);
			return -EINVAL;
		}
		c->auto_sessions = !strcmp(value, "auto");
		return 0;
	}
	if (!strcmp(name, "observation_point"))
		return obs_line(c, value, line, err, errlen);
	return -ENOENT;
}

static uint32_t kind_encap(int kind)
{
	switch (kind) {
	case RM_MIRROR_ERSPAN:
		return RM_ENCAP_ERSPAN1 | RM_ENCAP_ERSPAN2 | RM_ENCAP_ERSPAN3;
	case RM_MIRROR_VXLAN:
		return RM_ENCAP_VXLAN;
	default:
		return RM_ENCAP_RSPAN;
	}
}

static int same_session(const struct rm_obs_line *a, const struct rm_obs_line *b)
{
	return a->kind == b->kind && a->session == b->session &&
	       (a->kind != RM_MIRROR_ERSPAN || (a->family == b->family && !memcmp(a->src, b->src, 16)));
}

int rm_capture_check(const struct rm_capture_settings *c, int *line, char *err, size_t errlen)
{
	*line = c->encap_line;
	if ((c->encap & RM_ENCAP_RSPAN) && !c->rspan_vlan) {
		rm_errf(err, errlen, "encapsulation: rspan needs rspan_vlan (the VLAN ID that marks mirrored frames)");
		return -EINVAL;
	}
	for (int i = 0; i < c->n_points; i++) {
		const struct rm_obs_line *p = &c->points[i];

		*line = p->line;
		if (!(c->encap & kind_encap(p->kind))) {
			rm_errf(err, errlen, "observation_point %s: %s is not in encapsulation", p->name,
				rm_capture_kind_name(p->kind));
			return -EINVAL;
		}
		if (p->kind == RM_MIRROR_RSPAN && p->session != c->rspan_vlan) {
			rm_errf(err, errlen, "observation_point %s: VLAN %u is not rspan_vlan %u", p->name, p->session,
				c->rspan_vlan);
			return -EINVAL;
		}
		for (int j = 0; j < i; j++) {
			if (c->points[j].id == p->id) {
				rm_errf(err, errlen, "observation_point %s: ID %llu is also %s's (line %d)", p->name,
					(unsigned long long)p->id, c->points[j].name, c->points[j].line);
				return -EINVAL;
			}
			if (same_session(&c->points[j], p)) {
				rm_errf(err, errlen, "observation_point %s: the same mirror session as %s (line %d)",
					p->name, c->points[j].name, c->points[j].line);
				return -EINVAL;
			}
		}
	}
	return 0;
}

uint64_t rm_capture_auto_id(const struct rm_mirror_key *k)
{
	uint64_t id = (uint64_t)k->kind << 56;

	if (k->kind == RM_MIRROR_ERSPAN) {
		const uint8_t *a = k->family == 4 ? k->src : k->src + 12;

		id |= ((uint64_t)a[0] << 24 | (uint64_t)a[1] << 16 | (uint64_t)a[2] << 8 | a[3]) << 16;
		id |= k->session & 0x3ff;
	} else {
		id |= k->session;
	}
	return id;
}

int rm_capture_override(struct rm_capture_settings *c, const char *text, char *err, size_t errlen)
{
	uint32_t bits;
	int line;

	if (rm_capture_parse_encap(text, &bits, err, errlen))
		return -EINVAL;
	if (!strcasecmp(text, "auto") && !c->rspan_vlan)
		bits &= ~(uint32_t)RM_ENCAP_RSPAN;
	c->encap = bits;
	c->auto_sessions = 1;
	return rm_capture_check(c, &line, err, errlen);
}

void rm_capture_session_entry(const struct rm_capture_settings *c, int i, struct rm_mirror_key *k,
			      struct rm_mirror_session *v)
{
	const struct rm_obs_line *p = &c->points[i];

	memset(k, 0, sizeof(*k));
	memset(v, 0, sizeof(*v));
	k->kind = p->kind;
	k->session = p->session;
	if (p->kind == RM_MIRROR_ERSPAN) {
		k->family = p->family;
		memcpy(k->src, p->src, 16);
	}
	v->obs = (__u8)(i + 1);
	v->id = p->id;
	snprintf(v->name, sizeof(v->name), "%s", p->name);
}
