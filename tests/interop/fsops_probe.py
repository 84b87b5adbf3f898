#!/usr/bin/env python3
"""fsops_probe.py DIR: a fixed sequence of system calls in DIR (empty, on a
btrfs), one line per call with its result or errno name, and the state it
leaves (stat fields, names in readdir order, xattrs).  test_mount.sh runs it
on the kernel's btrfs and on `btrsim mount` of copies of one image and wants
the two outputs equal line for line: the kernel decides every errno."""
import ctypes
import errno
import os
import stat
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.c_uint]
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
AT_FDCWD = -100
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
FL_KEEP, FL_PUNCH, FL_COLLAPSE, FL_ZERO = 1, 2, 8, 0x10

D = sys.argv[1]
OUT = []


def p(path):
    return os.path.join(D, path)


def say(what, r):
    OUT.append(f"{what} -> {r}")


def call(what, fn, *args, **kw):
    try:
        r = fn(*args, **kw)
        say(what, "ok" if r is None else r)
    except OSError as e:
        say(what, errno.errorcode.get(e.errno, e.errno))


def cerr(what, r):
    say(what, "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?"))


def rename2(a, b, flags):
    return libc.renameat2(AT_FDCWD, p(a).encode(), AT_FDCWD, p(b).encode(), flags)


def falloc(fd, mode, off, ln):
    return libc.fallocate(fd, mode, off, ln)


def show(path):
    try:
        st = os.lstat(p(path))
    except OSError as e:
        say(f"lstat {path}", errno.errorcode[e.errno])
        return
    kind = stat.S_IFMT(st.st_mode)
    size = st.st_size if not stat.S_ISDIR(st.st_mode) else "-"  # btrfs: twice the names' bytes
    say(f"lstat {path}", f"mode={oct(st.st_mode)} nlink={st.st_nlink} uid={st.st_uid} "
        f"gid={st.st_gid} size={size} ino={st.st_ino} rdev={st.st_rdev if kind in (stat.S_IFCHR, stat.S_IFBLK) else 0}")


def data(path, off, n):
    try:
        with open(p(path), "rb") as f:
            f.seek(off)
            b = f.read(n)
        say(f"read {path} {off} {n}", f"{len(b)} bytes sum={sum(b)} zeros={b.count(0)}")
    except OSError as e:
        say(f"read {path}", errno.errorcode[e.errno])


def names(path):
    try:
        say(f"readdir {path}", " ".join(sorted(os.listdir(p(path)))))
    except OSError as e:
        say(f"readdir {path}", errno.errorcode[e.errno])


def xattrs(path):
    try:
        say(f"listxattr {path}", " ".join(sorted(os.listxattr(p(path), follow_symlinks=False))))
    except OSError as e:
        say(f"listxattr {path}", errno.errorcode[e.errno])


