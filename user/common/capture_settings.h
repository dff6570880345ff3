/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_settings.h - the [capture] section of the configuration: which mirror
 * encapsulations an attachment (or `replay`, `connections`) takes off, and
 * the observation points its mirror sessions are (docs/deployment.md).
 * Parsed here for config.c; read by the meter's loader and the reporter.
 */
#ifndef ROCEMETER_CAPTURE_SETTINGS_H
#define ROCEMETER_CAPTURE_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rocemeter/meter.h" /* RM_ENCAP_*, enum rm_mirror_kind, RM_OBS_MAX */

/* One observation_point line: a mirror session and the point it is. */
struct rm_obs_line {
	uint64_t id;                /* observationPointId, nonzero */
	char name[RM_OBS_NAME_LEN]; /* for status, /metrics, logs and the exporter's Options record */
	uint8_t kind;               /* enum rm_mirror_kind */
	uint8_t family;             /* ERSPAN: the outer source address's, 4 or 6 */
	uint8_t src[16];            /* ERSPAN: the outer source address, network order */
	uint32_t session;           /* ERSPAN session ID (0..1023; ERSPAN I: 0), VXLAN VNI, RSPAN VLAN ID */
	int line;                   /* its line in the file, for messages */
};

struct rm_capture_settings {
	uint32_t encap;      /* RM_ENCAP_* accepted; default RM_ENCAP_PLAIN */
	uint32_t vxlan_port; /* default RM_VXLAN_PORT */
	uint32_t rspan_vlan; /* 1..4094; 0: none */
	int auto_sessions;   /* mirror_sessions = auto: a session no line names gets a derived ID */
	struct rm_obs_line points[RM_OBS_MAX];
	int n_points;
	int encap_line; /* the encapsulation line (0: default), for messages */
};

/*
 * "plain,erspan,vxlan" (comma or space separated: plain, erspan1, erspan2,
 * erspan3, erspan = all three, vxlan, rspan; auto = all) into RM_ENCAP_*
 * bits. 0, or -EINVAL with "encapsulation: reason" in err.
 */
int rm_capture_parse_encap(const char *text, uint32_t *out, char *err, size_t errlen);

/*
 * --encapsulation LIST|auto of `replay` and `connections`, over the file's
 * [capture]: the encapsulations to take off (auto: every one, RSPAN only
 * with an rspan_vlan), and sessions no observation_point line names get
 * derived IDs (mirror_sessions = auto). 0, or -EINVAL with the reason in err.
 */
int rm_capture_override(struct rm_capture_settings *c, const char *text, char *err, size_t errlen);

/*
 * One key of [capture] at line: encapsulation, vxlan_port, rspan_vlan,
 * mirror_sessions = table|auto, observation_point = ID NAME erspan SRC
 * SESSION | ID NAME vxlan VNI | ID NAME rspan VLAN. 0: taken; -EINVAL:
 * refused, the reason in err; -ENOENT: not a [capture] key.
 */
int rm_capture_key(struct rm_capture_settings *c, const char *name, const char *value, int line, char *err,
		   size_t errlen);

/*
 * The section as a whole, after the file: every line's encapsulation
 * accepted, an rspan line names rspan_vlan, IDs and sessions unique, RSPAN
 * accepted only with an rspan_vlan. 0, or -EINVAL with the reason in err and
 * its line in *line (0: the section).
 */
int rm_capture_check(const struct rm_capture_settings *c, int *line, char *err, size_t errlen);

/*
 * The observationPointId of a session that no line names, with
 * mirror_sessions = auto: the kind in the top byte, then for ERSPAN the
 * last 4 bytes of the outer source address and the 10-bit session ID
 * (kind << 56 | addr << 16 | session), for VXLAN the VNI, for RSPAN the
 * VLAN ID.
 */
uint64_t rm_capture_auto_id(const struct rm_mirror_key *k);

/* "erspan", "vxlan", "rspan" or "plain" for enum rm_mirror_kind. */
const char *rm_capture_kind_name(int kind);

/* A session key as text: "erspan SRC session S", "vxlan session VNI", "rspan session VLAN"; buf returned. */
const char *rm_capture_key_text(const struct rm_mirror_key *k, char *buf, size_t len);

/* A session key as JSON (docs/json.md): {"kind", "source" (ERSPAN only), "session"}; NULL without memory. */
json_t *rm_capture_key_json(const struct rm_mirror_key *k);

/*
 * The observation_point line i of c (0 <= i < c->n_points) as its entry of
 * the mirror_sessions map (struct rm_mirror_key -> struct rm_mirror_session,
 * include/rocemeter/meter.h), for the meter and the census alike: line i is
 * observation point i + 1 of the contexts' and the census's keys.
 */
void rm_capture_session_entry(const struct rm_capture_settings *c, int i, struct rm_mirror_key *k,
			      struct rm_mirror_session *v);

#endif
