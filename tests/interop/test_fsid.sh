#!/bin/sh
# metadata_uuid and interrupted fsid changes (issue 20), made by btrfstune
# and by an interrupted btrfstune's superblock flags (super_flag.py sets a
# flag and writes the checksum again, as a btrfstune stopped between two
# superblock writes leaves it):
#   (1) btrfstune -m on one device and -M on a two-device RAID1 volume:
#       ref finds every device, reads and checks clean as btrfs check does,
#       writes; btrfs check passes after and the kernel mounts ref's result
#       and reads the file ref wrote.
#   (2) CHANGING_FSID_V2 on every device (btrfstune -m stopped before any
#       fsid moved), and on one device only while the other finished (its
#       fsid already new, its generation newer): ref finds both devices by
#       the fsid their tree blocks carry and reads them; writing is refused
#       with EAGAIN and nothing written, as the kernel refuses the mount.
#   (3) CHANGING_FSID (btrfstune -U stopped): btrfs check and the kernel
#       refuse it, and so does ref.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v btrfstune >/dev/null || { skip fsid "btrfstune (btrfs-progs) is not installed"; exit 0; }
command -v python3 >/dev/null || { skip fsid "python3 is not installed"; exit 0; }
if ! can_loop_mount; then
	# (btrfstune finds a volume's other devices through the kernel's scan)
	skip fsid "$LOOP_WHY"
	exit 0
fi
MP="$T/mnt"
mkdir -p "$MP"
FLAG="$(dirname "$0")/super_flag.py"

# tune IMG... -- ARGS: btrfstune ARGS on the volume of the images, attached.
tune() {
	devs=""
	first=""
	while [ "$1" != "--" ]; do
		attach "$1" || return 1
		devs="$devs $LOOP"
		first=${first:-$LOOP}
		shift
	done
	shift
	# shellcheck disable=SC2086
	btrfs device scan $devs >/dev/null 2>&1
	btrfstune "$@" "$first" >"$T/tune.log" 2>&1 </dev/null
	st=$?
	cleanup_mounts
	[ $st -eq 0 ] || fail "btrfstune $*: $(tr '\n' '|' <"$T/tune.log")"
}

# kernel_reads IMG... : the kernel mounts the volume and /w/file holds $T/data.
kernel_reads() {
	devs=""
	for i in "$@"; do attach "$i" || return 1; devs="$devs $LOOP"; done
	# shellcheck disable=SC2086
	if mount_dev "$MP" "" $devs; then
		cmp -s "$MP/w/file" "$T/data" || fail "the kernel reads another /w/file"
		unmount "$MP"
	else
		fail "the kernel cannot mount the volume"
	fi
	cleanup_mounts
}

# kernel_refuses WHY IMG...: the kernel's mount fails.
kernel_refuses() {
	why=$1
	shift
	devs=""
	for i in "$@"; do attach "$i" || return 1; devs="$devs $LOOP"; done
	# shellcheck disable=SC2086
	if mount_dev "$MP" "" $devs 2>/dev/null; then
		fail "the kernel mounted a volume with $why"
		unmount "$MP"
	fi
	cleanup_mounts
}

head -c 300000 /dev/urandom >"$T/data"

# ---- (1) metadata_uuid ----

truncate -s 300M "$T/one.img"
mkfs.btrfs -q -f "$T/one.img" >/dev/null 2>&1 || fail "mkfs.btrfs"
run one-device 0 true
tune "$T/one.img" -- -m
btrfs inspect-internal dump-super "$T/one.img" | grep -q '^metadata_uuid' || fail "no metadata_uuid"
done_check
run one-device-check 0 "$BTRSIM" check "$T/one.img"
progs_check "$T/one.img"
done_check
run one-device-write 0 "$BTRSIM" mkdir "$T/one.img" /w
run one-device-write 0 "$BTRSIM" write --create "$T/one.img" /w/file "$T/data"
progs_check "$T/one.img"
kernel_reads "$T/one.img"
done_check

truncate -s 300M "$T/a.img" "$T/b.img"
mkfs.btrfs -q -f -d raid1 -m raid1 "$T/a.img" "$T/b.img" >/dev/null 2>&1 || fail "mkfs.btrfs"
run two-devices 0 true
tune "$T/a.img" "$T/b.img" -- -M 0c5fe1d2-55aa-4f4f-9e9e-123456789abc
done_check
run two-devices-check 0 "$BTRSIM" check "$T/a.img" "$T/b.img"
out_has '^no error found$'
done_check
run two-devices-write 0 "$BTRSIM" mkdir "$T/a.img" "$T/b.img" /w
run two-devices-write 0 "$BTRSIM" write --create "$T/a.img" "$T/b.img" /w/file "$T/data"
kernel_reads "$T/a.img" "$T/b.img"
done_check

# ---- (2) an interrupted metadata_uuid change ----

truncate -s 300M "$T/p.img" "$T/q.img"
mkfs.btrfs -q -f -d raid1 -m raid1 "$T/p.img" "$T/q.img" >/dev/null 2>&1 || fail "mkfs.btrfs"
cp --sparse=always "$T/p.img" "$T/p-stopped.img"
cp --sparse=always "$T/q.img" "$T/q-stopped.img"
cp --sparse=always "$T/q.img" "$T/q-behind.img"
run v2-made 0 python3 "$FLAG" "$T/p-stopped.img" 36
run v2-made 0 python3 "$FLAG" "$T/q-stopped.img" 36
run v2-made 0 python3 "$FLAG" "$T/q-behind.img" 36
tune "$T/p.img" "$T/q.img" -- -m
done_check
for pair in "p-stopped q-stopped" "p q-behind"; do
	set -- $pair
	name=v2-${1}-${2}
	run "$name-check" 0 "$BTRSIM" check "$T/$1.img" "$T/$2.img"
	out_has '^no error found$'; err_has 'metadata_uuid is incomplete'
	done_check
	run "$name-ls" 0 "$BTRSIM" ls "$T/$1.img" "$T/$2.img" /
	done_check
	cp "$T/$1.img" "$T/before1" && cp "$T/$2.img" "$T/before2"
	run "$name-no-write" 1 "$BTRSIM" mkdir "$T/$1.img" "$T/$2.img" /x
	err_has 'EAGAIN.*incomplete metadata_uuid change, please use btrfstune to complete'
	cmp -s "$T/$1.img" "$T/before1" && cmp -s "$T/$2.img" "$T/before2" || fail "an image changed"
	kernel_refuses "an incomplete metadata_uuid change" "$T/$1.img" "$T/$2.img"
	done_check
done
# btrfs check 6.2 agrees where every device carries the flag.
run v2-progs 0 true
progs_check "$T/p-stopped.img"
done_check

# ---- (3) an interrupted UUID change (btrfstune -U) ----

cp --sparse=always "$T/one.img" "$T/u.img"
run v1-made 0 python3 "$FLAG" "$T/u.img" 35
done_check
run v1-refused 1 "$BTRSIM" check "$T/u.img"
err_has "UUID is in progress"
btrfs check --readonly "$T/u.img" >"$T/progs.log" 2>&1 && fail "btrfs check passed it"
grep -q 'UUID change in progress' "$T/progs.log" || fail "btrfs check: $(tail -2 "$T/progs.log" | tr '\n' '|')"
kernel_refuses "a UUID change in progress" "$T/u.img"
done_check
