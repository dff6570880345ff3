// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* connections.c - eligibility, table, [provision] lines and JSON of the census (see connections.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/limits.h"
#include "common/timefmt.h"
#include "connections.h"
#include "rocemeter/ipfix_ie.h"

#define CLASS_NAME_(suffix, name, desc) name,
static const char *const class_names[RM_CENSUS_CLASS__COUNT] = { RM_CENSUS_CLASSES(CLASS_NAME_) };
#undef CLASS_NAME_
#define STAT_NAME_(suffix, name, desc) name,
static const char *const stat_names[RM_CENSUS_STAT__COUNT] = { RM_CENSUS_STATS(STAT_NAME_) };
#undef STAT_NAME_
#define STAT_DESC_(suffix, name, desc) desc,
static const char *const stat_descs[RM_CENSUS_STAT__COUNT] = { RM_CENSUS_STATS(STAT_DESC_) };
#undef STAT_DESC_
#define EXCL_NAME_(suffix, name, words) name,
static const char *const excl_names[RM_CONN_EXCL__COUNT] = { RM_CONN_EXCLUSIONS(EXCL_NAME_) };
#undef EXCL_NAME_
#define EXCL_WORDS_(suffix, name, words) words,
static const char *const excl_words[RM_CONN_EXCL__COUNT] = { RM_CONN_EXCLUSIONS(EXCL_WORDS_) };
#undef EXCL_WORDS_

const char *rm_census_class_name(int cls)
{
	return cls >= 0 && cls < RM_CENSUS_CLASS__COUNT ? class_names[cls] : "?";
}

const char *rm_census_stat_name(int stat)
{
	return stat >= 0 && stat < RM_CENSUS_STAT__COUNT ? stat_names[stat] : "?";
}

const char *rm_conn_exclusion_name(int bit)
{
	return bit >= 0 && bit < RM_CONN_EXCL__COUNT ? excl_names[bit] : "?";
}

const char *rm_conn_exclusion_words(int bit)
{
	return bit >= 0 && bit < RM_CONN_EXCL__COUNT ? excl_words[bit] : "?";
}

uint32_t rm_conn_exclusions(const struct rm_census_val *v)
{
	const __u64 *p = v->packets;
	uint32_t why = 0;

	if (p[RM_CENSUS_READ])
		why |= RM_CONN_EXCL(READ);
	if (p[RM_CENSUS_ATOMIC])
		why |= RM_CONN_EXCL(ATOMIC);
	if (p[RM_CENSUS_OTHER_RC])
		why |= RM_CONN_EXCL(OTHER_RC);
	/* A UC, RD, UD or XRC request under a provisioned connection's key is a
	 * profile violation of that connection (docs/meter.md). */
	if (p[RM_CENSUS_UC])
		why |= RM_CONN_EXCL(UC);
	if (p[RM_CENSUS_UD])
		why |= RM_CONN_EXCL(UD);
	if (p[RM_CENSUS_OTHER])
		why |= RM_CONN_EXCL(OTHER);
	if (v->malformed)
		why |= RM_CONN_EXCL(MALFORMED);
	if (!why && !p[RM_CENSUS_SEND_WRITE])
		why |= RM_CONN_EXCL(NO_REQUESTS); /* responses or CNPs only: the other direction's */
	return why;
}

/* "a, b, c" of the words of the bits in why. */
static char *exclusion_text(uint32_t why, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < RM_CONN_EXCL__COUNT && used < len; i++)
		if (why & (1u << i))
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", excl_words[i]);
	return buf;
}

static void addr_text(const struct rm_ctx_key *k, int dst, char *buf, size_t len)
{
	inet_ntop(k->family == 6 ? AF_INET6 : AF_INET, dst ? k->dst : k->src, buf, (socklen_t)len);
}

int rm_conn_provision_line(const struct rm_ctx_key *k, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];

	addr_text(k, 0, src, sizeof(src));
	addr_text(k, 1, dst, sizeof(dst));
	return snprintf(buf, len, "connection = %s %s 0x%06x 0x%04x", src, dst, k->dest_qp, k->pkey);
}

char *rm_conn_format_opcodes(const __u64 bits[4], char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int op = 0; op < 256 && used < len; op++) {
		int end = op;

		if (!(bits[op >> 6] >> (op & 63) & 1))
			continue;
		while (end + 1 < 256 && (bits[(end + 1) >> 6] >> ((end + 1) & 63) & 1))
			end++;
		if (end == op)
			used += (size_t)snprintf(buf + used, len - used, "%s0x%02x", used ? "," : "", op);
		else
			used += (size_t)snprintf(buf + used, len - used, "%s0x%02x-0x%02x", used ? "," : "", op, end);
		op = end;
	}
	return buf;
}

