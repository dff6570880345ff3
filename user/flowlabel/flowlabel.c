// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flowlabel.c - seed 002 in userspace: `rocemeter flowlabel` (compute the
 * label of a connection) and the attach/detach/status API of the tc program
 * bpf/flowlabel.bpf.c (see flowlabel.h for the contracts).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/errmsg.h"
#include "common/command.h"
#include "flowlabel.h"
#include "flowlabel.skel.h"

static const char *const variant_names[RM_FL__VARIANTS] = {
	[RM_FL_LITERAL] = "literal",
	[RM_FL_CRC32] = "crc32",
	[RM_FL_CRC32C] = "crc32c",
	[RM_FL_MPEG2] = "mpeg2",
};

#define RM_FL_STAT_NAME_(suffix, name, desc) name,
static const char *const stat_names[RM_FL_STAT__COUNT] = { RM_FL_STATS(RM_FL_STAT_NAME_) };
#define RM_FL_STAT_DESC_(suffix, name, desc) desc,
static const char *const stat_descs[RM_FL_STAT__COUNT] = { RM_FL_STATS(RM_FL_STAT_DESC_) };

int rm_flowlabel_variant_from_name(const char *name)
{
	for (int i = 0; name && i < RM_FL__VARIANTS; i++)
		if (!strcmp(name, variant_names[i]))
			return i;
	return -1;
}

const char *rm_flowlabel_variant_name(uint32_t variant)
{
	return variant < RM_FL__VARIANTS ? variant_names[variant] : "?";
}

int rm_flowlabel_direction_from_name(const char *name)
{
	if (name && !strcmp(name, "ingress"))
		return RM_FL_INGRESS;
	if (name && !strcmp(name, "egress"))
		return RM_FL_EGRESS;
	return -1;
}

const char *rm_flowlabel_direction_name(int direction)
{
	return direction == RM_FL_INGRESS ? "ingress" : direction == RM_FL_EGRESS ? "egress" : "?";
}

uint32_t rm_flowlabel_compute(const struct rm_fl_params *p, const struct in6_addr *src,
			      const struct in6_addr *dst, int has_sqp, uint32_t sqp, uint32_t dqp,
			      uint32_t *hash32)
{
	struct rm_fl_sliced tabs; /* 10 KiB */
	__u8 in[RM_FL_INPUT_MAX];
	__u32 len, h;

	rm_fl_sliced_init(p, &tabs);
	len = rm_fl_input(in, has_sqp, sqp & 0xffffff, dqp & 0xffffff, &src->s6_addr[14],
			  &dst->s6_addr[14]);
	h = rm_fl_crc_sliced(p, &tabs, in, len);
	if (hash32)
		*hash32 = h;
	return rm_fl_label(h);
}

/* Open the skeleton and set its .rodata from opts (not loaded yet). */
static struct flowlabel *open_configured(const struct rm_flowlabel_opts *opts, char *err,
					     size_t errlen)
{
	struct rm_fl_params p = { .variant = opts->variant, .mix = opts->mix ? 1 : 0, .seed = opts->seed };
	struct flowlabel *skel;

	if (opts->variant >= RM_FL__VARIANTS) {
		rm_errf(err, errlen, "unknown hash variant %u", opts->variant);
		errno = EINVAL;
		return NULL;
	}
	skel = flowlabel__open();
	if (!skel) {
		rm_errf(err, errlen, "cannot open the flow-label BPF object: %s", strerror(errno));
		return NULL;
	}
	skel->rodata->fl_variant = p.variant;
	skel->rodata->fl_mix = p.mix;
	skel->rodata->fl_seed = p.seed;
	rm_fl_sliced_init(&p, (struct rm_fl_sliced *)&skel->rodata->fl_tabs);
	return skel;
}

struct flowlabel *rm_flowlabel_open_load(const struct rm_flowlabel_opts *opts, char *err,
					     size_t errlen)
{
	struct flowlabel *skel = open_configured(opts, err, errlen);
	int rc;

	if (!skel)
		return NULL;
	rc = flowlabel__load(skel);
	if (rc) {
		rm_errf(err, errlen, "cannot load the flow-label BPF program: %s", strerror(-rc));
		flowlabel__destroy(skel);
		errno = -rc;
		return NULL;
	}
	return skel;
}