# names
call("mkdir d", os.mkdir, p("d"), 0o755)
call("mkdir d again", os.mkdir, p("d"), 0o755)
call("mkdir missing/x", os.mkdir, p("missing/x"))
call("rmdir missing", os.rmdir, p("missing"))
call("create f", lambda: os.close(os.open(p("f"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)))
call("create f again", lambda: os.close(os.open(p("f"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)))
call("create f/x", lambda: os.close(os.open(p("f/x"), os.O_CREAT | os.O_WRONLY)))
call("create 256-byte name", lambda: os.close(os.open(p("n" * 256), os.O_CREAT | os.O_WRONLY)))
call("create 255-byte name", lambda: os.close(os.open(p("n" * 255), os.O_CREAT | os.O_WRONLY)))
call("unlink d", os.unlink, p("d"))
call("rmdir f", os.rmdir, p("f"))
call("link d d2", os.link, p("d"), p("d2"))
call("link f d/f", os.link, p("f"), p("d/f"))
call("link f d/f again", os.link, p("f"), p("d/f"))
call("rmdir d", os.rmdir, p("d"))
call("symlink ../f d/s", os.symlink, "../f", p("d/s"))
call("readlink d/s", os.readlink, p("d/s"))
call("mknod fifo", os.mkfifo, p("fifo"), 0o600)
call("mknod chr", os.mknod, p("chr"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
call("mknod blk", os.mknod, p("blk"), stat.S_IFBLK | 0o600, os.makedev(8, 17))
for n in ["d", "f", "d/f", "d/s", "fifo", "chr", "blk", "n" * 255]:
    show(n)

# data
fd = os.open(p("f"), os.O_RDWR)
call("pwrite f 0 10000", os.pwrite, fd, b"a" * 10000, 0)
call("pwrite f 1M 4096", os.pwrite, fd, b"b" * 4096, 1 << 20)
say("fstat size", os.fstat(fd).st_size)
call("SEEK_DATA 0", os.lseek, fd, 0, os.SEEK_DATA)
call("SEEK_HOLE 0", os.lseek, fd, 0, os.SEEK_HOLE)
call("SEEK_DATA 20000", os.lseek, fd, 20000, os.SEEK_DATA)
call("SEEK_HOLE 1M", os.lseek, fd, 1 << 20, os.SEEK_HOLE)
call("SEEK_DATA past end", os.lseek, fd, 2 << 20, os.SEEK_DATA)
cerr("fallocate 0 2M 64K", falloc(fd, 0, 2 << 20, 65536))
say("fstat size", os.fstat(fd).st_size)
cerr("fallocate keep-size 3M 64K", falloc(fd, FL_KEEP, 3 << 20, 65536))
say("fstat size", os.fstat(fd).st_size)
cerr("fallocate punch 0 8K", falloc(fd, FL_PUNCH | FL_KEEP, 0, 8192))
cerr("fallocate punch without keep-size", falloc(fd, FL_PUNCH, 0, 8192))
cerr("fallocate zero-range 1M 4K", falloc(fd, FL_ZERO, 1 << 20, 4096))
cerr("fallocate collapse", falloc(fd, FL_COLLAPSE, 0, 4096))
cerr("fallocate len 0", falloc(fd, 0, 0, 0))
call("ftruncate 5000", os.ftruncate, fd, 5000)
call("fsync f", os.fsync, fd)
call("fdatasync f", os.fdatasync, fd)
os.close(fd)
data("f", 0, 20000)
fd = os.open(p("f"), os.O_WRONLY | os.O_APPEND)
call("append 100", os.write, fd, b"c" * 100)
os.close(fd)
show("f")
fd = os.open(p("f"), os.O_WRONLY | os.O_TRUNC)
call("write after O_TRUNC", os.write, fd, b"d" * 10)
os.close(fd)
show("f")
data("f", 0, 100)
call("truncate f 1G", os.truncate, p("f"), 1 << 30)
call("truncate d", os.truncate, p("d"), 0)
call("open d for writing", lambda: os.open(p("d"), os.O_WRONLY))
dfd = os.open(p("d"), os.O_RDONLY)
call("fsync d", os.fsync, dfd)
os.close(dfd)

# renames
call("create r1", lambda: os.close(os.open(p("r1"), os.O_CREAT | os.O_WRONLY)))
call("create r2", lambda: os.close(os.open(p("r2"), os.O_CREAT | os.O_WRONLY)))
call("mkdir e", os.mkdir, p("e"))
call("mkdir e/sub", os.mkdir, p("e/sub"))
call("mkdir g", os.mkdir, p("g"))
cerr("rename r1 r2 noreplace", rename2("r1", "r2", RENAME_NOREPLACE))
cerr("rename r1 r2 exchange", rename2("r1", "r2", RENAME_EXCHANGE))
cerr("rename r1 r3 exchange", rename2("r1", "r3", RENAME_EXCHANGE))
cerr("rename both flags", rename2("r1", "r2", RENAME_EXCHANGE | RENAME_NOREPLACE))
call("rename r1 r2", os.rename, p("r1"), p("r2"))
call("rename e e/sub/x", os.rename, p("e"), p("e/sub/x"))
call("rename g e", os.rename, p("g"), p("e"))
call("rename r2 e", os.rename, p("r2"), p("e"))
call("rename e r2", os.rename, p("e"), p("r2"))
call("rename missing r2", os.rename, p("missing"), p("r2"))
call("rename e/sub g2", os.rename, p("e/sub"), p("g2"))
call("rename g g2", os.rename, p("g"), p("g2"))
names("")
names("e")

# attributes
call("chmod f 4755", os.chmod, p("f"), 0o4755)
call("chown f 1000 2000", os.chown, p("f"), 1000, 2000)
show("f")
call("lchown d/s 7 8", os.lchown, p("d/s"), 7, 8)
show("d/s")
call("utime f", os.utime, p("f"), ns=(1_000_000_123, 2_000_000_456))
st = os.stat(p("f"))
say("times f", f"{st.st_atime_ns} {st.st_mtime_ns}")
call("utime d/s nofollow", os.utime, p("d/s"), ns=(5_000_000_000, 6_000_000_000),
     follow_symlinks=False)
st = os.lstat(p("d/s"))
say("times d/s", f"{st.st_atime_ns} {st.st_mtime_ns}")

# xattrs
call("setxattr user.a", os.setxattr, p("f"), "user.a", b"1")
call("setxattr user.a create", os.setxattr, p("f"), "user.a", b"2", os.XATTR_CREATE)
call("setxattr user.b replace", os.setxattr, p("f"), "user.b", b"2", os.XATTR_REPLACE)
call("setxattr trusted.t", os.setxattr, p("f"), "trusted.t", b"x" * 3000)
call("setxattr foo.bar", os.setxattr, p("f"), "foo.bar", b"x")
call("setxattr user.big", os.setxattr, p("f"), "user.big", b"x" * 20000)
call("getxattr user.a", os.getxattr, p("f"), "user.a")
call("getxattr user.none", os.getxattr, p("f"), "user.none")
call("removexattr user.none", os.removexattr, p("f"), "user.none")
call("setxattr on symlink", os.setxattr, p("d/s"), "user.l", b"l", follow_symlinks=False)
call("setxattr on dir", os.setxattr, p("d"), "user.d", b"d")
xattrs("f")
xattrs("d")
call("removexattr user.a", os.removexattr, p("f"), "user.a")
xattrs("f")

# a file unlinked while open
fd = os.open(p("held"), os.O_CREAT | os.O_RDWR, 0o600)
os.pwrite(fd, b"h" * 50000, 0)
call("unlink held (open)", os.unlink, p("held"))
say("fstat nlink", os.fstat(fd).st_nlink)
call("pwrite held", os.pwrite, fd, b"i" * 100, 60000)
say("pread held", len(os.pread(fd, 70000, 0)))
call("fsync held", os.fsync, fd)
call("ftruncate held", os.ftruncate, fd, 10)
say("fstat size", os.fstat(fd).st_size)
os.close(fd)
call("lstat held", os.lstat, p("held"))

# readdir: order and a resumed read
for i in range(40):
    os.close(os.open(p(f"d/m{i:02d}"), os.O_CREAT | os.O_WRONLY))
os.unlink(p("d/m05"))
with os.scandir(p("d")) as it:
    order = [e.name for e in it]
say("readdir order d", " ".join(order))
with os.scandir(p("d")) as it:
    say("readdir d_ino = st_ino", all(e.inode() == os.lstat(e.path).st_ino for e in it))

# statfs
v = os.statvfs(D)
say("statvfs", f"bsize={v.f_bsize} namemax={v.f_namemax} files={v.f_files}")

print("\n".join(OUT))
