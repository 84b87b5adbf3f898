"""btrfs_crc.py: crc32c (Castagnoli) as btrfs checksums superblocks and tree
blocks (the default csum type), for the scripts here that patch images and
write the checksum again (super_flag.py, leaf_patch.py)."""

POLY = 0x82F63B78
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
