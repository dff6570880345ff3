/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * addr.h - addresses an operator types: an IPv4 or IPv6 address, and a
 * listen address ADDR:PORT. A leaf below the configuration (config.c: the
 * [provision], [collect] listen and [capture] observation_point values) and
 * the option tables (params.c), so that both read an address by one rule.
 */
#ifndef ROCEMETER_ADDR_H
#define ROCEMETER_ADDR_H

#include <stddef.h>
#include <stdint.h>

/* IPv4 or IPv6 address text into 16 bytes, network order (IPv4 in the
 * first 4, rest zero). Returns 4, 6, or -1 if s is neither. */
int rm_parse_addr(const char *s, uint8_t out[16]);

/*
 * A listen address: "ADDR:PORT", "[IPV6]:PORT" or ":PORT" (every address),
 * PORT 1..65535 (decimal or 0x, opts.h). host (hlen bytes) gets ADDR
 * without brackets ("" for every address), *port the number. 0, or -EINVAL
 * with "'TEXT' is not ADDR:PORT, [IPV6]:PORT or :PORT with PORT in 1..65535"
 * in err.
 */
int rm_parse_listen(const char *text, char *host, size_t hlen, uint16_t *port, char *err, size_t errlen);

#endif /* ROCEMETER_ADDR_H */
