#!/bin/sh
# POSIX ACLs and special files against the real Btrfs (issue 20).
#   (1) put: a host tree with access ACLs (named users and groups, a mask),
#       default ACLs, files that inherited them, a fifo, a socket and
#       character and block devices: btrfs check and btrsim check clean, and
#       the kernel's mount shows every file's ACL (getfacl) and type, mode and
#       device numbers as the host has them.
#   (2) new files under a default ACL: the same mkdir / mkdir -m / create /
#       mknod with umask 077, by ref (btrsim mkdir, write --create, mknod) and
#       by the kernel on a copy: the same modes and ACLs (the default ACL masks
#       the mode instead of the umask; mkdir -m is exact); elsewhere the umask.
#   (3) the kernel's ACLs and devices read by ref: btrsim extract gives the
#       host the same getfacl, btrsim check agrees with btrfs check.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v setfacl >/dev/null && command -v getfacl >/dev/null ||
	{ skip acl "setfacl/getfacl (Debian's acl) are not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1
[ "$LOOP_OK" -eq 1 ] || skip acl-kernel "$LOOP_WHY"
MP="$T/mnt"
mkdir -p "$MP"

# view DIR OUT: every path under DIR (sorted) with its type, mode and device
# numbers, then its ACLs as getfacl prints them.
view() {
	(cd "$1" && find . | LC_ALL=C sort | while read -r f; do
		stat -c '%n %F %a %t %T' "$f"
		[ -L "$f" ] || getfacl -cp "$f" 2>/dev/null
	done) >"$2"
}

# same NAME A B: the files A and B are equal.
same() {
	cmp -s "$2" "$3" || fail "$1: $(diff "$2" "$3" | grep '^[<>]' | head -8 | tr '\n' '|')"
}

# clean IMG: both checkers pass.
clean() {
	"$BTRSIM" check "$1" >"$T/ref.log" 2>&1 || fail "btrsim check: $(grep -m3 -i error "$T/ref.log" | tr '\n' '|')"
	progs_check "$1"
}

# ---- (1) put ----

H="$T/host"
mkdir -p "$H/dflt/deep" "$H/plain"
head -c 70000 /dev/urandom >"$H/named"
echo x >"$H/plain/f"
setfacl -m u:1000:rwx,g:50:r,u:1002:w "$H/named" &&
	setfacl -d -m u:1001:rx,g::rwx,o::- "$H/dflt" &&
	setfacl -m o::x "$H/plain" || fail "setfacl on the host"
(umask 022 && echo y >"$H/dflt/inherited" && mkdir "$H/dflt/deep/sub" && mkfifo "$H/dflt/fifo")
mkfifo "$H/fifo"
mknod "$H/cdev" c 4 64 && mknod "$H/bdev" b 7 9 && mknod "$H/bigdev" c 511 300000 ||
	fail "mknod on the host"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$H/sock" ||
	fail "a socket on the host"
setfacl -m g:60:rw "$H/cdev"
IMG="$T/put.img"
truncate -s 256M "$IMG"
run put 0 "$BTRSIM" mkfs "$IMG"
run put 0 "$BTRSIM" put "$IMG" "$H" /h
err_empty
clean "$IMG"
done_check
view "$H" "$T/host.view"
if [ "$LOOP_OK" -eq 1 ]; then
	run put-kernel-reads 0 true
	if attach "$IMG" && mount_dev "$MP" "" "$LOOP"; then
		view "$MP/h" "$T/kernel.view"
		unmount "$MP"
	else
		fail "the kernel cannot mount ref's image"
	fi
	cleanup_mounts
	same "the kernel's view of ref's copy (< host > kernel)" "$T/host.view" "$T/kernel.view"
	done_check
fi

# ---- (2) new files under a default ACL, ref and the kernel ----

IMG2="$T/new.img"
truncate -s 256M "$IMG2"
run inherit-setup 0 "$BTRSIM" mkfs "$IMG2"
run inherit-setup 0 "$BTRSIM" put "$IMG2" "$H/dflt" /d
done_check
cp --sparse=always "$IMG2" "$T/new-kernel.img"
run inherit-ref 0 sh -c 'umask 077 && B=$1 && I=$2 &&
	$B mkdir "$I" /d/sub && $B mkdir -m 777 "$I" /d/exact && $B write --create "$I" /d/file /dev/null &&
	$B mknod "$I" /d/pipe p && $B mknod -m 600 "$I" /d/dev c 4 64 && $B mkdir -p "$I" /d/a/b &&
	$B mkdir "$I" /plain && $B write --create "$I" /plainfile /dev/null && $B mknod "$I" /plainpipe p' \
	sh "$BTRSIM" "$IMG2"
clean "$IMG2"
done_check
if [ "$LOOP_OK" -eq 1 ]; then
	run inherit-kernel 0 true
	if attach "$T/new-kernel.img" && mount_dev "$MP" "" "$LOOP"; then
		(umask 077 && cd "$MP" && mkdir d/sub && mkdir -m 777 d/exact && : >d/file &&
			mknod d/pipe p && mknod -m 600 d/dev c 4 64 && mkdir -p d/a/b &&
			mkdir plain && : >plainfile && mknod plainpipe p) || fail "the kernel's ops"
		view "$MP" "$T/kernel.view"
		unmount "$MP"
	else
		fail "mount"
	fi
	cleanup_mounts
	run inherit-kernel 0 true
	if attach "$IMG2" && mount_dev "$MP" "" "$LOOP"; then
		view "$MP" "$T/ref.view"
		unmount "$MP"
	else
		fail "the kernel cannot mount ref's image"
	fi
	cleanup_mounts
	same "modes and ACLs of new files (< kernel > ref)" "$T/kernel.view" "$T/ref.view"
	done_check
fi

# ---- (3) the kernel's ACLs and devices, read by ref ----

if [ "$LOOP_OK" -eq 1 ]; then
	KIMG="$T/kernel.img"
	truncate -s 256M "$KIMG"
	mkfs.btrfs -q -f "$KIMG" >/dev/null 2>&1
	run kernel-made 0 true
	if attach "$KIMG" && mount_dev "$MP" "" "$LOOP"; then
		cp -a "$H/." "$MP/" || fail "cp -a onto the kernel's mount"
		setfacl -m u:1005:r "$MP/plain/f" && chmod 0640 "$MP/plain/f" || fail "setfacl"
		view "$MP" "$T/kernel.view"
		unmount "$MP"
	else
		fail "mount"
	fi
	cleanup_mounts
	done_check
	run kernel-made-check 0 "$BTRSIM" check "$KIMG"
	progs_check "$KIMG"
	done_check
	rm -rf "$T/out"
	run kernel-made-extract 0 "$BTRSIM" extract "$KIMG" "$T/out"
	view "$T/out" "$T/ref.view"
	same "ref's extract of the kernel's image (< kernel > extract)" "$T/kernel.view" "$T/ref.view"
	done_check
fi
