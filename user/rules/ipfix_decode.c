// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ipfix_decode.c - IPFIX Message, Set, Template and Options Template
 * decoding for the collector (RFC 7011; [SEQOBS] "Export Profile and
 * Template", "Collector Processing"). See ipfix_decode.h.
 */
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "common/errmsg.h"
#include "common/limits.h"
#include "common/safe_text.h"
#include "ipfix_decode.h"
#include "rocemeter/meter.h" /* RM_OBS_NAME_LEN */
#include "rocemeter/ipfix_ie.h"

#define IE_PADDING_OCTETS 210
#define VARLEN            65535

/* The profile's fields ([SEQOBS] "Profile Fields in Example Order"), indexed by enum rm_pf. */
static const struct {
	uint8_t enterprise; /* 1: element number under the configured PEN */
	uint16_t ie;
	uint16_t len; /* full-length encoding, the only one accepted */
	uint8_t key;  /* part of the record key (Flow Keys) */
	uint8_t in;   /* enum rm_ie_in: which Templates carry it */
	const char *name;
} pf_def[RM_PF__COUNT] = {
#define PF_DEF_(stem, name, pen, type, octets, sem, units, key, in, member) \
	[RM_PF_##stem] = { RM_IE_##pen, RM_IE_NUMBER(stem, pen), octets, key, RM_IE_IN_##in, name },
	RM_IPFIX_IES(PF_DEF_)
#undef PF_DEF_
};

/* The fields of a Reliability record (ipfix_ie.h), in the order rel_ie lists them. */
enum { REL_ADDR, REL_PORT, REL_START, REL_END, REL_MESSAGES, REL_RECORDS, REL_OCTETS, REL__COUNT };
static const uint16_t rel_ie[REL__COUNT][2] = {
	{ IE_EXPORTER_IPV6_ADDRESS, 16 },       { IE_EXPORTER_TRANSPORT_PORT, 2 },
	{ IE_FLOW_START_MILLISECONDS, 8 },      { IE_FLOW_END_MILLISECONDS, 8 },
	{ IE_EXPORTED_MESSAGE_TOTAL_COUNT, 8 }, { IE_EXPORTED_FLOW_RECORD_TOTAL_COUNT, 8 },
	{ IE_EXPORTED_OCTET_TOTAL_COUNT, 8 },
};

/* A received (Options) Template and what it binds to. */
struct tmpl {
	gint64 hkey; /* domain << 16 | tid */
	uint32_t domain;
	uint16_t tid;
	uint8_t options;     /* Options Template */
	uint8_t usable;      /* Data Template bound to the profile */
	uint8_t keys_ok;     /* Data Template: its Flow Keys were advertised and agree */
	uint8_t flow_keys;   /* Options Template: Flow Keys (scope templateId, flowKeyIndicator) */
	uint8_t reliability; /* Options Template: rocemeter's Reliability (ipfix_ie.h RM_TID_RELIABILITY) */
	uint8_t points;      /* Options Template: observation point names (scope observationPointId, interfaceName) */
	uint8_t names_meant; /* Options Template: has interfaceName, so names were meant (t->why if not t->points) */
	uint8_t family;
	uint8_t has_vlan_ns;
	uint16_t rec_len; /* Data Record octets; 0 if a field is variable-length */
	uint16_t nfields;
	int32_t off[RM_PF__COUNT];      /* offset in the record, -1 absent */
	uint64_t key_bits;              /* flowKeyIndicator the record key requires */
	uint64_t unknown_bits;          /* fields not understood (bit per field index < 64) */
	int32_t fk_tid_off, fk_ind_off; /* Flow Keys record offsets */
	int32_t rel_off[REL__COUNT];    /* Reliability record offsets, -1 absent */
	int32_t op_id_off, op_name_off; /* observation point names: record offsets */
	uint16_t op_name_len;
	char why[200];  /* reason when unusable */
	uint8_t *bytes; /* Template Record as received */
	size_t nbytes;
	struct rm_budget_share *share; /* charged RM_BUDGET_TEMPLATE_BYTES + nbytes, or NULL */
};

/* The Template's charge covers the struct, two malloc headers and its hash table entry. */
_Static_assert(sizeof(struct tmpl) + 2 * 16 + 40 <= RM_BUDGET_TEMPLATE_BYTES,
	       "RM_BUDGET_TEMPLATE_BYTES (and docs/collector.md) below the size of a Template");

/* Message-header expectations of one Observation Domain ([RFC7011] 3.1). */
struct dom_seq {
	uint32_t domain;
	uint32_t next_seq;  /* expected Sequence Number of the next Message */
	uint32_t last_time; /* Export Time of the last Message */
	uint8_t seq_known;  /* 0: no expectation (first Message, or a Message whose records could not be counted) */
	uint8_t time_known;
};

struct rm_ipfix_session {
	uint32_t pen;
	GHashTable *tmpls;             /* hkey -> struct tmpl */
	struct rm_budget_share own;    /* a share of rm_ipfix_session_set_budget's budget */
	struct rm_budget_share *share; /* what Templates are charged to: own or rm_ipfix_session_set_share's */
	GHashTable *doms;              /* uint32 domain -> struct dom_seq, at most RM_IPFIX_MAX_SEQ_DOMAINS */
	struct rm_ipfix_counts counts;
	uint32_t anomaly_notes; /* notes given about header anomalies (at most RM_IPFIX_ANOMALY_NOTES + 1) */
	GHashTable *points;     /* struct point_key -> itself: distinct observation points named, at most max_points */
	uint32_t max_points;
};

/* An observation point named in this Transport Session: Observation Domain and observationPointId. */
struct point_key {
	uint64_t id;
	uint32_t domain;
};

static guint point_hash(gconstpointer p)
{
	const struct point_key *k = p;

	return (guint)(k->id ^ k->id >> 32) * 31u + k->domain;
}

static gboolean point_equal(gconstpointer a, gconstpointer b)
{
	const struct point_key *x = a, *y = b;

	return x->id == y->id && x->domain == y->domain;
}

/* Records of the Message being decoded, for the next expected Sequence Number. */
struct msg_count {
	uint32_t records;
	int unknown; /* a Data Set whose records could not be counted (unknown Template, no fixed length) */
};

static void tmpl_free(gpointer p)
{
	struct tmpl *t = p;

	rm_budget_share_give(t->share, RM_BUDGET_TEMPLATE_BYTES + t->nbytes);
	free(t->bytes);
	free(t);
}

void rm_ipfix_session_set_budget(struct rm_ipfix_session *s, struct rm_budget *b)
{
	rm_budget_share_init(&s->own, b);
	s->share = &s->own;
}

void rm_ipfix_session_set_share(struct rm_ipfix_session *s, struct rm_budget_share *sh)
{
	s->share = sh;
}

struct rm_ipfix_session *rm_ipfix_session_new(uint32_t pen)
{
	struct rm_ipfix_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->pen = pen;
	s->tmpls = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, tmpl_free);
	s->doms = g_hash_table_new_full(g_int_hash, g_int_equal, NULL, free);
	s->points = g_hash_table_new_full(point_hash, point_equal, free, NULL);
	s->max_points = RM_MAX_OBSERVATION_POINTS_DEFAULT;
	return s;
}

void rm_ipfix_session_set_max_points(struct rm_ipfix_session *s, uint32_t max)
{
	s->max_points = max;
}

/* Is (domain, id) among the observation points named, or is there room for it (then it is)? */
static int point_admit(struct rm_ipfix_session *s, uint32_t domain, uint64_t id)
{
	struct point_key k = { .id = id, .domain = domain }, *n;

	if (g_hash_table_contains(s->points, &k))
		return 1;
	if (g_hash_table_size(s->points) >= s->max_points || !(n = malloc(sizeof(*n))))
		return 0;
	*n = k;
	g_hash_table_add(s->points, n);
	return 1;
}

void rm_ipfix_session_free(struct rm_ipfix_session *s)
{
	if (!s)
		return;
	g_hash_table_destroy(s->tmpls);
	g_hash_table_destroy(s->doms);
	g_hash_table_destroy(s->points);
	free(s);
}

static inline uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static gint64 hkey(uint32_t domain, uint16_t tid)
{
	return (gint64)((uint64_t)domain << 16 | tid);
}

static struct tmpl *lookup(struct rm_ipfix_session *s, uint32_t domain, uint16_t tid)
{
	gint64 k = hkey(domain, tid);

	return g_hash_table_lookup(s->tmpls, &k);
}

const struct rm_ipfix_counts *rm_ipfix_counts(const struct rm_ipfix_session *s)
{
	return &s->counts;
}

const uint8_t *rm_ipfix_template_bytes(struct rm_ipfix_session *s, uint32_t domain, uint16_t tid, size_t *len)
{
	struct tmpl *t = lookup(s, domain, tid);

	if (!t)
		return NULL;
	*len = t->nbytes;
	return t->bytes;
}

static void note(const struct rm_ipfix_sink *sink, void *arg, uint32_t domain, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void note(const struct rm_ipfix_sink *sink, void *arg, uint32_t domain, const char *fmt, ...)
{
	char buf[300];
	va_list ap;

	if (!sink->note)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sink->note(arg, domain, buf);
}

void rm_ipfix_templates_each(struct rm_ipfix_session *s,
			     void (*fn)(void *arg, uint32_t domain, int options, const uint8_t *rec, size_t len),
			     void *arg)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, s->tmpls);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct tmpl *t = v;

		fn(arg, t->domain, t->options, t->bytes, t->nbytes);
	}
}

