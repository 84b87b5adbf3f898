"""sendstream.py - writing btrfs send streams in python: the CRC32C they use
(Castagnoli, seed 0, no inversion), the command and attribute numbers, one
attribute (tlv).  Shared by mk/stream-seeds.py and the tests that write
streams by hand (tests/cli/test_receive.sh)."""
import struct

# ---- crc32c (Castagnoli, seed 0, no inversion, as send streams use it) ----
_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _T.append(_c)


def crc32c(data, crc=0):
    for b in data:
        crc = _T[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


MAGIC = b'btrfs-stream\0'

# commands
(SUBVOL, SNAPSHOT, MKFILE, MKDIR, MKNOD, MKFIFO, MKSOCK, SYMLINK, RENAME, LINK, UNLINK, RMDIR,
 SET_XATTR, REMOVE_XATTR, WRITE, CLONE, TRUNCATE, CHMOD, CHOWN, UTIMES, END, UPDATE_EXTENT,
 FALLOCATE, FILEATTR, ENCODED_WRITE, ENABLE_VERITY) = range(1, 27)
# attributes
(A_UUID, A_CTRANSID, A_INO, A_SIZE, A_MODE, A_UID, A_GID, A_RDEV, A_CTIME, A_MTIME, A_ATIME,
 A_OTIME, A_XATTR_NAME, A_XATTR_DATA, A_PATH, A_PATH_TO, A_PATH_LINK, A_FILE_OFFSET, A_DATA,
 A_CLONE_UUID, A_CLONE_CTRANSID, A_CLONE_PATH, A_CLONE_OFFSET, A_CLONE_LEN, A_FALLOCATE_MODE,
 A_FILEATTR, A_UNENCODED_FILE_LEN, A_UNENCODED_LEN, A_UNENCODED_OFFSET, A_COMPRESSION,
 A_ENCRYPTION) = range(1, 32)


def tlv(t, v):
    """One attribute: type, length, value."""
    return struct.pack('<HH', t, len(v)) + v
