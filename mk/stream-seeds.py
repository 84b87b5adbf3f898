#!/usr/bin/env python3
"""Seeds of the `stream` fuzzing harness (mk/fuzz-seeds.sh; fuzz/README.md).

  stream-seeds.py OUTDIR
      writes send streams of our own, each semantically valid for the
      harness's base file system (every command succeeds): a full version 1
      stream of every path command, a version 2 stream with fallocate and
      zlib encoded writes, a short version 3 one, a full stream followed by a
      snapshot of it in the same input (clone_uuid the first's uuid), and an
      incremental stream on the base's received subvolume /parent
      (clone_uuid "btrsim-parent-01", fuzz/harness_stream.c).

  stream-seeds.py OUTDIR --top-uuid UUID
      also a snapshot of the base's top level (its uuid, as btrsim subvolume
      show prints it, is given: it comes from ref_mkfs), which holds /parent's
      empty stub directory, removed.

  stream-seeds.py --normalize OUT STREAM...
      concatenates streams of the kernel's btrfs send into OUT with their
      uuids renumbered (the same uuid the same new one, across the streams)
      and every timestamp set to 1700000000, crc32c recomputed: the same
      file system sent twice gives the same bytes (transids and compressed
      bytes still come from the kernel).

Deterministic: no randomness, no clock.
"""
import struct
import sys
import zlib

from sendstream import *  # noqa: F401,F403 (crc32c, MAGIC, the numbers, tlv)

TIME = 1700000000

# the received uuid of the harness's base subvolume /parent
PARENT_UUID = b'btrsim-parent-01'


def uuid(n):
    return b'btrsim-seed-' + struct.pack('>I', n)


