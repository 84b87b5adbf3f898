#!/bin/sh
# Subvolumes and snapshots against the real Btrfs: ref makes nested
# subvolumes, a chain of 12 snapshots of snapshots, read-only snapshots and
# snapshots of a large file after partial overwrites, writing to both sides
# after each; btrfs check and btrsim check pass; each snapshot keeps the
# content its source had when it was taken (checked against copies kept on
# the host); the kernel mounts the image and sees what ref sees; the kernel
# then snapshots and writes, and ref reads that back and writes on top.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v btrfs >/dev/null || { skip snapshot "btrfs-progs is not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1
[ "$LOOP_OK" -eq 1 ] || skip snapshot-kernel "$LOOP_WHY"

clean() {
	btrfs check --readonly "$1" >"$T/progs.log" 2>&1 ||
		fail "btrfs check: $(grep -m3 -iE 'error|wrong|mismatch|ERROR' "$T/progs.log" | tr '\n' '|')"
	"$BTRSIM" check "$1" >"$T/ref.log" 2>&1 ||
		fail "btrsim check: $(grep -m2 -i error "$T/ref.log" | tr '\n' '|')"
}

# kernel_sees_ref IMG: the kernel's view equals ref's.
kernel_sees_ref() {
	[ "$LOOP_OK" -eq 1 ] || return 0
	"$BTRSIM" manifest "$1" >"$T/ref.view" 2>"$T/err" || { fail "manifest: $(cat "$T/err")"; return; }
	if attach "$1" && mount_dev "$T/mnt" "subvolid=5" "$LOOP"; then
		"$BTRSIM" manifest --host "$T/mnt" >"$T/kernel.view" || fail "manifest --host"
		cmp -s "$T/ref.view" "$T/kernel.view" ||
			fail "views differ (ref < > kernel): $(diff "$T/ref.view" "$T/kernel.view" | head -6 | tr '\n' '|')"
		detach_all
	else
		fail "the kernel cannot mount the image"
	fi
}

# same_file NAME IMG PATH HOSTFILE: ref reads PATH as HOSTFILE.
same_file() {
	"$BTRSIM" cat "$2" "$3" >"$T/got" 2>"$T/err" || { fail "cat $3: $(cat "$T/err")"; return; }
	cmp -s "$T/got" "$4" || fail "$3 differs from what it was when snapshotted"
}

IMG="$T/snap.img"
truncate -s 1G "$IMG"
"$BTRSIM" mkfs "$IMG" >/dev/null
mkdir -p "$T/tree" "$T/keep"
i=1
while [ $i -le 300 ]; do # enough files for a tree of several levels
	head -c $((i * 37 % 9000 + 1)) /dev/urandom >"$T/tree/f$i"
	i=$((i + 1))
done
head -c 3000000 /dev/urandom >"$T/big"

run create 0 "$BTRSIM" put "$IMG" "$T/tree" /t
run create 0 "$BTRSIM" subvolume create "$IMG" /sub
out_has "Create subvolume '/sub'"
run create 0 "$BTRSIM" subvolume create "$IMG" /sub/nested
run create 0 "$BTRSIM" put "$IMG" "$T/big" /sub/nested/big
run create 1 "$BTRSIM" subvolume create "$IMG" /sub
err_has EEXIST
done_check

# A chain of snapshots of snapshots; after each, both sides change.
run chain 0 true
prev=/
i=1
while [ $i -le 12 ] && [ "$BAD" -eq 0 ]; do
	"$BTRSIM" cat "$IMG" "$prev/t/f$((i * 7))" >"$T/keep/s$i.f" 2>/dev/null ||
		"$BTRSIM" cat "$IMG" "/t/f$((i * 7))" >"$T/keep/s$i.f"
	"$BTRSIM" subvolume snapshot "$IMG" "$prev" "/s$i" >/dev/null 2>"$T/err" ||
		fail "snapshot $prev /s$i: $(cat "$T/err")"
	echo "source $i" | "$BTRSIM" write "$IMG" "$prev/t/f$((i * 7))" || fail "write $prev"
	echo "snapshot $i" | "$BTRSIM" write "$IMG" "/s$i/t/f$((i * 7 + 1))" || fail "write /s$i"
	prev=/s$i
	i=$((i + 1))