/* "SRC > DST qp 0xQQQQQQ pkey 0xPPPP[ vlan A[/B]]" */
static void connection_text(const struct rm_ctx_key *k, char *buf, size_t len)
{
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	int n;

	addr_text(k, 0, src, sizeof(src));
	addr_text(k, 1, dst, sizeof(dst));
	n = snprintf(buf, len, "%s > %s qp 0x%06x pkey 0x%04x", src, dst, k->dest_qp, k->pkey);
	if (n < 0 || (size_t)n >= len)
		return;
	if (k->vlan[1])
		n += snprintf(buf + n, len - (size_t)n, " vlan %u/%u", k->vlan[0], k->vlan[1]);
	else if (k->vlan[0])
		n += snprintf(buf + n, len - (size_t)n, " vlan %u", k->vlan[0]);
	if (k->obs && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " obs %u", k->obs);
}

/* Same connection but for the VLAN IDs: one provisioning line covers both. */
static int same_line(const struct rm_ctx_key *a, const struct rm_ctx_key *b)
{
	return a->family == b->family && !memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16) &&
	       a->dest_qp == b->dest_qp && a->pkey == b->pkey;
}

/*
 * Walk the provisioning lines: for each group of entries [i, j) that differ
 * only in VLANs, fn(arg, key, why) with the union of their exclusions.
 */
static void each_line(const struct rm_census_result *r, void (*fn)(void *, const struct rm_ctx_key *, uint32_t),
		      void *arg)
{
	for (size_t i = 0, j; i < r->n; i = j) {
		uint32_t why = 0;

		for (j = i; j < r->n && same_line(&r->entries[i].key, &r->entries[j].key); j++)
			why |= rm_conn_exclusions(&r->entries[j].v);
		fn(arg, &r->entries[i].key, why);
	}
}

struct text_lines {
	FILE *f;
	int eligible;   /* lines written */
	int not_listed; /* eligible lines beyond RM_MAX_PROVISION */
};

static void line_text(void *arg, const struct rm_ctx_key *k, uint32_t why)
{
	struct text_lines *t = arg;
	char line[160], words[160];

	rm_conn_provision_line(k, line, sizeof(line));
	if (!why) {
		if (t->eligible >= RM_MAX_PROVISION) {
			t->not_listed++;
			return;
		}
		fprintf(t->f, "%s\n", line);
		t->eligible++;
		return;
	}
	/* "connection = " dropped: the line must not be taken for one. */
	fprintf(t->f, "# excluded: %s (%s)\n", line + strlen("connection = "),
		exclusion_text(why, words, sizeof(words)));
}

static void write_table(FILE *f, const struct rm_census_result *r, int64_t frames_read)
{
	int wconn = (int)strlen("connection"), wnum[RM_CENSUS_CLASS__COUNT], wops = (int)strlen("opcodes");
	uint64_t first = 0, last = 0;
	char buf[512];

	if (frames_read >= 0)
		fprintf(f, "%" PRId64 " frames read, ", frames_read);
	fprintf(f, "%" PRIu64 " frames with a BTH, %zu connection keys", r->stats[RM_CENSUS_STAT_BTH_FRAMES], r->n);
	for (size_t i = 0; i < r->n; i++) {
		if (!i || r->entries[i].v.first_ns < first)
			first = r->entries[i].v.first_ns;
		if (r->entries[i].v.last_ns > last)
			last = r->entries[i].v.last_ns;
	}
	if (r->n) {
		char a[RM_TIME_TEXT_LEN], b[RM_TIME_TEXT_LEN];

		fprintf(f, ", %s .. %s", rm_time_format(first / 1000000, a, sizeof(a)),
			rm_time_format(last / 1000000, b, sizeof(b)));
	}
	fprintf(f, "\n");
	for (int i = RM_CENSUS_STAT_TABLE_FULL; i <= RM_CENSUS_STAT_UNKNOWN_MIRROR; i++)
		if (r->stats[i])
			fprintf(f, "%" PRIu64 " %s\n", r->stats[i], stat_descs[i]);
	if (!r->n)
		return;

	for (int c = 0; c < RM_CENSUS_CLASS__COUNT; c++)
		wnum[c] = (int)strlen(class_names[c]);
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_census_entry *e = &r->entries[i];
		int n;

		connection_text(&e->key, buf, sizeof(buf));
		if ((int)strlen(buf) > wconn)
			wconn = (int)strlen(buf);
		for (int c = 0; c < RM_CENSUS_CLASS__COUNT; c++) {
			n = snprintf(NULL, 0, "%" PRIu64, (uint64_t)e->v.packets[c]);
			if (n > wnum[c])
				wnum[c] = n;
		}
		rm_conn_format_opcodes(e->v.opcodes, buf, sizeof(buf));
		if ((int)strlen(buf) > wops)
			wops = (int)strlen(buf);
	}
	fprintf(f, "%-*s", wconn, "connection");
	for (int c = 0; c < RM_CENSUS_CLASS__COUNT; c++)
		fprintf(f, "  %*s", wnum[c], class_names[c]);
	fprintf(f, "  %-*s  %s\n", wops, "opcodes", "profile");
	for (size_t i = 0; i < r->n; i++) {
		const struct rm_census_entry *e = &r->entries[i];
		uint32_t why = rm_conn_exclusions(&e->v);
		char words[160];

		connection_text(&e->key, buf, sizeof(buf));
		fprintf(f, "%-*s", wconn, buf);
		for (int c = 0; c < RM_CENSUS_CLASS__COUNT; c++)
			fprintf(f, "  %*" PRIu64, wnum[c], (uint64_t)e->v.packets[c]);
		rm_conn_format_opcodes(e->v.opcodes, buf, sizeof(buf));
		fprintf(f, "  %-*s  ", wops, buf);
		if (why)
			fprintf(f, "excluded: %s\n", exclusion_text(why, words, sizeof(words)));
		else
			fprintf(f, "eligible\n");
	}
}

