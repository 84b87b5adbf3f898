#!/bin/sh
# btrsim receive --dump on streams written by the test itself (no kernel
# needed): every command a v1 and a v2 stream can hold, printed as
# btrfs-progs 6.2 prints them (the kernel's streams against btrfs receive
# --dump: tests/interop/test_receive.sh); and bad input: the stream cut at
# every length, a wrong crc32c, unknown commands and attributes for the
# version, an attribute past its command, a bad magic or version, an empty
# file, a missing file: exit 1 with the offset, nothing printed for the bad
# command.  Usage errors: exit 2.
. "$(dirname "$0")/lib.sh"
export TZ=UTC
MK=$(cd "$(dirname "$0")/../../mk" && pwd) # sendstream.py: streams written in python
export MK

# mkstream OUT VERSION [bad]: a stream of every command (python3).
mkstream() {
	python3 - "$@" <<'PY'
import os, struct, sys
sys.path.insert(0, os.environ['MK'])
from sendstream import crc32c, tlv
out, version = sys.argv[1], int(sys.argv[2])
bad = sys.argv[3] if len(sys.argv) > 3 else ''
def u64(t, x): return tlv(t, struct.pack('<Q', x))
def s(t, x): return tlv(t, x.encode())
def ts(t, sec): return tlv(t, struct.pack('<QI', sec, 5))
def data(v):
    return struct.pack('<H', 19) + v if version >= 2 else tlv(19, v)
cmds = []
def cmd(c, *attrs):
    cmds.append((c, b''.join(attrs)))
U = bytes(range(16))
cmd(1, s(15, 'sub vol'), tlv(1, U), u64(2, 7))
cmd(4, s(15, 'o257-7-0'), u64(3, 257))
cmd(9, s(15, 'o257-7-0'), s(16, 'd\tir'))
cmd(3, s(15, 'o258-7-0'), u64(3, 258))
cmd(9, s(15, 'o258-7-0'), s(16, 'd\tir/f'))
cmd(15, s(15, 'd\tir/f'), u64(18, 4096), data(b'x' * 100))
cmd(16, s(15, 'd\tir/f'), u64(18, 0), u64(24, 4096), tlv(20, U), u64(21, 7), s(22, 'd\tir/g'), u64(23, 0))
cmd(13, s(15, 'd\tir/f'), s(13, 'user.a'), tlv(14, b'v 1'))
cmd(14, s(15, 'd\tir/f'), s(13, 'user.a'))
cmd(17, s(15, 'd\tir/f'), u64(4, 8192))
cmd(18, s(15, 'd\tir/f'), u64(5, 0o640))
cmd(19, s(15, 'd\tir/f'), u64(6, 1000), u64(7, 100))
cmd(20, s(15, 'd\tir/f'), ts(11, 0), ts(10, 86400), ts(9, 1700000000))
cmd(5, s(15, 'n'), u64(5, 0o20644), u64(8, 0x103))
cmd(6, s(15, 'p'), u64(3, 260))
cmd(7, s(15, 'k'), u64(3, 261))
cmd(8, s(15, 'l'), u64(3, 262), s(17, 'd\tir/f'))
cmd(10, s(15, 'h'), s(17, 'd\tir/f'))
cmd(11, s(15, 'h'))
cmd(12, s(15, 'd\tir'))
cmd(22, s(15, 'l'), u64(18, 0), u64(4, 100))
if version >= 2:
    cmd(23, s(15, 'l'), tlv(25, struct.pack('<I', 1)), u64(18, 0), u64(4, 65536))
    cmd(24, s(15, 'l'), u64(26, 0x20))
    cmd(25, s(15, 'l'), u64(18, 0), u64(27, 8192), u64(28, 8192), u64(29, 0), tlv(30, struct.pack('<I', 3)), data(b'z' * 20))
if bad == 'cmd':
    cmd(99 if version == 1 else 26 + (version == 3) * 10, s(15, 'x'))
if bad == 'attr':
    cmd(11, s(15, 'x'), s(25 if version == 1 else 40, 'y'))
if bad == 'past':
    cmds.append((11, s(15, 'x')[:-1] + b''))
    cmds[-1] = (11, struct.pack('<HH', 15, 50) + b'x')
cmd(21)
blob = b'btrfs-stream\0' + struct.pack('<I', 9 if bad == 'version' else version)
if bad == 'magic':
    blob = b'btrfs-streem\0' + struct.pack('<I', version)
for i, (c, payload) in enumerate(cmds):
    h = struct.pack('<IHI', len(payload), c, 0)
    crc = crc32c(h + payload)
    if bad == 'crc' and i == 5:
        crc ^= 1
    blob += struct.pack('<IHI', len(payload), c, crc) + payload
open(out, 'wb').write(blob)
PY
}