done
"$BTRSIM" subvolume list "$IMG" >"$OUT"
n=$(grep -c '^ID ' "$OUT")
[ "$n" -eq 14 ] || fail "list shows $n subvolumes, expected 14: $(tr '\n' '|' <"$OUT")"
out_has '^ID 256 gen [0-9]+ top level 5 path sub$'
out_has '^ID 257 gen [0-9]+ top level 256 path sub/nested$'
out_has 'top level 5 path s12$'
done_check

# Each snapshot still holds what its source had: s_i took f(7i) before the
# source's write, and later snapshots' writes never reach it.
run chain-content 0 true
i=1
while [ $i -le 12 ]; do
	same_file chain-content "$IMG" "/s$i/t/f$((i * 7))" "$T/keep/s$i.f"
	i=$((i + 1))
done
same_file chain-content "$IMG" /s3/t/f100 "$T/tree/f100"
done_check

# A read-only snapshot of a large file, then partial overwrites of the source.
run readonly 0 "$BTRSIM" subvolume snapshot -r "$IMG" /sub/nested /ro
out_has "Create readonly snapshot"
done_check
run readonly-erofs 1 sh -c "echo x | '$BTRSIM' write '$IMG' /ro/big"
err_has EROFS
done_check
run readonly-mkdir 1 "$BTRSIM" mkdir "$IMG" /ro/d
err_has EROFS
done_check
run overwrite 0 true
for off in 0 70000 1048576 2999990; do
	echo "overwrite at $off" | "$BTRSIM" write -o "$off" "$IMG" /sub/nested/big || fail "write at $off"
done
same_file overwrite "$IMG" /ro/big "$T/big"
"$BTRSIM" cat "$IMG" /sub/nested/big | cmp -s - "$T/big" && fail "the source did not change"
done_check

run show 0 "$BTRSIM" subvolume show "$IMG" /ro
out_has 'Name:[[:space:]]+ro$'
out_has 'Flags:[[:space:]]+readonly'
out_has 'Parent UUID:[[:space:]]+[0-9a-f]{8}-'
done_check
run show-source 0 "$BTRSIM" subvolume show "$IMG" /sub/nested
out_has '^[[:space:]]+ro$'
done_check
run show-not-subvol 1 "$BTRSIM" subvolume show "$IMG" /t
err_has "not a subvolume"
done_check
run snapshot-not-subvol 1 "$BTRSIM" subvolume snapshot "$IMG" /t /x
err_has EINVAL
done_check

run default 0 "$BTRSIM" subvolume get-default "$IMG"
out_has '^ID 5 \(FS_TREE\)$'
done_check
run set-default 0 "$BTRSIM" subvolume set-default "$IMG" /sub
run set-default 0 "$BTRSIM" subvolume get-default "$IMG"
out_has '^ID 256 gen [0-9]+ top level 5 path sub$'
if [ "$LOOP_OK" -eq 1 ]; then # the kernel mounts the default subvolume
	if attach "$IMG" && mount_dev "$T/mnt" "" "$LOOP"; then
		[ -d "$T/mnt/nested" ] && [ ! -d "$T/mnt/t" ] || fail "the kernel did not mount /sub: $(ls "$T/mnt" | tr '\n' ' ')"
		detach_all
	else
		fail "the kernel cannot mount the image"
	fi
fi
done_check

run clean 0 true
clean "$IMG"
done_check
run kernel-view 0 true
kernel_sees_ref "$IMG"
done_check