static void reject(const struct rm_ipfix_sink *sink, void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw,
		   size_t len, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void reject(const struct rm_ipfix_sink *sink, void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw,
		   size_t len, const char *fmt, ...)
{
	char buf[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sink->reject(arg, domain, tid, raw, len, buf);
}

long rm_ipfix_frame(const uint8_t *buf, size_t have, char *err, size_t errlen)
{
	uint16_t len;

	if (have < 4)
		return 0;
	if (be16(buf) != RM_IPFIX_VERSION) {
		rm_errf(err, errlen, "IPFIX message version %u, expected 10", be16(buf));
		return -EBADMSG;
	}
	len = be16(buf + 2);
	if (len < RM_IPFIX_HDR_LEN) {
		rm_errf(err, errlen, "IPFIX message length %u is shorter than its 16-octet header", len);
		return -EBADMSG;
	}
	return have >= len ? (long)len : 0;
}

/* Which profile field a Field Specifier is, or -1. */
static int classify(const struct rm_ipfix_session *s, uint16_t ie, int enterprise, uint32_t pen)
{
	for (int f = 0; f < RM_PF__COUNT; f++) {
		if (pf_def[f].ie != ie || pf_def[f].enterprise != enterprise)
			continue;
		if (enterprise && pen != s->pen)
			continue;
		return f;
	}
	return -1;
}

/* Bind a Data Template to the profile; sets usable or why. */
static void bind_data_template(struct rm_ipfix_session *s, struct tmpl *t, const uint8_t *fs, uint16_t count)
{
	uint32_t off = 0;
	int varlen = 0;

	for (int f = 0; f < RM_PF__COUNT; f++)
		t->off[f] = -1;
	for (uint16_t i = 0; i < count; i++) {
		uint16_t ie = be16(fs) & 0x7fff, len = be16(fs + 2);
		int ent = (fs[0] & 0x80) != 0;
		uint32_t pen = ent ? be32(fs + 4) : 0;
		int f = classify(s, ie, ent, pen);

		fs += ent ? 8 : 4;
		if (len == VARLEN) {
			if (!t->why[0])
				snprintf(t->why, sizeof(t->why), "Template %u: field %u (IE %u%s) is variable-length",
					 t->tid, i + 1, ie, ent ? ", enterprise" : "");
			varlen = 1;
			continue;
		}
		if (f < 0) {
			if (i < 64 && !(ie == IE_PADDING_OCTETS && !ent))
				t->unknown_bits |= 1ULL << i;
			off += len;
			continue;
		}
		if (t->off[f] >= 0 && !t->why[0])
			snprintf(t->why, sizeof(t->why), "Template %u: %s occurs more than once", t->tid,
				 pf_def[f].name);
		if (len != pf_def[f].len && !t->why[0])
			snprintf(t->why, sizeof(t->why), "Template %u: %s has length %u, the profile requires %u",
				 t->tid, pf_def[f].name, len, pf_def[f].len);
		if (pf_def[f].key) {
			if (i < 64)
				t->key_bits |= 1ULL << i;
			else if (!t->why[0])
				snprintf(t->why, sizeof(t->why),
					 "Template %u: key field %s beyond field 64 cannot be a Flow Key", t->tid,
					 pf_def[f].name);
		}
		t->off[f] = (int32_t)off;
		off += len;
	}
	t->rec_len = varlen || off > RM_IPFIX_MAX_MSG ? 0 : (uint16_t)off;
	t->nfields = count;
	if (t->why[0])
		return;
	if (t->rec_len == 0) {
		snprintf(t->why, sizeof(t->why), "Template %u: Data Records of %u octets", t->tid, off);
		return;
	}
	int v4 = 0, v6 = 0, vlan = 0;

	for (int f = 0; f < RM_PF__COUNT; f++) {
		if (t->off[f] < 0)
			continue;
		v4 |= pf_def[f].in == RM_IE_IN_IPV4;
		v6 |= pf_def[f].in == RM_IE_IN_IPV6;
		vlan |= pf_def[f].in == RM_IE_IN_VLAN;
	}
	if (v4 && v6) {
		snprintf(t->why, sizeof(t->why), "Template %u mixes IPv4 and IPv6 addresses (one family per Template)",
			 t->tid);
		return;
	}
	t->family = v6 ? 6 : 4;
	for (int f = 0; f < RM_PF__COUNT; f++) {
		/* The namespace keys are optional; the addresses are those of the Template's family. */
		if (pf_def[f].in == RM_IE_IN_VLAN)
			continue;
		if (pf_def[f].in == (t->family == 4 ? RM_IE_IN_IPV6 : RM_IE_IN_IPV4))
			continue;
		if (t->off[f] < 0) {
			snprintf(t->why, sizeof(t->why), "Template %u lacks %s%s", t->tid, pf_def[f].name,
				 pf_def[f].enterprise ? " (under the configured PEN)" : "");
			return;
		}
	}
	t->has_vlan_ns = vlan;
	t->usable = 1;
}

/* Options Template: is it the Flow Keys one? */
static void bind_options_template(struct tmpl *t, const uint8_t *fs, uint16_t count, uint16_t scope)
{
	uint32_t off = 0;
	int varlen = 0;

	t->fk_tid_off = t->fk_ind_off = t->op_id_off = t->op_name_off = -1;
	for (int k = 0; k < REL__COUNT; k++)
		t->rel_off[k] = -1;
	for (uint16_t i = 0; i < count; i++) {
		uint16_t ie = be16(fs) & 0x7fff, len = be16(fs + 2);
		int ent = (fs[0] & 0x80) != 0;

		fs += ent ? 8 : 4;
		if (!ent && ie == IE_INTERFACE_NAME)
			t->names_meant = 1;
		if (len == VARLEN) {
			varlen = 1;
			continue;
		}
		if (!ent && i == 0 && ie == IE_TEMPLATE_ID && len == 2)
			t->fk_tid_off = (int32_t)off;
		if (!ent && i >= scope && ie == IE_FLOW_KEY_INDICATOR && len == 8)
			t->fk_ind_off = (int32_t)off;
		/* Reliability: the exporter's address and port are the scope, the rest is not. */
		for (int k = 0; !ent && k < REL__COUNT; k++)
			if (ie == rel_ie[k][0] && len == rel_ie[k][1] && (k <= REL_PORT) == (i < scope))
				t->rel_off[k] = (int32_t)off;
		if (!ent && i == 0 && ie == IE_OBSERVATION_POINT_ID && len == 8)
			t->op_id_off = (int32_t)off;
		if (!ent && i >= scope && ie == IE_INTERFACE_NAME && len > 0) { /* any fixed length */
			t->op_name_off = (int32_t)off;
			t->op_name_len = len;
		}
		off += len;
	}
	t->rec_len = varlen || off > RM_IPFIX_MAX_MSG ? 0 : (uint16_t)off;
	t->nfields = count;
	t->flow_keys = !varlen && scope == 1 && t->fk_tid_off >= 0 && t->fk_ind_off >= 0;
	t->reliability = !varlen && scope == 2 && t->rel_off[REL_ADDR] >= 0 && t->rel_off[REL_PORT] >= 0 &&
			 t->rel_off[REL_MESSAGES] >= 0 && t->rel_off[REL_RECORDS] >= 0 && t->rel_off[REL_OCTETS] >= 0;
	t->points = !varlen && scope == 1 && t->op_id_off >= 0 && t->op_name_off >= 0;
	if (t->names_meant && !t->points && !t->flow_keys && !t->reliability)
		snprintf(t->why, sizeof(t->why),
			 "Options Template %u: interfaceName (82) without the names layout (scope observationPointId "
			 "138 of 8 octets, interfaceName of a fixed length)",
			 t->tid);
}

/* An observation point names Options Data Record (t->points): its ID and name to sink->point. */
static void point_record(struct rm_ipfix_session *s, const struct tmpl *t, uint32_t domain, const uint8_t *rec,
			 const struct rm_ipfix_sink *sink, void *arg)
{
	const uint8_t *f = rec + t->op_name_off;
	char name[RM_OBS_NAME_LEN];
	const char *why = NULL;
	size_t n = 0, k;

	while (n < t->op_name_len && f[n])
		n++;
	for (k = n; k < t->op_name_len && !f[k]; k++)
		;
	if (n >= RM_OBS_NAME_LEN) { /* a name is at most 63 octets, as in [capture] */
		reject(sink, arg, domain, t->tid, rec, t->rec_len,
		       "Options Template %u: an observation point name longer than %d octets", t->tid,
		       RM_OBS_NAME_LEN - 1);
		return;
	}
	memcpy(name, f, n);
	name[n] = '\0';
	if (k < t->op_name_len) /* the field is NUL-padded: after the first NUL only NULs */
		why = "a NUL inside (octets other than NUL padding after the first NUL)";
	else if (n == 0)
		why = "empty";
	if (why || (why = rm_text_invalid(name, n))) {
		reject(sink, arg, domain, t->tid, rec, t->rec_len, "Options Template %u: an observation point name: %s",
		       t->tid, why);
		return;
	}
	if (!point_admit(s, domain, be64(rec + t->op_id_off))) {
		reject(sink, arg, domain, t->tid, rec, t->rec_len,
		       "Options Template %u: observation point %" PRIu64 " beyond max_observation_points %u "
		       "distinct names in this Transport Session",
		       t->tid, be64(rec + t->op_id_off), s->max_points);
		return;
	}
	if (sink->point)
		sink->point(arg, domain, be64(rec + t->op_id_off), name);
}

static void withdraw_all(struct rm_ipfix_session *s, uint32_t domain, int options)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, s->tmpls);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct tmpl *t = v;

		if (t->domain == domain && t->options == options)
			g_hash_table_iter_remove(&it);
	}
}

