// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* health.c - the sequence health of an epoch from its counters (see health.h). */
#include <stdio.h>
#include <string.h>

#include "health.h"

static const char *const keys[RM_HEALTH__N] = {
#define KEY_(name, key, words, meaning) key,
	RM_HEALTH_KINDS(KEY_)
#undef KEY_
};
static const char *const words[RM_HEALTH__N] = {
#define WORDS_(name, key, words, meaning) words,
	RM_HEALTH_KINDS(WORDS_)
#undef WORDS_
};
static const char *const meanings[RM_HEALTH__N] = {
#define MEANING_(name, key, words, meaning) meaning,
	RM_HEALTH_KINDS(MEANING_)
#undef MEANING_
};

uint64_t rm_health_count(const struct rm_health_counters *c, enum rm_health_kind k)
{
	switch (k) {
	case RM_HEALTH_NEVER_SEEN:
		/* saturate: sums over many epochs may reach the limit of one counter */
		return c->expired > UINT64_MAX - c->abandoned ? UINT64_MAX : c->expired + c->abandoned;
	case RM_HEALTH_PENDING:
		return c->pending;
	case RM_HEALTH_SEEN_LATE:
		return c->filled;
	case RM_HEALTH_REPEATED:
		return c->repeated;
	case RM_HEALTH_UNCLASSIFIED_LATE:
		return c->unclassified_late;
	default:
		return 0;
	}
}

unsigned rm_health_of(const struct rm_health_counters *c)
{
	unsigned health = 0;

	for (int k = 0; k < RM_HEALTH__N; k++)
		if (rm_health_count(c, (enum rm_health_kind)k))
			health |= RM_HEALTH_BIT(k);
	return health;
}

const char *rm_health_key(enum rm_health_kind k)
{
	return (unsigned)k < RM_HEALTH__N ? keys[k] : NULL;
}

const char *rm_health_words(enum rm_health_kind k)
{
	return (unsigned)k < RM_HEALTH__N ? words[k] : NULL;
}

const char *rm_health_meaning(enum rm_health_kind k)
{
	return (unsigned)k < RM_HEALTH__N ? meanings[k] : NULL;
}

size_t rm_health_text(unsigned health, const struct rm_health_counters *c, char *buf, size_t len)
{
	char item[64];
	size_t off = 0;

	if (len)
		buf[0] = 0;
	if (!(health & ((1u << RM_HEALTH__N) - 1)))
		return (size_t)snprintf(buf, len, "clean");
	for (int k = 0; k < RM_HEALTH__N; k++) {
		if (!(health & RM_HEALTH_BIT(k)))
			continue;
		if (c)
			snprintf(item, sizeof(item), "%s%s %llu", off ? ", " : "", words[k],
				 (unsigned long long)rm_health_count(c, (enum rm_health_kind)k));
		else
			snprintf(item, sizeof(item), "%s%s", off ? ", " : "", words[k]);
		/* past the end of buf only the length counts on */
		if (off < len)
			snprintf(buf + off, len - off, "%s", item);
		off += strlen(item);
	}
	return off;
}
