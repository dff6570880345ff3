// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * identity.c - the default observationPointId of `attach` from the host's
 * machine-id, the interface's name and its hardware address (identity.h).
 */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errmsg.h"
#include "identity.h"

#define MACHINE_ID_LEN 32
#define HW_ADDR_MAX    32 /* MAX_ADDR_LEN of the kernel */

/* The 32 hex digits of RM_MACHINE_ID_PATH into id. 0, or -errno with the reason in err. */
static int read_machine_id(char id[MACHINE_ID_LEN], char *err, size_t errlen)
{
	char line[64];
	FILE *f = fopen(RM_MACHINE_ID_PATH, "re");
	int rc = 0;

	if (!f) {
		rc = -errno;
		rm_errf(err, errlen, "%s: %s", RM_MACHINE_ID_PATH, strerror(errno));
		return rc;
	}
	if (!fgets(line, sizeof(line), f) || strspn(line, "0123456789abcdef") != MACHINE_ID_LEN ||
	    (line[MACHINE_ID_LEN] != '\n' && line[MACHINE_ID_LEN] != '\0')) {
		rm_errf(err, errlen, "%s: not 32 lowercase hexadecimal digits (machine-id(5))", RM_MACHINE_ID_PATH);
		rc = -EINVAL;
	} else {
		memcpy(id, line, MACHINE_ID_LEN);
	}
	fclose(f);
	return rc;
}

/* Whether n octets of a are all zero. */
static int all_zero(const uint8_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i])
			return 0;
	return 1;
}

/*
 * ifname's hardware address into addr (up to cap octets): the permanent one,
 * else the current Ethernet one; the octet count, or -errno with the reason.
 */
static int hw_address(const char *ifname, uint8_t *addr, size_t cap, char *err, size_t errlen)
{
	struct {
		struct ethtool_perm_addr h;
		uint8_t data[HW_ADDR_MAX];
	} perm = { .h = { .cmd = ETHTOOL_GPERMADDR, .size = HW_ADDR_MAX } };
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), n = 0;

	if (fd < 0) {
		n = -errno;
		rm_errf(err, errlen, "socket: %s", strerror(errno));
		return n;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&perm;
	/* No ethtool support (EOPNOTSUPP) is as good as no permanent address. */
	if (!ioctl(fd, SIOCETHTOOL, &ifr) && perm.h.size <= cap && !all_zero(perm.data, perm.h.size)) {
		memcpy(addr, perm.data, perm.h.size);
		n = (int)perm.h.size;
	} else if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		n = -errno;
		rm_errf(err, errlen, "%s: cannot read its hardware address: %s", ifname, strerror(errno));
	} else if (ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER && cap >= 6) {
		memcpy(addr, ifr.ifr_hwaddr.sa_data, 6);
		n = 6;
	}
	close(fd);
	return n;
}

int rm_identity_obs_point(const char *ifname, uint64_t *id, char *err, size_t errlen)
{
	char mid[MACHINE_ID_LEN];
	uint8_t buf[MACHINE_ID_LEN + 1 + IFNAMSIZ + 1 + HW_ADDR_MAX], md[EVP_MAX_MD_SIZE];
	size_t name_len = strnlen(ifname, IFNAMSIZ), len = 0;
	unsigned int md_len = 0;
	int rc = read_machine_id(mid, err, errlen), n;

	if (rc)
		return rc;
	if (name_len >= IFNAMSIZ) {
		rm_errf(err, errlen, "'%s' is not an interface name", ifname);
		return -EINVAL;
	}
	memcpy(buf, mid, MACHINE_ID_LEN);
	len = MACHINE_ID_LEN;
	buf[len++] = 0;
	memcpy(buf + len, ifname, name_len);
	len += name_len;
	buf[len++] = 0;
	n = hw_address(ifname, buf + len, HW_ADDR_MAX, err, errlen);
	if (n < 0)
		return n;
	len += (size_t)n;
	if (!EVP_Digest(buf, len, md, &md_len, EVP_sha256(), NULL) || md_len < 8) {
		rm_errf(err, errlen, "SHA-256 failed (OpenSSL)");
		return -EIO;
	}
	*id = 0;
	for (int i = 0; i < 8; i++)
		*id |= (uint64_t)md[i] << (56 - 8 * i);
	*id = (*id & (RM_OBS_DERIVED_BIT - 1)) | RM_OBS_DERIVED_BIT;
	return 0;
}