static int pin_dir(const char *ifname, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", RM_FL_PIN_BASE, ifname);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int pin_path(const char *ifname, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s/%s", RM_FL_PIN_BASE, ifname, RM_FL_PIN_NAME);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int check_ifname(const char *ifname, char *err, size_t errlen)
{
	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE || strchr(ifname, '/') ||
	    !strcmp(ifname, ".") || !strcmp(ifname, "..")) {
		rm_errf(err, errlen, "invalid interface name '%s'", ifname ? ifname : "");
		return -EINVAL;
	}
	return 0;
}

static void tc_hook_init(struct bpf_tc_hook *hook, int ifindex, int direction)
{
	memset(hook, 0, sizeof(*hook));
	hook->sz = sizeof(*hook);
	hook->ifindex = ifindex;
	hook->attach_point = direction == RM_FL_INGRESS ? BPF_TC_INGRESS : BPF_TC_EGRESS;
}

/* Program id of our filter in `direction`, 0 if none. */
static __u32 tc_prog_id(int ifindex, int direction)
{
	struct bpf_tc_hook hook;
	LIBBPF_OPTS(bpf_tc_opts, q, .handle = RM_FL_TC_HANDLE, .priority = RM_FL_TC_PRIO);
	libbpf_print_fn_t old;
	int rc;

	tc_hook_init(&hook, ifindex, direction);
	old = libbpf_set_print(NULL); /* no clsact yet is not an error here */
	rc = bpf_tc_query(&hook, &q);
	libbpf_set_print(old);
	return rc ? 0 : q.prog_id;
}

static int mkdir_p(const char *dir, char *err, size_t errlen)
{
	struct statfs sfs;

	if (statfs("/sys/fs/bpf", &sfs) || sfs.f_type != BPF_FS_MAGIC) {
		rm_errf(err, errlen, "bpffs is not mounted at /sys/fs/bpf (mount -t bpf bpf /sys/fs/bpf)");
		return -ENOENT;
	}
	if (mkdir(RM_FL_PIN_BASE, 0700) && errno != EEXIST)
		goto fail;
	if (mkdir(dir, 0700) && errno != EEXIST)
		goto fail;
	return 0;
fail:
	rm_errf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
	return -errno;
}