def pattern(n, salt):
    return bytes((i * 31 + salt + i // 4096) & 0xFF for i in range(n))


class Stream:
    def __init__(self, version):
        self.version = version
        self.cmds = []
        self.ino = 256

    def cmd(self, c, *attrs):
        self.cmds.append((c, b''.join(attrs)))

    def bytes(self):
        blob = MAGIC + struct.pack('<I', self.version)
        for c, payload in self.cmds:
            h = struct.pack('<IHI', len(payload), c, 0)
            blob += struct.pack('<IHI', len(payload), c, crc32c(h + payload)) + payload
        return blob

    # attributes
    @staticmethod
    def tlv(t, v):
        return struct.pack('<HH', t, len(v)) + v

    def u64(self, t, x):
        return self.tlv(t, struct.pack('<Q', x))

    def u32(self, t, x):
        return self.tlv(t, struct.pack('<I', x))

    def s(self, t, x):
        return self.tlv(t, x.encode() if isinstance(x, str) else x)

    def ts(self, t, sec, nsec=0):
        return self.tlv(t, struct.pack('<QI', sec, nsec))

    def data(self, v):
        # from version 2 on, DATA has no length: the rest of its command
        return struct.pack('<H', A_DATA) + v if self.version >= 2 else self.tlv(A_DATA, v)

    def path(self, p):
        return self.s(A_PATH, p)

    # commands the kernel's way: a new inode under a temporary name, renamed
    def new(self, c, name, *attrs):
        self.ino += 1
        tmp = 'o%d-%d-0' % (self.ino, 7)
        self.cmd(c, self.path(tmp), self.u64(A_INO, self.ino), *attrs)
        self.cmd(RENAME, self.path(tmp), self.s(A_PATH_TO, name))

    def write(self, p, off, d):
        self.cmd(WRITE, self.path(p), self.u64(A_FILE_OFFSET, off), self.data(d))

    def utimes(self, p, sec=TIME):
        self.cmd(UTIMES, self.path(p), self.ts(A_ATIME, sec, 5), self.ts(A_MTIME, sec + 1),
                 self.ts(A_CTIME, sec + 2))

    def chown(self, p, uid, gid):
        self.cmd(CHOWN, self.path(p), self.u64(A_UID, uid), self.u64(A_GID, gid))

    def chmod(self, p, mode):
        self.cmd(CHMOD, self.path(p), self.u64(A_MODE, mode))

    def xattr(self, p, name, value):
        self.cmd(SET_XATTR, self.path(p), self.s(A_XATTR_NAME, name), self.tlv(A_XATTR_DATA, value))

    def clone(self, p, off, length, src_uuid, src_ctransid, src, src_off):
        self.cmd(CLONE, self.path(p), self.u64(A_FILE_OFFSET, off), self.u64(A_CLONE_LEN, length),
                 self.tlv(A_CLONE_UUID, src_uuid), self.u64(A_CLONE_CTRANSID, src_ctransid),
                 self.s(A_CLONE_PATH, src), self.u64(A_CLONE_OFFSET, src_off))

    def subvol(self, name, u, ctransid):
        self.cmd(SUBVOL, self.path(name), self.tlv(A_UUID, u), self.u64(A_CTRANSID, ctransid))

    def snapshot(self, name, u, ctransid, parent, parent_ctransid):
        self.cmd(SNAPSHOT, self.path(name), self.tlv(A_UUID, u), self.u64(A_CTRANSID, ctransid),
                 self.tlv(A_CLONE_UUID, parent), self.u64(A_CLONE_CTRANSID, parent_ctransid))

    def end(self):
        self.cmd(END)


# a version 2 file capability (VFS_CAP_REVISION_2): cap_net_raw permitted
CAPS = struct.pack('<IIIII', 0x02000001, 1 << 13, 0, 0, 0)


def full_v1():
    s = Stream(1)
    u = uuid(1)
    s.subvol('full', u, 10)
    s.new(MKDIR, 'dir')
    s.new(MKFILE, 'dir/file')
    s.write('dir/file', 0, pattern(5000, 1))
    s.write('dir/file', 8192, pattern(100, 2))
    s.xattr('dir/file', 'user.a', b'v 1')
    s.xattr('dir/file', 'security.capability', CAPS)
    s.chown('dir/file', 1000, 100)  # the capability is set again after it
    s.chmod('dir/file', 0o755)
    s.utimes('dir/file')
    s.new(MKFILE, 'dir/copy')
    s.clone('dir/copy', 0, 4096, u, 10, 'dir/file', 0)
    s.write('dir/copy', 4096, pattern(3000, 3))
    s.cmd(TRUNCATE, s.path('dir/copy'), s.u64(A_SIZE, 6000))
    s.new(MKFILE, 'small')
    s.write('small', 0, b'small inline file\n')
    s.cmd(LINK, s.path('dir/hard'), s.s(A_PATH_LINK, 'dir/file'))
    s.new(SYMLINK, 'sym', s.s(A_PATH_LINK, 'dir/file'))
    s.chown('sym', 1000, 1000)
    s.utimes('sym')
    s.new(MKFIFO, 'fifo')
    s.new(MKSOCK, 'sock')
    s.new(MKNOD, 'node', s.u64(A_MODE, 0o20644), s.u64(A_RDEV, 0x103))
    s.new(MKDIR, 'gone')
    s.cmd(RMDIR, s.path('gone'))
    s.new(MKFILE, 'tmp')
    s.cmd(UNLINK, s.path('tmp'))
    s.cmd(REMOVE_XATTR, s.path('dir/file'), s.s(A_XATTR_NAME, 'user.a'))
    s.xattr('dir', 'user.dir', b'\x00\xff binary')
    s.utimes('dir')
    s.chmod('', 0o755)
    s.utimes('')
    s.end()
    return s.bytes()


def v2():
    s = Stream(2)
    s.subvol('v2', uuid(2), 11)
    s.new(MKFILE, 'f')
    s.write('f', 0, pattern(3000, 4))
    s.cmd(FALLOCATE, s.path('f'), s.u32(A_FALLOCATE_MODE, 0), s.u64(A_FILE_OFFSET, 0),
          s.u64(A_SIZE, 65536))
    s.cmd(FALLOCATE, s.path('f'), s.u32(A_FALLOCATE_MODE, 1), s.u64(A_FILE_OFFSET, 65536),
          s.u64(A_SIZE, 8192))
    s.cmd(FALLOCATE, s.path('f'), s.u32(A_FALLOCATE_MODE, 3), s.u64(A_FILE_OFFSET, 8192),
          s.u64(A_SIZE, 4096))
    s.new(MKFILE, 'z')
    plain = (b'btrsim stream seed, a compressible line of text\n' * 400)[:16384]
    for off, uoff, flen, comp, payload in (
            (0, 0, 8192, 1, zlib.compress(plain[:8192])),      # whole zlib extent
            (8192, 4096, 4000, 1, zlib.compress(plain[:8192])),  # a part of one
            (16384, 0, 4096, 0, plain[:4096])):                 # not compressed
        attrs = [s.path('z'), s.u64(A_FILE_OFFSET, off), s.u64(A_UNENCODED_FILE_LEN, flen),
                 s.u64(A_UNENCODED_LEN, 8192 if comp else 4096), s.u64(A_UNENCODED_OFFSET, uoff)]
        if comp:
            attrs.append(s.u32(A_COMPRESSION, comp))
        attrs.append(s.u32(A_ENCRYPTION, 0))
        attrs.append(s.data(payload))
        s.cmd(ENCODED_WRITE, *attrs)
    s.cmd(FILEATTR, s.path('z'), s.u64(A_FILEATTR, 0))
    s.cmd(TRUNCATE, s.path('z'), s.u64(A_SIZE, 20000))
    s.xattr('z', 'user.v2', b'2')
    s.utimes('z')
    s.utimes('f')
    s.end()
    return s.bytes()


def v3():
    s = Stream(3)
    s.subvol('v3', uuid(3), 12)
    s.new(MKFILE, 'f')
    s.write('f', 0, pattern(200, 5))
    s.cmd(UPDATE_EXTENT, s.path('f'), s.u64(A_FILE_OFFSET, 0), s.u64(A_SIZE, 200))
    s.new(MKDIR, 'd')
    s.cmd(RENAME, s.path('f'), s.s(A_PATH_TO, 'd/f'))
    s.utimes('d/f')
    s.end()
    return s.bytes()


def full_then_snapshot():
    ua, ub = uuid(4), uuid(5)
    a = Stream(1)
    a.subvol('a', ua, 20)
    a.new(MKFILE, 'f')
    a.write('f', 0, pattern(10000, 6))
    a.new(MKDIR, 'd')
    a.new(MKFILE, 'd/g')
    a.write('d/g', 0, pattern(100, 7))
    a.xattr('d/g', 'user.x', b'x')
    a.new(SYMLINK, 'l', a.s(A_PATH_LINK, 'f'))
    a.utimes('')
    a.end()
    b = Stream(1)
    b.snapshot('b', ub, 25, ua, 20)
    b.write('f', 100, pattern(50, 8))
    b.new(MKFILE, 'd/g2')
    b.clone('d/g2', 0, 4096, ua, 20, 'f', 4096)      # from the parent
    b.clone('d/g2', 4096, 4096, ub, 25, 'f', 0)       # from itself
    b.cmd(RENAME, b.path('d/g'), b.s(A_PATH_TO, 'd/h'))
    b.cmd(UNLINK, b.path('l'))
    b.new(SYMLINK, 'l', b.s(A_PATH_LINK, 'd/h'))
    b.cmd(TRUNCATE, b.path('f'), b.u64(A_SIZE, 5000))
    b.cmd(REMOVE_XATTR, b.path('d/h'), b.s(A_XATTR_NAME, 'user.x'))
    b.utimes('f')
    b.utimes('')
    b.end()
    return a.bytes() + b.bytes()


def incremental_on_parent():
    s = Stream(1)
    s.snapshot('child', uuid(6), 30, PARENT_UUID, 7)
    s.write('dir/file', 1000, pattern(100, 9))
    s.new(MKFILE, 'dir/clone')
    s.clone('dir/clone', 0, 8192, PARENT_UUID, 7, 'dir/file', 4096)
    s.cmd(RENAME, s.path('small'), s.s(A_PATH_TO, 'dir/small'))
    s.cmd(UNLINK, s.path('link'))
    s.xattr('dir/file', 'user.a', b'v 2')
    s.chmod('dir/file', 0o600)
    s.utimes('dir/file')
    s.end()
    return s.bytes()


def snapshot_of_top(top):
    s = Stream(1)
    s.snapshot('top', uuid(7), 40, top, 5)
    s.new(MKFILE, 'new')
    s.write('new', 0, pattern(5000, 10))
    s.cmd(RMDIR, s.path('parent'))  # /parent's empty stub in the snapshot
    s.utimes('')
    s.end()
    return s.bytes()


SEEDS = {
    'full-v1': full_v1,
    'v2-fallocate-encoded': v2,
    'v3': v3,
    'full-then-snapshot': full_then_snapshot,
    'incremental-on-parent': incremental_on_parent,
}


# ---- kernel streams made deterministic ----
def normalize(streams):
    ids = {}
    out = b''
    for blob in streams:
        res = bytearray()
        off = 0
        while off < len(blob):
            if blob[off:off + 13] == MAGIC:  # a stream's header (a file may hold several)
                version = struct.unpack_from('<I', blob, off + 13)[0]
                res += blob[off:off + 17]
                off += 17
                continue
            if off == 0:
                raise SystemExit('not a send stream')
            plen, c, _ = struct.unpack_from('<IHI', blob, off)
            payload = bytearray(blob[off + 10:off + 10 + plen])
            p = 0
            while p + 2 <= plen:
                t = struct.unpack_from('<H', payload, p)[0]
                if version >= 2 and t == A_DATA:
                    break
                alen = struct.unpack_from('<H', payload, p + 2)[0]
                v = p + 4
                if t in (A_UUID, A_CLONE_UUID) and alen == 16:
                    key = bytes(payload[v:v + 16])
                    ids.setdefault(key, uuid(0x100 + len(ids)))
                    payload[v:v + 16] = ids[key]
                elif t in (A_CTIME, A_MTIME, A_ATIME, A_OTIME) and alen == 12:
                    payload[v:v + 12] = struct.pack('<QI', TIME, 0)
                p = v + alen
            h = struct.pack('<IHI', plen, c, 0)
            res += struct.pack('<IHI', plen, c, crc32c(h + payload)) + payload
            off += 10 + plen
        out += res
    return out


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == '--normalize':
        streams = [open(f, 'rb').read() for f in sys.argv[3:]]
        open(sys.argv[2], 'wb').write(normalize(streams))
        return
    if len(sys.argv) == 4 and sys.argv[2] == '--top-uuid':
        top = bytes.fromhex(sys.argv[3].replace('-', ''))
        with open('%s/snapshot-of-top-level' % sys.argv[1], 'wb') as f:
            f.write(snapshot_of_top(top))
    elif len(sys.argv) != 2:
        raise SystemExit(__doc__)
    for name, make in SEEDS.items():
        with open('%s/%s' % (sys.argv[1], name), 'wb') as f:
            f.write(make())


main()
