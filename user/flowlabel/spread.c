// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * spread.c - the ECMP spread model of `rocemeter flowlabel spread` (see
 * spread.h for the keys, hash functions and label sources).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "flowlabel.h"
#include "spread.h"

#define RM_SPREAD_NAME_(suffix, name, desc) name,
static const char *const key_names[RM_SPREAD_KEY__COUNT] = { RM_SPREAD_KEYS(RM_SPREAD_NAME_) };
static const char *const hash_names[RM_SPREAD_HASH__COUNT] = { RM_SPREAD_HASHES(RM_SPREAD_NAME_) };
#undef RM_SPREAD_NAME_

const char *rm_spread_key_name(int k)
{
	return k >= 0 && k < RM_SPREAD_KEY__COUNT ? key_names[k] : "?";
}

const char *rm_spread_hash_name(int h)
{
	return h >= 0 && h < RM_SPREAD_HASH__COUNT ? hash_names[h] : "?";
}

const char *rm_spread_label_name(int l)
{
	if (l == RM_SPREAD_ARRIVING)
		return "arriving";
	return l > 0 && l < RM_SPREAD_LABEL__COUNT ? rm_flowlabel_variant_name((uint32_t)(l - 1)) : "?";
}

static int find_name(const char *s, const char *(*name)(int), int n)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, name(i)))
			return i;
	return -1;
}

int rm_spread_key_from_name(const char *s)
{
	return find_name(s, rm_spread_key_name, RM_SPREAD_KEY__COUNT);
}

int rm_spread_hash_from_name(const char *s)
{
	return find_name(s, rm_spread_hash_name, RM_SPREAD_HASH__COUNT);
}

int rm_spread_label_from_name(const char *s)
{
	return find_name(s, rm_spread_label_name, RM_SPREAD_LABEL__COUNT);
}

/* c's address as the program sees an IPv6 one: IPv4 as ::ffff:a.b.c.d (RFC 4291 2.5.5.2). */
static void as_in6(int family, const uint8_t *a, struct in6_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (family == 6) {
		memcpy(out->s6_addr, a, 16);
		return;
	}
	out->s6_addr[10] = out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], a, 4);
}

uint32_t rm_spread_label(const struct rm_spread_conn *c, int l, const struct rm_fl_params *opt)
{
	struct rm_fl_params p = { .variant = (uint32_t)(l - 1), .mix = opt->mix, .seed = opt->seed };
	struct in6_addr s, d;

	if (l == RM_SPREAD_ARRIVING || c->label_in) /* [FLOWLABEL] rule 2: a label is never changed */
		return c->label_in & RM_FL_LABEL_MASK;
	as_in6(c->family, c->src, &s);
	as_in6(c->family, c->dst, &d);
	return rm_fl_label_written(rm_flowlabel_compute(&p, &s, &d, c->has_sqp, c->sqp, c->dqp, NULL));
}

void rm_spread_conn_labels(struct rm_spread_conn *c, const struct rm_fl_params *opt)
{
	for (int l = 0; l < RM_SPREAD_LABEL__COUNT; l++)
		c->label[l] = rm_spread_label(c, l, opt);
}

size_t rm_spread_key_bytes(const struct rm_spread_conn *c, int key, int label, uint8_t *out)
{
	size_t alen = c->family == 4 ? 4 : 16, n = 0;
	uint32_t fl;

	memcpy(out, c->src, alen);
	memcpy(out + alen, c->dst, alen);
	n = 2 * alen;
	if (key != RM_SPREAD_KEY_ADDR_LABEL) {
		out[n++] = 17; /* UDP */
		out[n++] = (uint8_t)(c->sport >> 8);
		out[n++] = (uint8_t)c->sport;
		out[n++] = (uint8_t)(c->dport >> 8);
		out[n++] = (uint8_t)c->dport;
	}
	if (key != RM_SPREAD_KEY_5TUPLE) {
		fl = label >= 0 && label < RM_SPREAD_LABEL__COUNT ? c->label[label] : 0;
		out[n++] = (uint8_t)(fl >> 16);
		out[n++] = (uint8_t)(fl >> 8);
		out[n++] = (uint8_t)fl;
	}
	return n;
}

