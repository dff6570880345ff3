// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vlan_push.bpf.c - test helper, not part of rocemeter: a tc program for the
 * sending end of a veth pair (clsact egress) that tags each frame with an
 * 802.1Q tag whose TCI is the last two bytes of the frame's source MAC
 * address (00:00: no tag). bpf_skb_vlan_push() puts the tag into the
 * packet's metadata (skb->vlan_tci), as a NIC's receive VLAN offload does;
 * the device writes it inline instead when its tx-vlan-offload is off. Used
 * by selftests/system/test_live_meter.py to give the meter both forms of one
 * tag.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define TC_ACT_OK   0
#define ETH_P_8021Q 0x8100

SEC("tc")
int rm_test_vlan_push(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u16 tci;

	if ((void *)(eth + 1) > data_end)
		return TC_ACT_OK;
	tci = (__u16)(eth->h_source[4] << 8 | eth->h_source[5]);
	if (tci)
		bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), tci);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
