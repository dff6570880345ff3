// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_select.c - report's --observation-point and --reason (see
 * report_select.h): the test of one epoch, and the points a store knows
 * for the message that lists them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "common/errmsg.h"
#include "common/opts.h"
#include "common/report_text.h"
#include "common/safe_text.h"
#include "common/sort.h"
#include "report_select.h"

/* The points listed in the message of an unknown one, at most. */
#define KNOWN_LISTED 32

void rm_select_init(struct rm_select *s)
{
	*s = (struct rm_select){ .reason = -1 };
}

void rm_select_point(struct rm_select *s, const char *text)
{
	const char *slash = strchr(text, '/');
	char domain[32];

	s->point = text;
	s->point_is_id = 0;
	s->has_domain = 0;
	if (!slash) {
		s->point_is_id = !rm_parse_uint(text, 0, UINT64_MAX, &s->id);
		return;
	}
	if ((size_t)(slash - text) >= sizeof(domain))
		return;
	memcpy(domain, text, (size_t)(slash - text));
	domain[slash - text] = '\0';
	s->has_domain =
		!rm_parse_uint(domain, 0, UINT32_MAX, &s->domain) && !rm_parse_uint(slash + 1, 0, UINT64_MAX, &s->id);
	s->point_is_id = s->has_domain;
}

int rm_select_reason(struct rm_select *s, const char *name, char *err, size_t errlen)
{
	char known[256] = "";
	size_t n = 0;

	s->reason = rm_closure_by_key(name);
	if (s->reason >= 0)
		return 0;
	for (int c = 0; c < RM_CLOSURE__N && n < sizeof(known); c++)
		n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s",
				      !c                       ? ""
				      : c == RM_CLOSURE__N - 1 ? " or "
							       : ", ",
				      rm_closure_key((enum rm_closure)c));
	rm_errf(err, errlen, "--reason: '%s' is not a closure reason: %s", name, known);
	return -EINVAL;
}

/* Does the point (domain, id, name) match s's --observation-point? */
static int point_matches(const struct rm_select *s, uint64_t domain, uint64_t id, const char *name)
{
	if (name && !strcmp(name, s->point))
		return 1;
	return s->point_is_id && id == s->id && (!s->has_domain || domain == s->domain);
}

int rm_select_epoch(const struct rm_select *s, const struct rm_epoch_read *e)
{
	if (s->point && !point_matches(s, e->u[RM_ER_DOMAIN], e->u[RM_ER_OBS], e->obs_name))
		return 0;
	if (s->reason >= 0 && !(e->u[RM_ER_FLAGS_SEEN] & rm_closure_mask((enum rm_closure)s->reason)))
		return 0;
	return 1;
}

/* One point the store knows, for the list of known ones. */
struct known_point {
	uint64_t domain, id;
	char *name; /* NULL: none */
};

/* What the walks over the store's points and epochs gather. */
struct known {
	const struct rm_select *s;
	rm_select_name_fn *name_of;
	void *names;
	int found;
	GHashTable *seen; /* "DOMAIN/ID NAME" -> struct known_point */
};

static void known_free(gpointer p)
{
	struct known_point *k = p;

	g_free(k->name);
	g_free(k);
}

static void known_add(struct known *k, uint64_t domain, uint64_t id, const char *name)
{
	char *key = g_strdup_printf("%" PRIu64 "/%" PRIu64 " %s", domain, id, name ? name : "");
	struct known_point *p;

	if (g_hash_table_contains(k->seen, key)) {
		g_free(key);
		return;
	}
	p = g_new0(struct known_point, 1);
	p->domain = domain;
	p->id = id;
	p->name = g_strdup(name);
	g_hash_table_insert(k->seen, key, p);
}

/* rm_store_reader_points()'s call: a named point. */
static void known_named(void *arg, const char *collector_id, const char *peer_name, const char *peer_subject,
			uint32_t domain, uint64_t id, const char *name)
{
	struct known *k = arg;

	k->found |= point_matches(k->s, domain, id, name);
	known_add(k, domain, id, name);
}

/* rm_store_reader_epochs()'s call: the point of an epoch; 1 (stop) at the first that matches. */
static int known_epoch(void *arg, const struct rm_epoch_read *e)
{
	struct known *k = arg;
	const char *name = k->name_of ? k->name_of(k->names, e) : NULL;

	if (point_matches(k->s, e->u[RM_ER_DOMAIN], e->u[RM_ER_OBS], name))
		return 1;
	known_add(k, e->u[RM_ER_DOMAIN], e->u[RM_ER_OBS], name);
	return 0;
}

static int by_point(const void *pa, const void *pb)
{
	const struct known_point *a = *(const struct known_point *const *)pa,
				 *b = *(const struct known_point *const *)pb;

	if (a->domain != b->domain)
		return a->domain < b->domain ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

/* "7 leaf1, 8 leaf2, 3/9" (the first KNOWN_LISTED, then "and N more"), "none" without one, into buf. */
static void known_list(GHashTable *seen, char *buf, size_t len)
{
	GList *values = g_hash_table_get_values(seen);
	guint n = g_list_length(values), i = 0;
	gpointer *v = g_new(gpointer, n + 1);
	size_t off = 0;

	for (GList *l = values; l; l = l->next)
		v[i++] = l->data;
	g_list_free(values);

	rm_sort(v, n, sizeof(*v), by_point);
	buf[0] = '\0';
	for (i = 0; i < n && i < KNOWN_LISTED && off < len; i++) {
		const struct known_point *p = v[i];
		char id[48], name[4 * 64 + 1]; /* escaped: a name an older store kept before the rule (safe_text.h) */

		if (p->domain)
			snprintf(id, sizeof(id), "%" PRIu64 "/%" PRIu64, p->domain, p->id);
		else
			snprintf(id, sizeof(id), "%" PRIu64, p->id);
		off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s", i ? ", " : "", id, p->name ? " " : "",
					p->name ? rm_text_escape(p->name, name, sizeof(name)) : "");
	}
	if (n > KNOWN_LISTED && off < len)
		snprintf(buf + off, len - off, " and %u more", n - KNOWN_LISTED);
	if (!n)
		snprintf(buf, len, "none");
	g_free(v);
}

int rm_select_known(struct rm_store_reader *r, const struct rm_read_filter *f, const struct rm_select *s,
		    rm_select_name_fn *name_of, void *names, char *err, size_t errlen)
{
	struct known k = { .s = s, .name_of = name_of, .names = names };
	struct rm_read_filter any = { .pkey = -1, .collector_id = f->collector_id };
	char list[1024];
	int rc;

	if (!s->point)
		return 0;
	k.seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, known_free);
	rc = rm_store_reader_points(r, known_named, &k, err, errlen);
	if (!rc && !k.found)
		rc = rm_store_reader_epochs(r, &any, known_epoch, &k, err, errlen);
	if (rc == 1 || (!rc && k.found)) {
		rc = 0;
	} else if (!rc) {
		known_list(k.seen, list, sizeof(list));
		rm_errf(err, errlen, "--observation-point: '%s' is no observation point of the store; known: %s",
			s->point, list);
		rc = -ENOENT;
	}
	g_hash_table_destroy(k.seen);
	return rc;
}
