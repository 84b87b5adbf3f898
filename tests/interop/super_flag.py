#!/usr/bin/env python3
"""super_flag.py IMG BIT: sets flag bit BIT in every btrfs superblock copy of
IMG and writes its crc32c again: the state a tool interrupted between two
superblock writes leaves (btrfstune's CHANGING_FSID is bit 35, _V2 bit 36)."""
import struct
import sys

from btrfs_crc import crc32c


def main():
    path, bit = sys.argv[1], int(sys.argv[2])
    done = 0
    with open(path, "r+b") as f:
        for off in (0x10000, 0x4000000, 0x4000000000):
            f.seek(off)
            sb = bytearray(f.read(4096))
            if len(sb) < 4096 or sb[0x40:0x48] != b"_BHRfS_M":
                continue
            if struct.unpack_from("<H", sb, 0xC4)[0] != 0:
                sys.exit("%s: only crc32c superblocks are handled" % path)
            flags = struct.unpack_from("<Q", sb, 0x38)[0] | (1 << bit)
            struct.pack_into("<Q", sb, 0x38, flags)
            struct.pack_into("<I", sb, 0, crc32c(bytes(sb[0x20:])))
            f.seek(off)
            f.write(sb)
            done += 1
    if not done:
        sys.exit("%s: no btrfs superblock" % path)


main()
