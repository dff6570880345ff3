# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The Flow Label hash of [FLOWLABEL] written here from its definitions, independently of
include/rocemeter/flowlabel.h: the hash input, the four variants of the program (the literal text,
zlib's CRC-32, CRC-32C, CRC-32/MPEG-2, bitwise) and the --mix finalizer. The tests of the program
(selftests/system/test_flowlabel.py) and of `flowlabel spread` (selftests/bpf/test_flowlabel_spread.py)
compute their expected labels with it; test_flowlabel.py checks it against the test vectors of
docs/flowlabel.md. Not a test file itself."""
import ipaddress
import zlib

VARIANTS = ("literal", "crc32", "crc32c", "mpeg2")


def crc_reflected(data, poly, init, xorout):
    """A reflected (LSB-first) CRC-32, bit by bit: register init, final XOR xorout."""
    reg = init
    for b in data:
        reg ^= b
        for _ in range(8):
            lsb = reg & 1
            reg >>= 1
            if lsb:
                reg ^= poly
    return reg ^ xorout


def crc_mpeg2(data, init):
    """CRC-32/MPEG-2: polynomial 0x04C11DB7, MSB first, register init, no final XOR."""
    reg = init
    for b in data:
        reg ^= b << 24
        for _ in range(8):
            msb = reg & 0x80000000
            reg = (reg << 1) & 0xFFFFFFFF
            if msb:
                reg ^= 0x04C11DB7
    return reg


def fmix32(h):
    """murmur3's 32-bit finalizer (the program's --mix)."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def ref_hash(variant, data, mix=False, seed=0):
    """The 32-bit hash of one of VARIANTS over data; seed XORs the initial register."""
    init = 0xFFFFFFFF ^ seed
    if variant == "literal":  # [FLOWLABEL]'s text: shift right, XOR 0x04C11DB7, no final XOR
        h = crc_reflected(data, 0x04C11DB7, init, 0)
    elif variant == "crc32":  # zlib's value argument is the register after its final XOR
        h = zlib.crc32(data, seed) & 0xFFFFFFFF
    elif variant == "crc32c":
        h = crc_reflected(data, 0x82F63B78, init, 0xFFFFFFFF)
    else:
        h = crc_mpeg2(data, init)
    return fmix32(h) if mix else h


def low16(addr):
    """The last two bytes of the address as IPv6 sees it (IPv4: ::ffff:a.b.c.d has the same)."""
    return ipaddress.ip_address(addr).packed[-2:]


def ref_input(src, dst, dqp, sqp=None):
    """[FLOWLABEL]: {Src_QP ||} Dst_QP || low16(src) || low16(dst), big-endian."""
    head = sqp.to_bytes(3, "big") if sqp is not None else b""
    return head + dqp.to_bytes(3, "big") + low16(src) + low16(dst)