void rm_conn_write_text(FILE *f, const struct rm_census_result *r, int64_t frames_read, unsigned int what)
{
	if (what & RM_CONN_TABLE)
		write_table(f, r, frames_read);
	if (what & RM_CONN_PROVISION) {
		struct text_lines t = { .f = f };

		if (what & RM_CONN_TABLE)
			fprintf(f, "\n");
		fprintf(f, "[provision]\n");
		each_line(r, line_text, &t);
		if (t.not_listed)
			fprintf(f, "# %d more eligible connections not listed: [provision] holds at most %d lines\n",
				t.not_listed, RM_MAX_PROVISION);
	}
}

static void line_json(void *arg, const struct rm_ctx_key *k, uint32_t why)
{
	json_t *a = arg;
	char line[160];

	if (why || json_array_size(a) >= RM_MAX_PROVISION)
		return;
	rm_conn_provision_line(k, line, sizeof(line));
	json_array_append_new(a, json_string(line));
}

static json_t *entry_json(const struct rm_census_entry *e)
{
	const struct rm_ctx_key *k = &e->key;
	uint32_t why = rm_conn_exclusions(&e->v);
	json_t *o = json_object(), *p = json_object(), *ops = json_array(), *ex = json_array();
	int six = k->family == 6;

	json_object_set_new(o, rm_pf_name(six ? RM_PF_SOURCE_IPV6_ADDRESS : RM_PF_SOURCE_IPV4_ADDRESS),
			    rm_json_addr(k->family, k->src));
	json_object_set_new(o, rm_pf_name(six ? RM_PF_DESTINATION_IPV6_ADDRESS : RM_PF_DESTINATION_IPV4_ADDRESS),
			    rm_json_addr(k->family, k->dst));
	if (k->vlan[0] || k->vlan[1]) {
		json_object_set_new(o, rm_pf_name(RM_PF_VLAN_ID), json_integer(k->vlan[0]));
		json_object_set_new(o, rm_pf_name(RM_PF_DOT1Q_CUSTOMER_VLAN_ID), json_integer(k->vlan[1]));
	}
	if (k->obs)
		json_object_set_new(o, "observation_point", json_integer(k->obs));
	json_object_set_new(o, rm_pf_name(RM_PF_RDMA_DESTINATION_QP), json_integer(k->dest_qp));
	json_object_set_new(o, rm_pf_name(RM_PF_RDMA_PARTITION_KEY), json_integer(k->pkey));
	for (int c = 0; c < RM_CENSUS_CLASS__COUNT; c++)
		json_object_set_new(p, class_names[c], rm_json_u64(e->v.packets[c]));
	json_object_set_new(o, "packets", p);
	json_object_set_new(o, "malformed_requests", rm_json_u64(e->v.malformed));
	for (int op = 0; op < 256; op++)
		if (e->v.opcodes[op >> 6] >> (op & 63) & 1)
			json_array_append_new(ops, json_integer(op));
	json_object_set_new(o, "opcodes", ops);
	json_object_set_new(o, "first_seen_ms", rm_json_u64(e->v.first_ns / 1000000));
	json_object_set_new(o, "last_seen_ms", rm_json_u64(e->v.last_ns / 1000000));
	json_object_set_new(o, "eligible", json_boolean(!why));
	for (int i = 0; i < RM_CONN_EXCL__COUNT; i++)
		if (why & (1u << i))
			json_array_append_new(ex, json_string(excl_names[i]));
	json_object_set_new(o, "excluded", ex);
	return o;
}

void rm_conn_set_json(json_t *obj, const struct rm_census_result *r, int64_t frames_read)
{
	json_t *a = json_array(), *lines = json_array();

	if (frames_read >= 0)
		json_object_set_new(obj, "frames_read", rm_json_u64((uint64_t)frames_read));
	for (int i = 0; i < RM_CENSUS_STAT__COUNT; i++)
		json_object_set_new(obj, stat_names[i], rm_json_u64(r->stats[i]));
	for (size_t i = 0; i < r->n; i++)
		json_array_append_new(a, entry_json(&r->entries[i]));
	json_object_set_new(obj, "connections", a);
	a = json_array();
	for (int i = 0; i < r->n_unknown; i++) {
		json_t *u = rm_capture_key_json(&r->unknown[i].key);

		json_object_set_new(u, "frames", rm_json_u64(r->unknown[i].frames));
		json_array_append_new(a, u);
	}
	json_object_set_new(obj, "unknown_mirror_sessions", a);
	each_line(r, line_json, lines);
	json_object_set_new(obj, "provision", lines);
}
