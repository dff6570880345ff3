// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * features.c - probe the kernel's BPF features of RM_KERNEL_FEATURES before
 * `attach` loads the meter (features.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "common/errmsg.h"
#include "features.h"

enum probe { MAP, HELPER, KFUNC };
enum need { ALL, VLAN_META };

struct feature {
	const char *name, *what, *since;
	enum probe probe;
	long arg;          /* MAP: the map type; HELPER: the helper ID */
	const char *kfunc; /* KFUNC: its name */
	enum need need;
};

#define ARG_MAP(a)                                    (long)(a), NULL
#define ARG_HELPER(a)                                 (long)(a), NULL
#define ARG_KFUNC(a)                                  0, (a)
#define ROW_(ID, name, what, since, probe, arg, need) { name, what, since, probe, ARG_##probe(arg), need },
static const struct feature features[] = { RM_KERNEL_FEATURES(ROW_) };
#undef ROW_

/* Whether the test list of RM_FEATURES_TEST_ABSENT_ENV names f. */
static int forced_absent(const struct feature *f)
{
	const char *list = getenv(RM_FEATURES_TEST_ABSENT_ENV);
	size_t n = strlen(f->name);

	for (const char *p = list; p && *p; p += strcspn(p, ","), p += *p == ',') {
		if (strncmp(p, f->name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	}
	return 0;
}

/* 1 if the kernel has f, 0 if not, or -errno when the probe failed. */
static int probe(const struct feature *f, struct btf **vmlinux)
{
	if (forced_absent(f))
		return 0;
	switch (f->probe) {
	case MAP:
		return libbpf_probe_bpf_map_type((enum bpf_map_type)f->arg, NULL);
	case HELPER:
		return libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, (enum bpf_func_id)f->arg, NULL);
	case KFUNC:
		if (!*vmlinux) {
			*vmlinux = btf__load_vmlinux_btf();
			if (!*vmlinux) {
				int e = errno ? errno : ENOENT;

				*vmlinux = NULL;
				return -e;
			}
		}
		return btf__find_by_name_kind(*vmlinux, f->kfunc, BTF_KIND_FUNC) > 0;
	}
	return -EINVAL;
}

int rm_features_check(int vlan_meta, char *err, size_t errlen)
{
	struct btf *vmlinux = NULL;
	int rc = 0;

	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]) && !rc; i++) {
		const struct feature *f = &features[i];
		int has;

		if (f->need == VLAN_META && !vlan_meta)
			continue;
		has = probe(f, &vmlinux);
		if (has < 0) {
			rm_errf(err, errlen, "cannot probe the kernel for %s: %s", f->what, strerror(-has));
			rc = has;
		} else if (!has) {
			rm_errf(err, errlen, "the kernel lacks %s (Linux %s or later; docs/requirements.md)%s", f->what,
				f->since,
				f->need == VLAN_META
					? ": namespace = vlan in native mode reads VLAN tags from the packet "
					  "metadata; use --mode generic with the NIC's receive VLAN offload "
					  "off (ethtool -K IFACE rxvlan off)"
					: "");
			rc = -EOPNOTSUPP;
		}
	}
	btf__free(vmlinux);
	return rc;
}
