/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * caps.h - does this process have the capabilities a command needs? Asked
 * before a BPF object is loaded, so that a missing capability is named
 * ("missing: CAP_PERFMON") instead of surfacing as a verifier refusal.
 * Used by `attach` (the meter daemon and the flow-label program).
 */
#ifndef ROCEMETER_CAPS_H
#define ROCEMETER_CAPS_H

#include <stddef.h>

/* Capability numbers (linux/capability.h). */
#define RM_CAP_NET_ADMIN 12
#define RM_CAP_SYS_ADMIN 21
#define RM_CAP_PERFMON   38
#define RM_CAP_BPF       39

/* Sets a command needs, as masks of 1ull << RM_CAP_*. */
#define RM_CAPS_METER     ((1ull << RM_CAP_BPF) | (1ull << RM_CAP_PERFMON) | (1ull << RM_CAP_NET_ADMIN))
#define RM_CAPS_FLOWLABEL ((1ull << RM_CAP_BPF) | (1ull << RM_CAP_NET_ADMIN))

/*
 * The effective capabilities of this process (CapEff of /proc/self/status)
 * into *eff. 0, or -errno.
 */
int rm_caps_effective(unsigned long long *eff);

/*
 * 0 when every capability of need is effective (CAP_SYS_ADMIN stands in for
 * CAP_BPF and CAP_PERFMON, as the kernel lets it); otherwise -EPERM with
 * one line in err naming the command and what is missing:
 * "attach needs CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN (run it as root or
 * as the rocemeter@ service); missing: CAP_PERFMON".
 */
int rm_caps_check(const char *command, unsigned long long need, char *err, size_t errlen);

#endif
