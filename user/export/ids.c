// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ids.c - epoch and report ID allocation per Transport Session and
 * Observation Domain ([SEQOBS] "Identity and Epoch Lifecycle"). A GLib hash
 * table maps (context key, local epoch generation) to the epoch's IDs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "ids.h"

struct epoch_key {
	uint8_t src[16];
	uint8_t dst[16];
	uint32_t dest_qp;
	uint32_t gen;
	uint16_t pkey;
	uint16_t vlan[RM_VLAN_DEPTH_MAX];
	uint8_t family;
	uint8_t obs; /* the observation point: the same connection seen at two is two epochs */
};

struct epoch {
	struct epoch_key k; /* the hash table's key points here */
	uint64_t epoch_id;
	uint64_t last_report_id;
};

struct rm_ids {
	GHashTable *epochs;
	uint64_t last_epoch_id;
	uint64_t max_id;
};

static guint key_hash(gconstpointer p)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u; /* FNV-1a */
	size_t i;

	for (i = 0; i < sizeof(struct epoch_key); i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, sizeof(struct epoch_key)) == 0;
}

struct rm_ids *rm_ids_new(void)
{
	struct rm_ids *ids = calloc(1, sizeof(*ids));

	if (!ids)
		return NULL;
	ids->epochs = g_hash_table_new_full(key_hash, key_equal, NULL, free);
	ids->max_id = UINT64_MAX;
	return ids;
}

void rm_ids_free(struct rm_ids *ids)
{
	if (!ids)
		return;
	g_hash_table_destroy(ids->epochs);
	free(ids);
}

void rm_ids_reset(struct rm_ids *ids)
{
	g_hash_table_remove_all(ids->epochs);
	ids->last_epoch_id = 0;
}

void rm_ids_forget(struct rm_ids *ids)
{
	g_hash_table_remove_all(ids->epochs);
}

unsigned int rm_ids_count(const struct rm_ids *ids)
{
	return g_hash_table_size(ids->epochs);
}

void rm_ids_set_limit(struct rm_ids *ids, uint64_t max_id)
{
	ids->max_id = max_id;
}

uint64_t rm_ids_limit(const struct rm_ids *ids)
{
	return ids->max_id;
}

static void make_key(struct epoch_key *k, const struct rm_ctx_key *key, uint32_t epoch_gen)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->src, key->src, sizeof(k->src));
	memcpy(k->dst, key->dst, sizeof(k->dst));
	k->dest_qp = key->dest_qp;
	k->gen = epoch_gen;
	k->pkey = key->pkey;
	memcpy(k->vlan, key->vlan, sizeof(k->vlan));
	k->family = key->family;
	k->obs = key->obs;
}

int rm_ids_assign(struct rm_ids *ids, const struct rm_ctx_key *key, uint32_t epoch_gen, int final, uint64_t *epoch_id,
		  uint64_t *report_id)
{
	struct epoch_key k;
	struct epoch *ep;

	make_key(&k, key, epoch_gen);
	ep = g_hash_table_lookup(ids->epochs, &k);
	if (ep) {
		if (ep->last_report_id >= ids->max_id)
			return -1;
		ep->last_report_id++;
	} else {
		if (ids->last_epoch_id >= ids->max_id || ids->max_id == 0)
			return -1;
		ep = malloc(sizeof(*ep));
		if (!ep)
			return -1;
		ep->k = k;
		ep->epoch_id = ++ids->last_epoch_id;
		ep->last_report_id = 1;
		g_hash_table_insert(ids->epochs, &ep->k, ep);
	}
	*epoch_id = ep->epoch_id;
	*report_id = ep->last_report_id;
	if (final)
		g_hash_table_remove(ids->epochs, &ep->k);
	return 0;
}

void rm_ids_unassign(struct rm_ids *ids, const struct rm_ctx_key *key, uint32_t epoch_gen, int final, uint64_t epoch_id,
		     uint64_t report_id)
{
	struct epoch_key k;
	struct epoch *ep;

	if (final)
		return;
	make_key(&k, key, epoch_gen);
	ep = g_hash_table_lookup(ids->epochs, &k);
	if (!ep || ep->epoch_id != epoch_id || ep->last_report_id != report_id)
		return;
	if (report_id > 1) {
		ep->last_report_id--;
		return;
	}
	g_hash_table_remove(ids->epochs, &ep->k);
	if (ids->last_epoch_id == epoch_id)
		ids->last_epoch_id--;
}