int rm_flowlabel_attach(const char *ifname, const struct rm_flowlabel_opts *opts, char *err,
			size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct flowlabel *skel;
	struct bpf_tc_hook hook;
	LIBBPF_OPTS(bpf_tc_opts, to, .handle = RM_FL_TC_HANDLE, .priority = RM_FL_TC_PRIO);
	int ifindex, rc, pinned_before;
	__u32 id;

	rc = check_ifname(ifname, err, errlen);
	if (rc)
		return rc;
	if (opts->direction != RM_FL_INGRESS && opts->direction != RM_FL_EGRESS) {
		rm_errf(err, errlen, "direction must be ingress or egress");
		return -EINVAL;
	}
	ifindex = (int)if_nametoindex(ifname);
	if (!ifindex) {
		rm_errf(err, errlen, "no interface '%s': %s", ifname, strerror(errno));
		return -ENODEV;
	}
	id = tc_prog_id(ifindex, opts->direction);
	if (id) {
		rm_errf(err, errlen,
		       "the flow-label program is already attached to %s %s (program id %u); detach it first",
		       ifname, rm_flowlabel_direction_name(opts->direction), id);
		return -EEXIST;
	}
	if (pin_dir(ifname, dir, sizeof(dir)) || pin_path(ifname, path, sizeof(path))) {
		rm_errf(err, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	rc = mkdir_p(dir, err, errlen);
	if (rc)
		return rc;
	pinned_before = access(path, F_OK) == 0;

	skel = open_configured(opts, err, errlen);
	if (!skel) {
		rc = errno ? -errno : -EINVAL;
		goto out;
	}
	/* Reuses the pin of the other direction if there is one, else pins at load. */
	rc = bpf_map__set_pin_path(skel->maps.fl_stats, path);
	if (!rc)
		rc = flowlabel__load(skel);
	if (rc) {
		rm_errf(err, errlen, "cannot load the flow-label BPF program: %s", strerror(-rc));
		goto out;
	}
	tc_hook_init(&hook, ifindex, opts->direction);
	rc = bpf_tc_hook_create(&hook);
	if (rc && rc != -EEXIST) {
		rm_errf(err, errlen, "cannot create the clsact qdisc on %s: %s", ifname, strerror(-rc));
		goto out;
	}
	to.prog_fd = bpf_program__fd(skel->progs.rocemeter_fl);
	rc = bpf_tc_attach(&hook, &to); /* no BPF_TC_F_REPLACE: fails if one appeared meanwhile */
	if (rc) {
		rm_errf(err, errlen, "cannot attach the tc filter to %s %s: %s", ifname,
		       rm_flowlabel_direction_name(opts->direction), strerror(-rc));
		goto out;
	}
out:
	if (rc && !pinned_before) {
		unlink(path);
		rmdir(dir); /* only if empty */
	}
	flowlabel__destroy(skel); /* the filter keeps the program alive */
	return rc;
}

int rm_flowlabel_detach(const char *ifname, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int ifindex, rc, removed = 0;

	rc = check_ifname(ifname, err, errlen);
	if (rc)
		return rc;
	if (pin_dir(ifname, dir, sizeof(dir)) || pin_path(ifname, path, sizeof(path))) {
		rm_errf(err, errlen, "pin path too long");
		return -ENAMETOOLONG;
	}
	ifindex = (int)if_nametoindex(ifname); /* 0: interface gone, pins may remain */
	for (int d = RM_FL_INGRESS; ifindex && d <= RM_FL_EGRESS; d++) {
		struct bpf_tc_hook hook;
		LIBBPF_OPTS(bpf_tc_opts, to, .handle = RM_FL_TC_HANDLE, .priority = RM_FL_TC_PRIO);

		if (!tc_prog_id(ifindex, d))
			continue;
		tc_hook_init(&hook, ifindex, d);
		rc = bpf_tc_detach(&hook, &to);
		if (rc) {
			rm_errf(err, errlen, "cannot detach the tc filter from %s %s: %s", ifname,
			       rm_flowlabel_direction_name(d), strerror(-rc));
			return rc;
		}
		removed++;
	}
	if (unlink(path) == 0)
		removed++;
	else if (errno != ENOENT) {
		rm_errf(err, errlen, "cannot remove %s: %s", path, strerror(errno));
		return -errno;
	}
	rmdir(dir); /* fails, as it should, while other pins remain */
	if (!removed) {
		rm_errf(err, errlen, "the flow-label program is not attached to %s", ifname);
		return 1;
	}
	return 0;
}

/* Variant, mix and seed of a loaded program, read from its .rodata map. */
static int prog_config(__u32 prog_id, struct flowlabel__rodata *ro)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), map_ids[16];
	int fd, found = -ENOENT;

	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return -errno;
	info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	info.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		close(fd);
		return -errno;
	}
	close(fd);
	for (__u32 i = 0; i < info.nr_map_ids && i < 16 && found; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi), key = 0;
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);
		size_t n;

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen)) {
			n = strlen(mi.name);
			if (n >= 7 && !strcmp(mi.name + n - 7, ".rodata") &&
			    mi.value_size == sizeof(*ro) && !bpf_map_lookup_elem(mfd, &key, ro))
				found = 0;
		}
		close(mfd);
	}
	return found;
}