mkstream "$T/v1.st" 1
cat >"$T/v1.want" <<'WANT'
subvol          ./sub\ vol                      uuid=00010203-0405-0607-0809-0a0b0c0d0e0f transid=7
mkdir           ./sub\ vol/o257-7-0
rename          ./sub\ vol/o257-7-0             dest=./sub\ vol/d\tir
mkfile          ./sub\ vol/o258-7-0
rename          ./sub\ vol/o258-7-0             dest=./sub\ vol/d\tir/f
write           ./sub\ vol/d\tir/f              offset=4096 len=100
clone           ./sub\ vol/d\tir/f              offset=0 len=4096 from=./sub\ vol/d\tir/g clone_offset=0
set_xattr       ./sub\ vol/d\tir/f              name=user.a data=v 1 len=3
remove_xattr    ./sub\ vol/d\tir/f              name=user.a
truncate        ./sub\ vol/d\tir/f              size=8192
chmod           ./sub\ vol/d\tir/f              mode=640
chown           ./sub\ vol/d\tir/f              gid=100 uid=1000
utimes          ./sub\ vol/d\tir/f              atime=1970-01-01T00:00:00+0000 mtime=1970-01-02T00:00:00+0000 ctime=2023-11-14T22:13:20+0000
mknod           ./sub\ vol/n                    mode=20644 dev=0x103
mkfifo          ./sub\ vol/p
mksock          ./sub\ vol/k
symlink         ./sub\ vol/l                    dest=d\tir/f
link            ./sub\ vol/h                    dest=d\tir/f
unlink          ./sub\ vol/h
rmdir           ./sub\ vol/d\tir
update_extent   ./sub\ vol/l                    offset=0 len=100
WANT
run dump-v1 0 "$BTRSIM" receive --dump -f "$T/v1.st"
cmp -s "$OUT" "$T/v1.want" || fail "differs: $(diff "$T/v1.want" "$OUT" | head -6 | tr '\n' '|')"
done_check
mkstream "$T/v2.st" 2
run dump-v2 0 sh -c "\"$BTRSIM\" receive --dump <\"$T/v2.st\""
out_has '^write           ./sub\\ vol/d\\tir/f              offset=4096 len=100$'
out_has '^fallocate       ./sub\\ vol/l                    mode=1 offset=0 len=65536$'
out_has '^fileattr        ./sub\\ vol/l                    fileattr=0x20$'
out_has '^encoded_write   ./sub\\ vol/l                    offset=0 len=20, unencoded_file_len=8192, unencoded_len=8192, unencoded_offset=0, compression=3, encryption=0$'
done_check

# bad input
len=$(wc -c <"$T/v1.st")
cut=17
NAME=truncated
while [ $cut -lt "$len" ]; do
	head -c $cut "$T/v1.st" >"$T/cut.st"
	"$BTRSIM" receive --dump -f "$T/cut.st" >"$T/o" 2>"$T/e"
	rc=$?
	[ $rc -eq 1 ] || fail "cut at $cut: exit $rc"
	grep -qE 'offset [0-9]+: (the stream ends|.*without an end command)' "$T/e" || fail "cut at $cut: $(head -c 200 "$T/e")"
	grep -qE 'Sanitizer|runtime error' "$T/e" && fail "cut at $cut: sanitizer"
	cut=$((cut + 7))
done
done_check
for b in crc cmd attr past version magic; do
	mkstream "$T/bad.st" 1 $b
	run "bad-$b" 1 "$BTRSIM" receive --dump -f "$T/bad.st"
	case $b in
	crc) err_has 'offset [0-9]+: crc32c mismatch in command 15' ;;
	cmd) err_has 'unknown command 99 for a version 1 stream' ;;
	attr) err_has 'unknown attribute 25 for version 1' ;;
	past) err_has 'attribute 15 runs past the command' ;;
	version) err_has 'send stream version 9' ;;
	magic) err_has 'not a send stream' ;;
	esac
	done_check
done
mkstream "$T/bad.st" 2 attr
run bad-attr-v2 1 "$BTRSIM" receive --dump -f "$T/bad.st"
err_has 'unknown attribute 40 for version 2'; done_check
: >"$T/empty.st"
run empty 1 "$BTRSIM" receive --dump -f "$T/empty.st"
err_has 'not a send stream'; done_check
run missing 1 "$BTRSIM" receive --dump -f "$T/nope.st"
err_has 'nope.st: No such file'; done_check
run usage-no-dir 2 "$BTRSIM" receive -f "$T/v1.st" "$T/img"
err_has 'needs at least one image and the directory DIR'; done_check
run usage-operand 2 "$BTRSIM" receive --dump -f "$T/v1.st" extra
done_check
run help 0 "$BTRSIM" receive --help
out_has '^usage: btrsim receive \[-f FILE\] \[-e\] \[-q\] IMG... DIR'; done_check

# ---- Applying streams to an image ----