/* Template Set (2) or Options Template Set (3). */
static void template_set(struct rm_ipfix_session *s, uint32_t domain, uint16_t set_id, const uint8_t *p, size_t len,
			 const struct rm_ipfix_sink *sink, void *arg)
{
	int options = set_id == 3;
	size_t hdr = options ? 6 : 4;

	/* A withdrawal record is 4 octets in both kinds of set: no Scope Field Count ([RFC7011] 8.1). */
	while (len >= 4) {
		uint16_t tid = be16(p), count = be16(p + 2), scope;
		size_t need = hdr;

		if (count == 0) { /* withdrawal */
			if (tid == set_id) {
				withdraw_all(s, domain, options);
				note(sink, arg, domain, "all %sTemplates withdrawn", options ? "Options " : "");
			} else {
				gint64 k = hkey(domain, tid);

				g_hash_table_remove(s->tmpls, &k);
				note(sink, arg, domain, "%sTemplate %u withdrawn", options ? "Options " : "", tid);
			}
			p += 4;
			len -= 4;
			continue;
		}
		if (len < hdr)
			break; /* padding */
		scope = options ? be16(p + 4) : 0;
		if (tid < 256) {
			reject(sink, arg, domain, tid, p, len, "%sTemplate ID %u is below 256; rest of the set ignored",
			       options ? "Options " : "", tid);
			return;
		}
		if (options && (scope == 0 || scope > count)) {
			reject(sink, arg, domain, tid, p, len,
			       "Options Template %u: scope field count %u of %u fields; rest of the set ignored", tid,
			       scope, count);
			return;
		}
		for (uint16_t i = 0; i < count; i++) {
			if (need + 4 > len || ((p[need] & 0x80) && need + 8 > len)) {
				reject(sink, arg, domain, tid, p, len,
				       "%sTemplate %u: field %u runs past its set; rest of the set ignored",
				       options ? "Options " : "", tid, i + 1);
				return;
			}
			need += (p[need] & 0x80) ? 8 : 4;
		}
		if (g_hash_table_size(s->tmpls) >= RM_IPFIX_MAX_TEMPLATES && !lookup(s, domain, tid)) {
			reject(sink, arg, domain, tid, p, len,
			       "%sTemplate %u: the session already has %u Templates (collector limit); rest of the set "
			       "ignored",
			       options ? "Options " : "", tid, RM_IPFIX_MAX_TEMPLATES);
			return;
		}
		if (rm_budget_share_take(s->share, RM_BUDGET_TEMPLATE_BYTES + need, "Template") < 0) {
			gint64 k = hkey(domain, tid);
			int full = rm_budget_share_full(s->share, RM_BUDGET_TEMPLATE_BYTES + need);

			g_hash_table_remove(s->tmpls, &k); /* redefined: the old definition no longer applies */
			reject(sink, arg, domain, tid, p, need, "%sTemplate %u refused: memory budget (%s)",
			       options ? "Options " : "", tid,
			       full ? "max_memory_bytes_per_session" : "max_memory_bytes");
			p += need;
			len -= need;
			continue;
		}
		struct tmpl *t = calloc(1, sizeof(*t));

		if (!t || !(t->bytes = malloc(need))) {
			free(t);
			rm_budget_share_give(s->share, RM_BUDGET_TEMPLATE_BYTES + need);
			reject(sink, arg, domain, tid, p, need, "out of memory for Template %u", tid);
			return;
		}
		t->share = s->share;
		memcpy(t->bytes, p, need);
		t->nbytes = need;
		{
			/* The same Template again keeps its advertised Flow Keys; a changed one needs them anew. */
			struct tmpl *old = lookup(s, domain, tid);

			if (old && !options && !old->options && old->nbytes == need && !memcmp(old->bytes, p, need))
				t->keys_ok = old->keys_ok;
		}
		t->domain = domain;
		t->tid = tid;
		t->hkey = hkey(domain, tid);
		t->options = options;
		if (options)
			bind_options_template(t, p + hdr, count, scope);
		else
			bind_data_template(s, t, p + hdr, count);
		if (!options && !t->usable)
			note(sink, arg, domain, "%s; its Data Records will be rejected", t->why);
		g_hash_table_replace(s->tmpls, &t->hkey, t);
		p += need;
		len -= need;
	}
}

