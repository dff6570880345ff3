/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * features.h - the kernel's BPF features the meter needs, probed before it
 * is loaded (libbpf's feature probes; kfuncs by name in the kernel's BTF),
 * so that `attach` names the missing one instead of a verifier log. One
 * table, RM_KERNEL_FEATURES, that docs/requirements.md lists too.
 */
#ifndef ROCEMETER_FEATURES_H
#define ROCEMETER_FEATURES_H

#include <stddef.h>

/*
 * Test only: a comma-separated list of the table's names (ringbuf, ...)
 * that the probes then report absent, to run each refusal on a kernel that
 * has them all. Not for production use.
 */
#define RM_FEATURES_TEST_ABSENT_ENV "ROCEMETER_TEST_KERNEL_LACKS"

/*
 * X(ID, name, what, first mainline kernel, how it is probed, argument,
 * needed by): probe HELPER (libbpf_probe_bpf_helper for XDP), MAP
 * (libbpf_probe_bpf_map_type), KFUNC (a FUNC of that name in the vmlinux
 * BTF); needed by ALL attachments, or VLAN_META (namespace = vlan in native
 * mode: the device-bound program).
 */
#define RM_KERNEL_FEATURES(X)                                                                                          \
	X(RINGBUF, "ringbuf", "the BPF ring buffer (BPF_MAP_TYPE_RINGBUF)", "5.8", MAP, BPF_MAP_TYPE_RINGBUF, ALL)     \
	X(SPIN_LOCK, "spin_lock", "bpf_spin_lock in map values", "5.1", HELPER, BPF_FUNC_spin_lock, ALL)               \
	X(KTIME_COARSE, "ktime_get_coarse_ns", "the helper bpf_ktime_get_coarse_ns", "5.11", HELPER,                   \
	  BPF_FUNC_ktime_get_coarse_ns, ALL)                                                                           \
	X(XDP_LOAD_BYTES, "xdp_load_bytes", "XDP multi-buffer (bpf_xdp_load_bytes)", "5.18", HELPER,                   \
	  BPF_FUNC_xdp_load_bytes, ALL)                                                                                \
	X(ITER_NUM, "iter_num", "open-coded iterators (the kfunc bpf_iter_num_new)", "6.4", KFUNC, "bpf_iter_num_new", \
	  ALL)                                                                                                         \
	X(RX_VLAN, "rx_vlan_tag", "XDP RX metadata VLAN tags (the kfunc bpf_xdp_metadata_rx_vlan_tag)", "6.8", KFUNC,  \
	  "bpf_xdp_metadata_rx_vlan_tag", VLAN_META)

/*
 * Probe the features an attachment needs (vlan_meta: also those of the
 * device-bound program of namespace = vlan). 0 when the kernel has them
 * all; -EOPNOTSUPP with the first missing one named in err ("the kernel
 * lacks WHAT (Linux FIRST or later; docs/requirements.md)", and what to do
 * for a VLAN_META one); another -errno when a probe could not run.
 */
int rm_features_check(int vlan_meta, char *err, size_t errlen);

#endif