# The kernel snapshots and writes; ref reads that and writes on top.
if [ "$LOOP_OK" -eq 1 ]; then
	run kernel-snapshots 0 true
	if attach "$IMG" && mount_dev "$T/mnt" "subvolid=5" "$LOOP"; then
		btrfs subvolume snapshot "$T/mnt/s12" "$T/mnt/k1" >/dev/null || fail "kernel snapshot"
		echo kernel >"$T/mnt/k1/t/f5"
		echo kernel >"$T/mnt/s6/t/f6"
		cp "$T/big" "$T/mnt/k1/big"
		btrfs subvolume list "$T/mnt" | sed 's/^ID \([0-9]*\) gen [0-9]* top level \([0-9]*\) path /\1 \2 /' >"$T/kernel.list"
		detach_all
	else
		fail "the kernel cannot mount the image"
	fi
	clean "$IMG"
	"$BTRSIM" subvolume list "$IMG" | sed 's/^ID \([0-9]*\) gen [0-9]* top level \([0-9]*\) path /\1 \2 /' >"$T/ref.list"
	cmp -s "$T/kernel.list" "$T/ref.list" || fail "lists differ: $(diff "$T/kernel.list" "$T/ref.list" | head -4 | tr '\n' '|')"
	done_check
	run ref-on-kernel 0 true
	for p in /k1/t/f9 /s6/t/f10 /t/f11; do
		echo ref | "$BTRSIM" write "$IMG" "$p" || fail "write $p"
	done
	"$BTRSIM" subvolume snapshot "$IMG" /k1 /k2 >/dev/null || fail "snapshot of a kernel snapshot"
	"$BTRSIM" rm "$IMG" /k2/big || fail "rm in /k2"
	same_file ref-on-kernel "$IMG" /k1/big "$T/big"
	clean "$IMG"
	kernel_sees_ref "$IMG"
	done_check
fi

# Deleting: gone from the namespace at once, the cleaner frees the rest a
# part per commit; every half-way state passes both checkers and mounts.
IMG2="$T/del.img"
truncate -s 1G "$IMG2"
"$BTRSIM" mkfs "$IMG2" >/dev/null
mkdir -p "$T/many"
i=1
while [ $i -le 1500 ]; do echo "file $i" >"$T/many/f$i"; i=$((i + 1)); done
data_bytes() { btrfs check --readonly "$1" 2>/dev/null | sed -n 's/^file data blocks allocated: //p'; }
run delete-setup 0 "$BTRSIM" subvolume create "$IMG2" /big
run delete-setup 0 "$BTRSIM" put "$IMG2" "$T/many" /big/m
run delete-setup 0 "$BTRSIM" put "$IMG2" "$T/big" /big/bigfile
done_check
before=$(data_bytes "$IMG2")
"$BTRSIM" manifest -s /big "$IMG2" >"$T/big.before"
run delete 0 "$BTRSIM" subvolume snapshot "$IMG2" /big /snap
for f in 800 900 1000; do echo only-in-snapshot | "$BTRSIM" write "$IMG2" "/snap/m/f$f" || fail "write"; done
"$BTRSIM" put "$IMG2" "$T/tree/f9" /snap/new || fail "put"
run delete 0 "$BTRSIM" subvolume delete "$IMG2" /snap
out_has "Delete subvolume '/snap'"
"$BTRSIM" ls "$IMG2" / | grep -q snap && fail "/snap is still listed"
"$BTRSIM" dump-tree -t root "$IMG2" | grep -q 'drop_progress key (257 ' || fail "the drop did not stop half-way"
clean "$IMG2"
done_check
run delete-halfway 0 "$BTRSIM" mkdir "$IMG2" /x # a commit: one more cleaner step
clean "$IMG2"
kernel_sees_ref "$IMG2" # the kernel mounts the half-dropped file system (and may go on)
done_check
run delete-sync 0 "$BTRSIM" subvolume sync "$IMG2"
"$BTRSIM" dump-tree -t root "$IMG2" | grep -q ORPHAN && fail "an orphan item is left"
clean "$IMG2"
after=$(data_bytes "$IMG2")
[ "$before" = "$after" ] || fail "data in use was $before before the snapshot, $after after its deletion"
"$BTRSIM" manifest -s /big "$IMG2" >"$T/big.after"
cmp -s "$T/big.before" "$T/big.after" || fail "the deletion changed /big"
done_check
run delete-top 1 "$BTRSIM" subvolume delete "$IMG2" /
err_has EPERM
done_check
run delete-not-subvol 1 "$BTRSIM" subvolume delete "$IMG2" /x
err_has EINVAL
done_check
run delete-nested 1 "$BTRSIM" subvolume delete "$IMG" /sub
err_has 'EPERM|ENOTEMPTY' # /sub is the default and holds /sub/nested
done_check
run delete-default 0 "$BTRSIM" subvolume set-default "$IMG2" /big
run delete-default 1 "$BTRSIM" subvolume delete "$IMG2" /big
err_has EPERM
done_check