/* A Flow Keys Options Data Record: check the advertised keys of a Data Template. */
static void flow_keys_record(struct rm_ipfix_session *s, uint32_t domain, const struct tmpl *ot, const uint8_t *rec,
			     const struct rm_ipfix_sink *sink, void *arg)
{
	uint16_t tid = be16(rec + ot->fk_tid_off);
	uint64_t ind = be64(rec + ot->fk_ind_off);
	struct tmpl *t = lookup(s, domain, tid);

	if (!t || t->options) {
		reject(sink, arg, domain, ot->tid, rec, ot->rec_len, "Flow Keys for unknown Template %u", tid);
		return;
	}
	if (!t->usable)
		return;
	if (ind & t->unknown_bits) {
		t->usable = 0;
		snprintf(t->why, sizeof(t->why),
			 "Template %u: a field not understood is a Flow Key (unknown namespace key)", tid);
	} else if (ind & ~t->key_bits) {
		t->usable = 0;
		snprintf(t->why, sizeof(t->why),
			 "Template %u: Flow Keys 0x%llx flag a non-key field (the report ID is never a key)", tid,
			 (unsigned long long)ind);
	} else if ((ind & t->key_bits) != t->key_bits) {
		t->usable = 0;
		snprintf(t->why, sizeof(t->why), "Template %u: Flow Keys 0x%llx lack record key fields 0x%llx", tid,
			 (unsigned long long)ind, (unsigned long long)(t->key_bits & ~ind));
	} else {
		t->keys_ok = 1;
	}
	if (!t->usable)
		note(sink, arg, domain, "%s; its Data Records will be rejected", t->why);
}

