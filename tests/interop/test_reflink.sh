#!/bin/sh
# Reflinks against the kernel, the cases a workload cannot make (issue 23):
# files the kernel flagged immutable (chattr +i: EPERM for a clone into
# it), append-only (+a: EPERM for a clone, a dedupe allowed) and nodatasum
# (+C on one side only: EINVAL for both), on the kernel's own image with
# btrsim clone and dedupe (the errnos Linux 6.18 gives there, measured with
# FICLONE and FIDEDUPERANGE on this kernel: ref/README.md, "Reflinks and
# dedupe"); nothing changes (the kernel reads the same tree after), and a
# destination on another file system gives EXDEV from the host runner (a
# tmpfs mounted inside the btrfs mount).  Both checkers pass after.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

if ! can_loop_mount; then
	skip reflink "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"
mkdir -p "$MP"
img="$T/k.img"
truncate -s 512M "$img"
mkfs.btrfs -q -f "$img" >/dev/null 2>&1
if ! mount -o loop "$img" "$MP" 2>"$T/m.err"; then
	NAME=reflink-setup
	fail "mount: $(head -c 200 "$T/m.err")"
	done_check
	exit 0
fi
MOUNTS="$MP $MOUNTS"
head -c 65536 /dev/urandom >"$MP/src"
cp "$MP/src" "$MP/same"
head -c 65536 /dev/urandom >"$MP/immutable"
head -c 65536 /dev/urandom >"$MP/append"
cp "$MP/src" "$MP/append-same"
touch "$MP/nocsum"
chattr +C "$MP/nocsum"
head -c 65536 /dev/urandom >>"$MP/nocsum"
chattr +i "$MP/immutable"
chattr +a "$MP/append" "$MP/append-same"
unmount "$MP"

run clone-immutable 1 "$BTRSIM" clone "$img" /src /immutable
err_has 'EPERM'
done_check
run clone-append-only 1 "$BTRSIM" clone "$img" /src /append
err_has 'EPERM'
done_check
run clone-nodatasum 1 "$BTRSIM" clone "$img" /src /nocsum
err_has 'EINVAL'
done_check
run clone-from-nodatasum 1 "$BTRSIM" clone --range 0 64K 0 "$img" /nocsum /same
err_has 'EINVAL'
done_check
# a dedupe of equal bytes into an append-only file: allowed, as the kernel's
run dedupe-append-only 0 "$BTRSIM" dedupe "$img" /src /append-same
done_check
NAME=nothing-changed
"$BTRSIM" manifest "$img" >"$T/after.mf"
if mount -o loop,ro "$img" "$MP" 2>"$T/m.err"; then
	MOUNTS="$MP $MOUNTS"
	"$BTRSIM" manifest --host "$MP" >"$T/kernel.mf"
	cmp -s "$T/after.mf" "$T/kernel.mf" || fail "the kernel reads another tree: $(diff "$T/after.mf" "$T/kernel.mf" | head -4 | tr '\n' '|')"
	unmount "$MP"
else
	fail "mount: $(head -c 200 "$T/m.err")"
fi
done_check
check reflink-flags

# EXDEV: the destination on another file system inside the root (the host
# runner's openat2 stays inside the root, which this mount point is in).
if mount -o loop "$img" "$MP" 2>"$T/m.err"; then
	MOUNTS="$MP $MOUNTS"
	mkdir -p "$MP/other"
	if mount -t tmpfs tmpfs "$MP/other" 2>"$T/t.err"; then
		MOUNTS="$MP/other $MOUNTS"
		touch "$MP/other/x"
		cat >"$T/xdev.wl" <<'W'
clone /src /other/x = EXDEV
clone-range /src 0 4K /other/x 0 = EXDEV
dedupe /src 0 4K /other/x 0 = EXDEV
W
		run exdev-host 0 "$BTRSIM" run --host "$MP" "$T/xdev.wl"
		done_check
		unmount "$MP/other"
	else
		skip exdev-host "tmpfs mount failed: $(head -c 200 "$T/t.err")"
	fi
	unmount "$MP"
fi