uint16_t rm_spread_hash16(int h, const uint8_t *in, size_t len)
{
	uint32_t reg;

	switch (h) {
	case RM_SPREAD_HASH_CRC16_CCITT:
		reg = 0xFFFF;
		for (size_t i = 0; i < len; i++) {
			reg ^= (uint32_t)in[i] << 8;
			for (int b = 0; b < 8; b++)
				reg = (reg & 0x8000) ? (reg << 1) ^ 0x1021 : reg << 1;
			reg &= 0xFFFF;
		}
		return (uint16_t)reg;
	case RM_SPREAD_HASH_CRC32_LO:
	case RM_SPREAD_HASH_CRC32_HI:
		/* CRC-32/ISO-HDLC with the program's own byte step (rocemeter/flowlabel.h) */
		reg = RM_FL_INIT;
		for (size_t i = 0; i < len; i++)
			reg = rm_fl_byte_bitwise(RM_FL_CRC32, reg, in[i]);
		reg ^= 0xFFFFFFFFu;
		return (uint16_t)(h == RM_SPREAD_HASH_CRC32_LO ? reg : reg >> 16);
	default:
		reg = 0;
		for (size_t i = 0; i < len; i += 2)
			reg ^= (uint32_t)in[i] << 8 | (i + 1 < len ? in[i + 1] : 0);
		return (uint16_t)reg;
	}
}

int rm_spread_class_run(struct rm_spread_class *cls, const struct rm_spread_conn *conns, size_t n, uint32_t k)
{
	uint8_t key[RM_SPREAD_KEY_MAX];
	uint64_t sumsq = 0;

	cls->load = calloc(k, sizeof(*cls->load));
	cls->path = calloc(n ? n : 1, sizeof(*cls->path));
	if (!cls->load || !cls->path) {
		rm_spread_class_free(cls);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = rm_spread_key_bytes(&conns[i], cls->key, cls->label, key);

		cls->path[i] = rm_spread_hash16(cls->hash, key, len) % k;
		cls->load[cls->path[i]]++;
	}
	cls->paths_used = cls->max_load = 0;
	cls->collisions = 0;
	for (uint32_t p = 0; p < k; p++) {
		uint64_t l = cls->load[p];

		cls->paths_used += l > 0;
		if (l > cls->max_load)
			cls->max_load = (uint32_t)l;
		cls->collisions += l * (l ? l - 1 : 0) / 2;
		sumsq += l * l;
	}
	cls->max_share = n ? (double)cls->max_load / (double)n : 0;
	cls->jain = sumsq ? (double)n * (double)n / ((double)k * (double)sumsq) : 0;
	return 0;
}

void rm_spread_class_free(struct rm_spread_class *cls)
{
	free(cls->load);
	free(cls->path);
	cls->load = cls->path = NULL;
}

double rm_spread_expected_used(size_t n, uint32_t k)
{
	double miss = 1.0; /* (1 - 1/k)^n: a given path is never chosen */

	for (size_t i = 0; i < n; i++)
		miss *= 1.0 - 1.0 / (double)k;
	return (double)k * (1.0 - miss);
}

static const char *class_label(const struct rm_spread_class *c)
{
	return c->key == RM_SPREAD_KEY_5TUPLE ? "-" : rm_spread_label_name(c->label);
}