/*
 * Why the counts of a Reliability record cannot be what a Transport Session
 * delivered, or NULL: each count is stored as a signed 64-bit integer, and
 * the octets hold every Message's 16-octet header and every Data Record's
 * octet at least, and no more than 65535 octets a Message (RFC 7011 section
 * 3.1: exportedOctetTotalCount counts whole Messages, each at most 65535).
 */
static const char *reliability_impossible(const struct rm_ipfix_reliability *r)
{
	if (r->messages > INT64_MAX || r->records > INT64_MAX || r->octets > INT64_MAX)
		return "a count above 2^63 - 1";
	if (r->messages > r->octets / RM_IPFIX_HDR_LEN || r->records > r->octets - r->messages * RM_IPFIX_HDR_LEN)
		return "more Messages and Data Records than its octets can hold (16 per Message, 1 per record)";
	/* ceil(octets / 65535) Messages at least: no Message is longer (RFC 7011 section 3.1, Length) */
	if (r->octets / RM_IPFIX_MAX_MSG + (r->octets % RM_IPFIX_MAX_MSG != 0) > r->messages)
		return "more octets than its Messages can hold (65535 per Message)";
	return NULL;
}

/* A Reliability Options Data Record: what an earlier Transport Session of this exporter delivered. */
static void reliability_record(const struct tmpl *t, const uint8_t *rec, uint32_t domain,
			       const struct rm_ipfix_sink *sink, void *arg)
{
	struct rm_ipfix_reliability r = { 0 };
	const char *why;

	memcpy(r.exporter_addr, rec + t->rel_off[REL_ADDR], 16);
	r.exporter_port = be16(rec + t->rel_off[REL_PORT]);
	r.started_ms = t->rel_off[REL_START] >= 0 ? be64(rec + t->rel_off[REL_START]) : 0;
	r.ended_ms = t->rel_off[REL_END] >= 0 ? be64(rec + t->rel_off[REL_END]) : 0;
	r.messages = be64(rec + t->rel_off[REL_MESSAGES]);
	r.records = be64(rec + t->rel_off[REL_RECORDS]);
	r.octets = be64(rec + t->rel_off[REL_OCTETS]);
	why = reliability_impossible(&r);
	if (why) {
		reject(sink, arg, domain, t->tid, rec, t->rec_len,
		       "Reliability record of Template %u claims %" PRIu64 " Messages, %" PRIu64
		       " Data Records in %" PRIu64 " octets: %s",
		       t->tid, r.messages, r.records, r.octets, why);
		return;
	}
	sink->reliability(arg, domain, &r);
}

