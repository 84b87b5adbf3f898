#!/usr/bin/env python3
"""leaf_patch.py: states older kernels left, made on an image today's tools
wrote, where btrfs-progs and the kernel have no tool for them.  On a
one-device crc32c btrfs image, in every copy of the leaf (found with
`btrfs inspect-internal dump-tree`, its copies with `btrfs-map-logical`),
the leaf's checksum written again:

  leaf_patch.py inode-flags IMG TREE INO BITS
      ORs BITS into the flags of inode INO of tree TREE (NODATASUM on a
      file that holds data)
  leaf_patch.py empty IMG TREE
      drops every item of tree TREE, which must be one leaf (its checksums
      gone with the csum tree's)
  leaf_patch.py item-u32 IMG TREE "KEY" POS VALUE
      writes the 32-bit VALUE at byte POS of the data of the item whose key
      dump-tree prints as KEY (e.g. "13631488 FREE_SPACE_INFO 8388608")"""
import re
import struct
import subprocess
import sys

from btrfs_crc import crc32c

HEADER = 101        # struct btrfs_header
FLAGS_AT = 64       # btrfs_inode_item.flags


def find_item(img, tree, key):
    out = subprocess.run(["btrfs", "inspect-internal", "dump-tree", "-t", tree, img],
                         capture_output=True, text=True, check=True).stdout
    leaf = None
    want = re.compile(r"item \d+ key \(%s\) itemoff (\d+) itemsize (\d+)" % re.escape(key))
    for line in out.splitlines():
        m = re.match(r"leaf (\d+) items", line)
        if m:
            leaf = int(m.group(1))
        m = want.search(line)
        if m and leaf is not None:
            return leaf, int(m.group(1))
    sys.exit("%s: no item (%s) in tree %s" % (img, key, tree))


def copies(img, logical, nodesize):
    out = subprocess.run(["btrfs-map-logical", "-l", str(logical), "-b", str(nodesize), img],
                         capture_output=True, text=True, check=True).stdout
    phys = sorted({int(p) for p in re.findall(r"physical (\d+)", out)})
    if not phys:
        sys.exit("%s: btrfs-map-logical found no copy of %d" % (img, logical))
    return phys


def root_leaf(img, tree):
    out = subprocess.run(["btrfs", "inspect-internal", "dump-tree", "-t", tree, img],
                         capture_output=True, text=True, check=True).stdout
    leaves = re.findall(r"^leaf (\d+) items", out, re.M)
    if len(leaves) != 1 or re.search(r"^node \d+", out, re.M):
        sys.exit("%s: tree %s is not one leaf" % (img, tree))
    return int(leaves[0])


def patch(img, nodesize, leaf, change):
    with open(img, "r+b") as f:
        for p in copies(img, leaf, nodesize):
            f.seek(p)
            b = bytearray(f.read(nodesize))
            if struct.unpack_from("<Q", b, 0x30)[0] != leaf:
                sys.exit("%s: the copy at %d is not block %d" % (img, p, leaf))
            change(b)
            struct.pack_into("<I", b, 0, crc32c(bytes(b[0x20:])))
            f.seek(p)
            f.write(b)


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("inode-flags", "empty", "item-u32"):
        sys.exit(__doc__)
    img, tree = sys.argv[2], sys.argv[3]
    with open(img, "rb") as f:
        f.seek(0x10000)
        sb = f.read(4096)
    if sb[0x40:0x48] != b"_BHRfS_M" or struct.unpack_from("<H", sb, 0xC4)[0] != 0:
        sys.exit("%s: not a crc32c btrfs" % img)
    nodesize = struct.unpack_from("<I", sb, 0x94)[0]
    if sys.argv[1] == "empty":
        def drop(b):
            struct.pack_into("<I", b, 0x60, 0)  # nritems
        patch(img, nodesize, root_leaf(img, tree), drop)
        return
    if sys.argv[1] == "item-u32":
        pos, value = int(sys.argv[5]), int(sys.argv[6], 0)
        leaf, itemoff = find_item(img, tree, sys.argv[4])

        def set_u32(b):
            struct.pack_into("<I", b, HEADER + itemoff + pos, value)
        patch(img, nodesize, leaf, set_u32)
        return
    ino, bits = int(sys.argv[4]), int(sys.argv[5], 0)
    leaf, itemoff = find_item(img, tree, "%d INODE_ITEM 0" % ino)

    def set_flags(b):
        at = HEADER + itemoff + FLAGS_AT
        struct.pack_into("<Q", b, at, struct.unpack_from("<Q", b, at)[0] | bits)
    patch(img, nodesize, leaf, set_flags)


main()
