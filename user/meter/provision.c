// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* provision.c - which provisioning lines cover a connection (see provision.h). */
#include <string.h>

#include "provision.h"

void rm_prov_key_of(const struct rm_provision *line, struct rm_prov_key *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->src, line->src, 16);
	memcpy(out->dst, line->dst, 16);
	out->family = line->family;
	out->dest_qp = line->any_qp ? 0 : line->dest_qp;
	out->pkey = line->any_pkey ? 0 : line->pkey;
	out->wildcard = (line->any_qp ? RM_PROV_ANY_QP : 0) | (line->any_pkey ? RM_PROV_ANY_PKEY : 0);
}

/* The form (0..RM_PROV_FORMS-1) in which line covers key, or -1. */
static int form_of(const struct rm_provision *line, const struct rm_ctx_key *key)
{
	struct rm_prov_key lk, probe;

	rm_prov_key_of(line, &lk);
	rm_prov_probe(&probe, key, lk.wildcard);
	return memcmp(&lk, &probe, sizeof(lk)) == 0 ? lk.wildcard : -1;
}

int rm_prov_line_covers(const struct rm_provision *line, const struct rm_ctx_key *key)
{
	return form_of(line, key) >= 0;
}

unsigned int rm_prov_cover(const struct rm_provision *lines, int n, int provision_all, const struct rm_ctx_key *key)
{
	unsigned int bits = provision_all ? RM_PROV_BY_ALL : 0;

	for (int i = 0; i < n; i++) {
		int form = form_of(&lines[i], key);

		if (form >= 0)
			bits |= 1u << form; /* RM_PROV_BY_EXACT << form */
	}
	return bits;
}

int rm_prov_changed(const struct rm_provision *a, int na, int pa, const struct rm_provision *b, int nb, int pb,
		    const struct rm_ctx_key *key)
{
	return rm_prov_cover(a, na, pa, key) != rm_prov_cover(b, nb, pb, key);
}