# mkvalid OUT: a full stream of subvolume "v" (uuid 11..., ctransid 5),
# then an incremental one of "w" on it (uuid 22..., parent 11...).
mkvalid() {
	python3 - "$1" <<'PY'
import os, struct, sys
sys.path.insert(0, os.environ['MK'])
from sendstream import crc32c, tlv
def u64(t, x): return tlv(t, struct.pack('<Q', x))
def s(t, x): return tlv(t, x.encode())
def ts(t, sec): return tlv(t, struct.pack('<QI', sec, 0))
def stream(cmds):
    blob = b'btrfs-stream\0' + struct.pack('<I', 1)
    for c, payload in cmds:
        h = struct.pack('<IHI', len(payload), c, 0)
        blob += struct.pack('<IHI', len(payload), c, crc32c(h + payload)) + payload
    return blob
A, B = bytes([0x11]) * 16, bytes([0x22]) * 16
full = [(1, s(15, 'v') + tlv(1, A) + u64(2, 5)),
        (4, s(15, 'o257-5-0') + u64(3, 257)), (9, s(15, 'o257-5-0') + s(16, 'd')),
        (3, s(15, 'o258-5-0') + u64(3, 258)), (9, s(15, 'o258-5-0') + s(16, 'd/f')),
        (15, s(15, 'd/f') + u64(18, 0) + tlv(19, b'hello\n' * 1000)),
        (13, s(15, 'd/f') + s(13, 'user.x') + tlv(14, b'1')),
        (18, s(15, 'd/f') + u64(5, 0o640)),
        (20, s(15, 'd/f') + ts(11, 100) + ts(10, 200) + ts(9, 300)),
        (8, s(15, 'o259-5-0') + u64(3, 259) + s(17, 'd/f')), (9, s(15, 'o259-5-0') + s(16, 'l')),
        (21, b'')]
inc = [(2, s(15, 'w') + tlv(1, B) + u64(2, 6) + tlv(20, A) + u64(21, 5)),
       (10, s(15, 'd/h') + s(17, 'd/f')),
       (15, s(15, 'd/f') + u64(18, 6000) + tlv(19, b'more')),
       (11, s(15, 'l')),
       (21, b'')]
open(sys.argv[1], 'wb').write(stream(full) + stream(inc))
PY
}
mkvalid "$T/ok.st"
img="$T/r.img"
"$BTRSIM" mkfs --size 256M -f "$img" >/dev/null
run apply 0 "$BTRSIM" receive -f "$T/ok.st" "$img" /
err_has '^At subvol v$'; out_has '^At snapshot w$'; done_check
run apply-read 0 "$BTRSIM" cat "$img" /w/d/f
[ "$(wc -c <"$OUT")" -eq 6004 ] || fail "size $(wc -c <"$OUT")"
tail -c 4 "$OUT" | grep -q more || fail "no 'more' at the end"
done_check
run apply-tree 0 "$BTRSIM" manifest -s /v --times "$img"
out_has '^/d/f f 640 0 0 1 6000 [0-9a-f]+ m:200.000000000 x:user.x=31$'
out_has '^/l l 777 0 0 1 3 -> d/f '
done_check
run apply-show 0 "$BTRSIM" subvolume show "$img" /w
out_has 'Received UUID:[[:space:]]+22222222-2222-2222-2222-222222222222'
out_has 'Flags:[[:space:]]+readonly'
done_check
check apply
"$BTRSIM" mkdir "$img" /e >/dev/null
run apply-quiet-e 0 "$BTRSIM" receive -q -e -f "$T/ok.st" "$img" /e
err_empty; out_empty; done_check
run apply-e-first-only 1 "$BTRSIM" cat "$img" /e/w/d/f
done_check
# the same subvolume again: the kernel's EEXIST, nothing changed
run apply-again 1 "$BTRSIM" receive -q -f "$T/ok.st" "$img" /
err_has 'offset 17: subvol: /v: file exists'; done_check
# a stream failing half-way (v1.st clones from a file it never made): the
# offset, what came before committed, the subvolume writable, not received
run apply-fails 1 "$BTRSIM" receive -f "$T/v1.st" "$img" /
err_has "offset [0-9]+: clone: /sub vol/d.ir/f: the source /sub vol/d.ir/g: no such file"; done_check
run apply-fails-left 0 "$BTRSIM" subvolume show "$img" "/sub vol"
out_has 'Received UUID:[[:space:]]+-$'; out_has 'Flags:[[:space:]]+-$'; done_check
check apply-fails
for b in crc version; do
	mkstream "$T/bad.st" 1 $b
	run "apply-bad-$b" 1 "$BTRSIM" receive -f "$T/bad.st" "$img" /
	err_has 'offset [0-9]+: |send stream version 9'; done_check
done
run apply-no-dir 1 "$BTRSIM" receive -f "$T/ok.st" "$img" /nowhere
err_has '/nowhere: '; done_check
run apply-not-image 1 "$BTRSIM" receive -f "$T/ok.st" "$T/ok.st" /
done_check