int rm_flowlabel_status(const char *ifname, FILE *out, int json)
{
	char path[PATH_MAX], err[128];
	__u64 sums[RM_FL_STAT__COUNT] = {}, total = 0, *vals;
	int fd, ncpu, ifindex;

	if (check_ifname(ifname, err, sizeof(err))) {
		fprintf(stderr, "rocemeter: %s\n", err);
		return -EINVAL;
	}
	if (pin_path(ifname, path, sizeof(path)))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0) {
		if (errno == ENOENT) {
			if (!json)
				fprintf(out, "flowlabel: not attached to %s\n", ifname);
			return 1;
		}
		fprintf(stderr, "rocemeter: cannot open %s: %s\n", path, strerror(errno));
		return -errno;
	}
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		close(fd);
		fprintf(stderr, "rocemeter: cannot count CPUs: %s\n", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals) {
		close(fd);
		return -ENOMEM;
	}
	for (__u32 k = 0; k < RM_FL_STAT__COUNT; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			sums[k] += vals[c];
		total += sums[k];
	}
	free(vals);
	close(fd);

	ifindex = (int)if_nametoindex(ifname);
	if (json)
		fprintf(out, "{\"interface\":\"%s\",\"attached\":{", ifname);
	else
		fprintf(out, "flowlabel on %s:\n", ifname);
	for (int d = RM_FL_INGRESS; d <= RM_FL_EGRESS; d++) {
		__u32 id = ifindex ? tc_prog_id(ifindex, d) : 0;
		struct flowlabel__rodata ro;
		int have = id && prog_config(id, &ro) == 0;

		if (json) {
			fprintf(out, "%s\"%s\":", d == RM_FL_INGRESS ? "" : ",", rm_flowlabel_direction_name(d));
			if (!id)
				fprintf(out, "null");
			else if (!have)
				fprintf(out, "{\"prog_id\":%u}", id);
			else
				fprintf(out, "{\"prog_id\":%u,\"hash\":\"%s\",\"mix\":%s,\"seeded\":%s}", id,
					rm_flowlabel_variant_name(ro.fl_variant), ro.fl_mix ? "true" : "false",
					ro.fl_seed ? "true" : "false");
		} else if (!id) {
			fprintf(out, "  %-8s not attached\n", rm_flowlabel_direction_name(d));
		} else if (!have) {
			fprintf(out, "  %-8s program id %u\n", rm_flowlabel_direction_name(d), id);
		} else {
			fprintf(out, "  %-8s program id %u, hash %s, mix %s, seed %s\n",
				rm_flowlabel_direction_name(d), id, rm_flowlabel_variant_name(ro.fl_variant),
				ro.fl_mix ? "on" : "off", ro.fl_seed ? "set" : "none");
		}
	}
	if (json) {
		fprintf(out, "},\"stats\":{");
		for (int k = 0; k < RM_FL_STAT__COUNT; k++)
			fprintf(out, "%s\"%s\":%llu", k ? "," : "", stat_names[k], (unsigned long long)sums[k]);
		fprintf(out, "},\"frames\":%llu}\n", (unsigned long long)total);
	} else {
		fprintf(out, "statistics (frames, all CPUs):\n");
		for (int k = 0; k < RM_FL_STAT__COUNT; k++)
			fprintf(out, "  %-15s %12llu  %s\n", stat_names[k], (unsigned long long)sums[k],
				stat_descs[k]);
		fprintf(out, "  %-15s %12llu\n", "frames", (unsigned long long)total);
	}
	return 0;
}

/* ---- `rocemeter flowlabel` ---- */

static void fl_usage(FILE *f)
{
	fprintf(f,
		"Usage: rocemeter flowlabel --src ADDR --dst ADDR --dqp QPN [--sqp QPN]\n"
		"                           [--hash literal|crc32|crc32c|mpeg2] [--mix] [--seed N]\n\n"
		"Print the IPv6 Flow Label that the flow-label program (seed 002) writes into a\n"
		"RoCEv2 packet from ADDR to ADDR with destination QP QPN: the low 20 bits of a\n"
		"CRC over {Src_QP || Dst_QP || low 16 bits of src || low 16 bits of dst} when\n"
		"--sqp is given (UD, DETH present), else {Dst_QP || low16 src || low16 dst}.\n\n"
		"Options:\n"
		"  -s, --src ADDR   IPv6 source address\n"
		"  -d, --dst ADDR   IPv6 destination address\n"
		"  -q, --dqp QPN    BTH destination QP (0..0xffffff, decimal or 0x hex)\n"
		"  -Q, --sqp QPN    DETH source QP (UD SEND opcodes 0x64/0x65)\n"
		"  -H, --hash NAME  literal (default: the seed's text taken literally),\n"
		"                   crc32 (zlib), crc32c, mpeg2\n"
		"  -m, --mix        apply the murmur3 finalizer to the 32-bit result\n"
		"  -S, --seed N     32-bit secret XORed into the initial CRC register\n"
		"  -h, --help       this text\n\n"
		"A label of 0 means the program leaves the packet unchanged.\n");
}