void rm_spread_write_text(FILE *f, const struct rm_spread_conn *conns, size_t n, uint32_t k,
			  const struct rm_spread_class *cls, size_t ncls, int verbose)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	fprintf(f, "spread of %zu connections over %u paths (a uniform random choice uses %.2f paths on average)\n", n,
		k, rm_spread_expected_used(n, k));
	if (verbose)
		for (size_t i = 0; i < n; i++) {
			const struct rm_spread_conn *c = &conns[i];
			int af = c->family == 4 ? AF_INET : AF_INET6;

			inet_ntop(af, c->src, a, sizeof(a));
			inet_ntop(af, c->dst, b, sizeof(b));
			fprintf(f, "  #%zu %s -> %s sport %u dqp 0x%06x label 0x%05x;", i, a, b, c->sport, c->dqp,
				c->label_in);
			if (c->points)
				fprintf(f, " points %u;", c->points);
			for (int l = 1; l < RM_SPREAD_LABEL__COUNT; l++)
				fprintf(f, " %s 0x%05x", rm_spread_label_name(l), c->label[l]);
			fprintf(f, "\n");
		}
	fprintf(f, "%-13s %-9s %-12s %10s %10s %11s %6s\n", "key", "label", "switch-hash", "paths used", "max share",
		"collisions", "Jain");
	for (size_t i = 0; i < ncls; i++) {
		const struct rm_spread_class *c = &cls[i];

		fprintf(f, "%-13s %-9s %-12s %5u/%-4u %10.3f %11llu %6.3f\n", rm_spread_key_name(c->key),
			class_label(c), rm_spread_hash_name(c->hash), c->paths_used, k, c->max_share,
			(unsigned long long)c->collisions, c->jain);
		if (verbose) {
			fprintf(f, "  paths:");
			for (size_t j = 0; j < n; j++)
				fprintf(f, " %u", c->path[j]);
			fprintf(f, "\n");
		}
	}
}

static json_t *conn_json(const struct rm_spread_conn *c)
{
	json_t *o = json_object(), *labels = json_object();

	json_object_set_new(o, "family", json_integer(c->family));
	json_object_set_new(o, "source", rm_json_addr(c->family, c->src));
	json_object_set_new(o, "destination", rm_json_addr(c->family, c->dst));
	json_object_set_new(o, "udp_source_port", json_integer(c->sport));
	json_object_set_new(o, "udp_destination_port", json_integer(c->dport));
	json_object_set_new(o, "dest_qp", json_integer(c->dqp));
	json_object_set_new(o, "src_qp", c->has_sqp ? json_integer(c->sqp) : json_null());
	json_object_set_new(o, "frames", rm_json_u64(c->frames));
	json_object_set_new(o, "observation_points", c->points ? json_integer(c->points) : json_null());
	for (int l = 0; l < RM_SPREAD_LABEL__COUNT; l++)
		json_object_set_new(labels, rm_spread_label_name(l), json_integer(c->label[l]));
	json_object_set_new(o, "flow_labels", labels);
	return o;
}

static json_t *class_json(const struct rm_spread_class *c, size_t n, uint32_t k)
{
	json_t *o = json_object(), *load = json_array(), *path = json_array();

	json_object_set_new(o, "key", json_string(rm_spread_key_name(c->key)));
	json_object_set_new(o, "label",
			    c->key == RM_SPREAD_KEY_5TUPLE ? json_null() : json_string(rm_spread_label_name(c->label)));
	json_object_set_new(o, "switch_hash", json_string(rm_spread_hash_name(c->hash)));
	json_object_set_new(o, "paths_used", json_integer(c->paths_used));
	json_object_set_new(o, "max_load", json_integer(c->max_load));
	json_object_set_new(o, "max_share", json_real(c->max_share));
	json_object_set_new(o, "collisions", rm_json_u64(c->collisions));
	json_object_set_new(o, "jain", json_real(c->jain));
	for (uint32_t p = 0; p < k; p++)
		json_array_append_new(load, json_integer(c->load[p]));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(path, json_integer(c->path[i]));
	json_object_set_new(o, "load", load);
	json_object_set_new(o, "path", path);
	return o;
}

json_t *rm_spread_json(const struct rm_spread_conn *conns, size_t n, uint32_t k, const struct rm_spread_class *cls,
		       size_t ncls)
{
	json_t *o = json_object(), *cs = json_array(), *classes = json_array();

	if (!o || !cs || !classes) {
		json_decref(o);
		json_decref(cs);
		json_decref(classes);
		return NULL;
	}
	json_object_set_new(o, "paths", json_integer(k));
	json_object_set_new(o, "expected_paths_used_uniform", json_real(rm_spread_expected_used(n, k)));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(cs, conn_json(&conns[i]));
	for (size_t i = 0; i < ncls; i++)
		json_array_append_new(classes, class_json(&cls[i], n, k));
	json_object_set_new(o, "connections", cs);
	json_object_set_new(o, "classes", classes);
	return o;
}
