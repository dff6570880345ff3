// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* caps.c - the effective capabilities of this process against what a command needs (see caps.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "caps.h"
#include "errmsg.h"

static const struct {
	int cap;
	const char *name;
} cap_names[] = {
	{ RM_CAP_BPF, "CAP_BPF" },
	{ RM_CAP_PERFMON, "CAP_PERFMON" },
	{ RM_CAP_NET_ADMIN, "CAP_NET_ADMIN" },
};

int rm_caps_effective(unsigned long long *eff)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", eff) == 1) {
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

/* "A, B and C" of the capabilities in mask, in cap_names order. */
static void list(unsigned long long mask, char *buf, size_t len)
{
	int n = 0, total = 0;
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
		total += !!(mask & (1ull << cap_names[i].cap));
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]) && off < len; i++) {
		if (!(mask & (1ull << cap_names[i].cap)))
			continue;
		n++;
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
					n == 1       ? ""
					: n == total ? " and "
						     : ", ",
					cap_names[i].name);
	}
}

int rm_caps_check(const char *command, unsigned long long need, char *err, size_t errlen)
{
	unsigned long long eff, have, missing;
	char needs[128], miss[128];

	if (rm_caps_effective(&eff))
		return 0; /* cannot tell: let the kernel decide */
	have = eff;
	if (eff & (1ull << RM_CAP_SYS_ADMIN))
		have |= (1ull << RM_CAP_BPF) | (1ull << RM_CAP_PERFMON);
	missing = need & ~have;
	if (!missing)
		return 0;
	list(need, needs, sizeof(needs));
	list(missing, miss, sizeof(miss));
	rm_errf(err, errlen, "%s needs %s (run it as root or as the rocemeter@ service); missing: %s", command, needs,
		miss);
	return -EPERM;
}