/*
 * One reader per abstract data type (the type column of RM_IPFIX_IES):
 * integers into host order, addresses as they are. The pointer types check
 * each row's member at compile time.
 */
static inline void get_unsigned16(uint16_t *to, const uint8_t *p)
{
	*to = be16(p);
}
static inline void get_unsigned32(uint32_t *to, const uint8_t *p)
{
	*to = be32(p);
}
static inline void get_unsigned64(uint64_t *to, const uint8_t *p)
{
	*to = be64(p);
}
static inline void get_dateTimeMilliseconds(uint64_t *to, const uint8_t *p)
{
	*to = be64(p);
}
static inline void get_ipv4Address(uint8_t (*to)[16], const uint8_t *p)
{
	memcpy(*to, p, 4);
}
static inline void get_ipv6Address(uint8_t (*to)[16], const uint8_t *p)
{
	memcpy(*to, p, 16);
}

/* Every field the Template carries, as straight-line code from the table. */
static void decode_record(const struct tmpl *t, const uint8_t *rec, struct rm_report *r)
{
	memset(r, 0, sizeof(*r));
	r->family = t->family;
	r->has_vlan_ns = t->has_vlan_ns;
#define GET_(stem, name, pen, type, octets, sem, units, key, in, member) \
	if (t->off[RM_PF_##stem] >= 0)                                   \
		get_##type(&r->member, rec + t->off[RM_PF_##stem]);
	RM_IPFIX_IES(GET_)
#undef GET_
}

static void data_set(struct rm_ipfix_session *s, uint32_t domain, uint16_t tid, const uint8_t *p, size_t len,
		     const struct rm_ipfix_sink *sink, void *arg, struct msg_count *mc)
{
	struct tmpl *t = lookup(s, domain, tid);
	struct rm_report r;

	if (!t) {
		mc->unknown = 1;
		reject(sink, arg, domain, tid, p, len, "Data Set for unknown Template %u in Observation Domain %u", tid,
		       domain);
		return;
	}
	if (t->rec_len == 0) {
		mc->unknown = 1;
		reject(sink, arg, domain, tid, p, len, "Data Set for Template %u: %s", tid,
		       t->why[0] ? t->why : "Data Records without a fixed length");
		return;
	}
	for (; len >= t->rec_len; p += t->rec_len, len -= t->rec_len) {
		mc->records++;
		if (t->options) {
			if (t->flow_keys)
				flow_keys_record(s, domain, t, p, sink, arg);
			else if (t->reliability && sink->reliability)
				reliability_record(t, p, domain, sink, arg);
			else if (t->points)
				point_record(s, t, domain, p, sink, arg);
			else if (t->why[0])
				reject(sink, arg, domain, tid, p, t->rec_len, "%s", t->why);
			continue;
		}
		if (!t->usable) {
			reject(sink, arg, domain, tid, p, t->rec_len, "%s", t->why);
			continue;
		}
		if (!t->keys_ok) {
			/* [SEQOBS] "Export Profile and Template": the record key is what the Flow Keys say it is. */
			reject(sink, arg, domain, tid, p, t->rec_len,
			       "Template %u: its Flow Keys were never advertised (Flow Keys Options Template); "
			       "the record key is not established",
			       tid);
			continue;
		}
		decode_record(t, p, &r);
		sink->record(arg, domain, tid, &r, p, t->rec_len);
	}
	/* Fewer octets than one record left: padding (RFC 7011, section 3.3.1), zero octets. */
	for (size_t i = 0; i < len; i++) {
		if (p[i]) {
			reject(sink, arg, domain, tid, p, len,
			       "Data Set for Template %u: %zu trailing octets are neither a Data Record of %u octets "
			       "nor zero padding",
			       tid, len, t->rec_len);
			break;
		}
	}
}

static void anomaly(struct rm_ipfix_session *s, const struct rm_ipfix_sink *sink, void *arg, uint32_t domain,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void anomaly(struct rm_ipfix_session *s, const struct rm_ipfix_sink *sink, void *arg, uint32_t domain,
		    const char *fmt, ...)
{
	char buf[300];
	va_list ap;

	if (s->anomaly_notes > RM_IPFIX_ANOMALY_NOTES)
		return;
	if (s->anomaly_notes++ == RM_IPFIX_ANOMALY_NOTES) {
		note(sink, arg, domain,
		     "further Sequence Number and Export Time anomalies of this session are "
		     "counted, not logged");
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	note(sink, arg, domain, "%s", buf);
}

/*
 * The Message header against the domain's last one ([RFC7011] 3.1): the
 * Sequence Number counts the Data Records sent before this Message, the
 * Export Time is when it left. Returns the domain's state (NULL: not
 * tracked, the domain limit is reached).
 */
static struct dom_seq *check_header(struct rm_ipfix_session *s, uint32_t domain, uint32_t seq, uint32_t etime,
				    const struct rm_ipfix_sink *sink, void *arg)
{
	struct dom_seq *d = g_hash_table_lookup(s->doms, &domain);

	if (!d) {
		if (g_hash_table_size(s->doms) >= RM_IPFIX_MAX_SEQ_DOMAINS || !(d = calloc(1, sizeof(*d))))
			return NULL;
		d->domain = domain;
		g_hash_table_insert(s->doms, &d->domain, d);
	}
	if (d->seq_known && seq != d->next_seq) {
		uint32_t ahead = seq - d->next_seq; /* modulo 2^32 */

		s->counts.seq_gaps++;
		if (ahead < 0x80000000u) {
			s->counts.seq_missing += ahead;
			anomaly(s, sink, arg, domain,
				"Sequence Number %u, expected %u: %u Data Records missing or not counted ([RFC7011] "
				"3.1)",
				seq, d->next_seq, ahead);
		} else {
			anomaly(s, sink, arg, domain,
				"Sequence Number %u, expected %u: went back by %u ([RFC7011] 3.1)", seq, d->next_seq,
				-ahead);
		}
	}
	if (d->time_known && etime < d->last_time) {
		s->counts.time_backwards++;
		anomaly(s, sink, arg, domain, "Export Time %u is earlier than the previous Message's %u", etime,
			d->last_time);
	}
	d->last_time = etime;
	d->time_known = 1;
	d->next_seq = seq;
	d->seq_known = 0; /* until this Message's records are counted */
	return d;
}

int rm_ipfix_message(struct rm_ipfix_session *s, const uint8_t *msg, size_t len, const struct rm_ipfix_sink *sink,
		     void *arg, char *err, size_t errlen)
{
	uint32_t domain;
	size_t pos;
	struct msg_count mc = { 0 };
	struct dom_seq *d;

	if (len < RM_IPFIX_HDR_LEN || rm_ipfix_frame(msg, len, err, errlen) != (long)len) {
		if (len >= 4 && be16(msg) == RM_IPFIX_VERSION)
			rm_errf(err, errlen, "IPFIX message length %u does not match the %zu octets given",
				be16(msg + 2), len);
		else if (len < 4)
			rm_errf(err, errlen, "IPFIX message of %zu octets", len);
		return -EBADMSG;
	}
	domain = be32(msg + 12);
	d = check_header(s, domain, be32(msg + 8), be32(msg + 4), sink, arg);
	/* Check the set structure first, so a bad message delivers nothing. */
	for (pos = RM_IPFIX_HDR_LEN; pos < len;) {
		uint16_t slen;

		if (len - pos < 4) {
			reject(sink, arg, domain, 0, msg, len, "%zu octets after the last set are not a set header",
			       len - pos);
			return 0;
		}
		slen = be16(msg + pos + 2);
		if (slen < 4) {
			reject(sink, arg, domain, 0, msg, len,
			       "set %u at offset %zu has length %u < 4; message ignored", be16(msg + pos), pos, slen);
			return 0;
		}
		if (slen > len - pos) {
			reject(sink, arg, domain, 0, msg, len,
			       "set %u at offset %zu of length %u runs past its message of %zu octets; message ignored",
			       be16(msg + pos), pos, slen, len);
			return 0;
		}
		pos += slen;
	}
	for (pos = RM_IPFIX_HDR_LEN; pos < len;) {
		uint16_t sid = be16(msg + pos), slen = be16(msg + pos + 2);
		const uint8_t *body = msg + pos + 4;

		if (sid == 2 || sid == 3)
			template_set(s, domain, sid, body, slen - 4u, sink, arg);
		else if (sid >= 256)
			data_set(s, domain, sid, body, slen - 4u, sink, arg, &mc);
		else
			reject(sink, arg, domain, 0, msg + pos, slen, "set ID %u is not allowed in IPFIX", sid);
		pos += slen;
	}
	if (d && !mc.unknown) {
		d->next_seq += mc.records;
		d->seq_known = 1;
	}
	return 0;
}