/* Decimal, or hex after 0x/0X (a leading 0 is not octal); no sign, no blanks. */
static int parse_u32(const char *s, uint32_t max, uint32_t *v)
{
	char *end;
	unsigned long long x;
	int base = 10;

	if (!s)
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
	}
	if (!((*s >= '0' && *s <= '9') || (base == 16 && ((*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))))
		return -1;
	errno = 0;
	x = strtoull(s, &end, base);
	if (errno || *end || x > max)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int parse_addr6(const char *opt, const char *s, struct in6_addr *a)
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, s, a) == 1)
		return 0;
	if (inet_pton(AF_INET, s, &a4) == 1)
		fprintf(stderr, "rocemeter flowlabel: %s %s: an IPv4 address; Flow Labels exist only in IPv6\n",
			opt, s);
	else
		fprintf(stderr, "rocemeter flowlabel: %s '%s': not an IPv6 address\n", opt, s);
	return -1;
}

static int cmd_flowlabel(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "src", required_argument, NULL, 's' }, { "dst", required_argument, NULL, 'd' },
		{ "dqp", required_argument, NULL, 'q' }, { "sqp", required_argument, NULL, 'Q' },
		{ "hash", required_argument, NULL, 'H' }, { "mix", no_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rm_fl_params p = { .variant = RM_FL_LITERAL };
	struct in6_addr src, dst;
	int have_src = 0, have_dst = 0, have_dqp = 0, have_sqp = 0, c, v;
	uint32_t dqp = 0, sqp = 0, hash, label;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:d:q:Q:H:mS:h", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_addr6("--src", optarg, &src))
				return RM_EXIT_USAGE;
			have_src = 1;
			break;
		case 'd':
			if (parse_addr6("--dst", optarg, &dst))
				return RM_EXIT_USAGE;
			have_dst = 1;
			break;
		case 'q':
		case 'Q':
			if (parse_u32(optarg, 0xffffff, c == 'q' ? &dqp : &sqp)) {
				fprintf(stderr, "rocemeter flowlabel: --%s '%s': a QPN is 0..0xffffff (24 bits)\n",
					c == 'q' ? "dqp" : "sqp", optarg);
				return RM_EXIT_USAGE;
			}
			if (c == 'q')
				have_dqp = 1;
			else
				have_sqp = 1;
			break;
		case 'H':
			v = rm_flowlabel_variant_from_name(optarg);
			if (v < 0) {
				fprintf(stderr, "rocemeter flowlabel: --hash '%s': use literal, crc32, crc32c or mpeg2\n",
					optarg);
				return RM_EXIT_USAGE;
			}
			p.variant = (__u32)v;
			break;
		case 'm':
			p.mix = 1;
			break;
		case 'S':
			if (parse_u32(optarg, 0xffffffffu, &p.seed)) {
				fprintf(stderr, "rocemeter flowlabel: --seed '%s': a 32-bit number (decimal or 0x hex)\n",
					optarg);
				return RM_EXIT_USAGE;
			}
			break;
		case 'h':
			fl_usage(stdout);
			return RM_EXIT_OK;
		case ':':
			fprintf(stderr, "rocemeter flowlabel: option %s needs a value\n", argv[optind - 1]);
			return RM_EXIT_USAGE;
		default:
			fprintf(stderr, "rocemeter flowlabel: unknown option %s\n", argv[optind - 1]);
			fl_usage(stderr);
			return RM_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rocemeter flowlabel: unexpected argument '%s'\n", argv[optind]);
		return RM_EXIT_USAGE;
	}
	if (!have_src || !have_dst || !have_dqp) {
		fprintf(stderr, "rocemeter flowlabel: --src, --dst and --dqp are required\n");
		fl_usage(stderr);
		return RM_EXIT_USAGE;
	}
	label = rm_flowlabel_compute(&p, &src, &dst, have_sqp, sqp, dqp, &hash);
	printf("hash:       0x%08x (%s%s%s)\n", hash, rm_flowlabel_variant_name(p.variant),
	       p.mix ? ", mix" : "", p.seed ? ", seeded" : "");
	printf("flow label: 0x%05x (%u)\n", label, label);
	if (!label)
		printf("note: label 0 - the program leaves such packets unchanged\n");
	return RM_EXIT_OK;
}

RM_COMMAND(flowlabel, 70, "compute the IPv6 Flow Label of a RoCEv2 connection (seed 002)",
	   cmd_flowlabel);
