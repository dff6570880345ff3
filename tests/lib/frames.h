/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * frames.h - the C tests' one frame builder: RoCEv2 frames (Ethernet,
 * optional VLAN tags, IPv4 or IPv6 with optional destination-options
 * headers, UDP, BTH, a DETH for UD opcodes, payload, a 4-byte ICRC
 * placeholder) from a struct rm_frame_spec, and helpers to run them through
 * a BPF program with BPF_PROG_TEST_RUN. The IPv4 header checksum is filled
 * in; the UDP checksum and the ICRC are not (the pytest suites check those
 * on frames built by scapy). Used by selftests/bpf, selftests/bench and the
 * helper tests/lib/fl_helper.
 */
#ifndef ROCEMETER_TESTS_FRAMES_H
#define ROCEMETER_TESTS_FRAMES_H

#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "rocemeter/bth.h"
#include "rocemeter/flowlabel.h"

/* What to build; a zeroed spec is an IPv6 RC frame with defaults marked "0:". */
struct rm_frame_spec {
	int ipv4;        /* 1: IPv4 instead of IPv6 */
	int nvlan;       /* 802.1Q tags (VLAN IDs 100, 101, ...) */
	uint16_t tpid;   /* 0: 0x8100 for every tag */
	uint8_t src[16]; /* IPv6 (IPv4: first 4 bytes) */
	uint8_t dst[16];
	uint32_t label;     /* arriving Flow Label (20 bits) */
	uint8_t tclass;     /* Traffic Class */
	int n_dstopts;      /* IPv6 destination-options headers (8 bytes each) before UDP */
	uint16_t udp_dport; /* 0: 4791 */
	uint8_t opcode;
	uint8_t tver;      /* BTH TVer (4 bits) */
	uint16_t pkey;     /* 0: 0xFFFF (the default P_Key) */
	uint32_t dqp, sqp; /* sqp written into a DETH when the opcode is UD SEND */
	uint32_t psn;      /* BTH PSN (24 bits) */
	int no_deth;       /* 1: omit the DETH even for UD opcodes */
	uint32_t payload;  /* bytes after BTH/DETH (extended headers, data), before the ICRC */
};

static inline void rm_put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void rm_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

/* RFC 791 header checksum of a 20-byte IPv4 header (checksum field zero). */
static inline uint16_t rm_ipv4_checksum(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Build the frame into buf (cap bytes); returns its length, 0 if it does not fit. */
static inline size_t rm_frame_build(uint8_t *buf, size_t cap, const struct rm_frame_spec *s)
{
	int deth = rm_opcode_has_deth(s->opcode) && !s->no_deth;
	size_t udp_len = 8 + 12 + (deth ? 8 : 0) + s->payload + 4;
	size_t l3 = s->ipv4 ? 20 : 40 + 8 * (size_t)s->n_dstopts;
	size_t len = 14 + 4 * (size_t)s->nvlan + l3 + udp_len, off = 12;
	uint8_t *ip, *udp, *bth;

	if (len > cap || len > 0xffff)
		return 0;
	memset(buf, 0, len);
	memcpy(buf, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	for (int i = 0; i < s->nvlan; i++) {
		rm_put16(buf + off, s->tpid ? s->tpid : 0x8100);
		rm_put16(buf + off + 2, 100 + i);
		off += 4;
	}
	rm_put16(buf + off, s->ipv4 ? 0x0800 : 0x86dd);
	ip = buf + off + 2;
	if (s->ipv4) {
		ip[0] = 0x45;
		rm_put16(ip + 2, (uint32_t)(20 + udp_len));
		ip[8] = 64;
		ip[9] = 17;
		memcpy(ip + 12, s->src, 4);
		memcpy(ip + 16, s->dst, 4);
		rm_put16(ip + 10, rm_ipv4_checksum(ip));
		udp = ip + 20;
	} else {
		uint8_t *eh = ip + 40;

		ip[0] = (uint8_t)(0x60 | (s->tclass >> 4));
		ip[1] = (uint8_t)((s->tclass << 4) | ((s->label >> 16) & 0x0f));
		rm_put16(ip + 2, s->label & 0xffff);
		rm_put16(ip + 4, (uint32_t)(l3 - 40 + udp_len));
		ip[6] = s->n_dstopts ? 60 : 17;
		ip[7] = 64;
		memcpy(ip + 8, s->src, 16);
		memcpy(ip + 24, s->dst, 16);
		for (int i = 0; i < s->n_dstopts; i++, eh += 8) {
			eh[0] = i + 1 < s->n_dstopts ? 60 : 17;
			eh[1] = 0; /* 8 bytes */
			eh[2] = 1; /* PadN option */
			eh[3] = 4;
		}
		udp = eh;
	}
	rm_put16(udp, 49152);
	rm_put16(udp + 2, s->udp_dport ? s->udp_dport : RM_ROCEV2_UDP_PORT);
	rm_put16(udp + 4, (uint32_t)udp_len);
	bth = udp + 8;
	bth[0] = s->opcode;
	bth[1] = s->tver & 0x0f;
	rm_put16(bth + 2, s->pkey ? s->pkey : 0xffff);
	rm_put24(bth + 5, s->dqp);
	rm_put24(bth + 9, s->psn);
	if (deth) {
		memcpy(bth + 12, "\x80\x01\x00\x00", 4); /* Q_Key */
		rm_put24(bth + 17, s->sqp);
	}
	return len;
}

/* Run one frame through prog_fd; out gets the resulting frame. Returns 0 or -errno. */
static inline int rm_frame_test_run(int prog_fd, const uint8_t *in, size_t len, uint8_t *out, size_t cap,
				    size_t *out_len, uint32_t *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = (uint32_t)cap, .repeat = 1);
	int rc = bpf_prog_test_run_opts(prog_fd, &o);

	if (rc)
		return rc;
	*out_len = o.data_size_out;
	*retval = o.retval;
	return 0;
}

/* Statistics of the map fl_stats (per-CPU) summed over CPUs into sums[RM_FL_STAT__COUNT]. */
static inline int rm_fl_stats_sum(int map_fd, uint64_t *sums)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;

	if (ncpu <= 0)
		return -1;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -1;
	for (uint32_t k = 0; k < RM_FL_STAT__COUNT; k++) {
		sums[k] = 0;
		if (bpf_map_lookup_elem(map_fd, &k, v)) {
			free(v);
			return -1;
		}
		for (int c = 0; c < ncpu; c++)
			sums[k] += v[c];
	}
	free(v);
	return 0;
}

/* The Flow Label of an untagged or tagged IPv6 frame (ip = IPv6 header). */
static inline uint32_t rm_frame_flow_label(const uint8_t *ip)
{
	return ((uint32_t)(ip[1] & 0x0f) << 16) | ((uint32_t)ip[2] << 8) | ip[3];
}

#endif /* ROCEMETER_TESTS_FRAMES_H */
