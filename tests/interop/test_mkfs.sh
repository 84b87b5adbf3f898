#!/bin/sh
# btrsim mkfs: every option mix passes btrfs check and btrsim check; the kernel
# mounts the result, writes to it, and both checkers still pass; the same seed
# and time make the same image; bad options and small disks fail cleanly.
# Multi-device: `btrsim mkfs -d P -m P a.img b.img ...` for each profile passes
# btrfs check (the images attached as loop devices, so that it finds them all),
# the kernel mounts it over the loop devices and writes, btrfs check and
# btrsim check still pass, btrsim reads the kernel's file, and ref's writes on
# top are seen by the kernel.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v btrfs >/dev/null || { skip mkfs "btrfs-progs is not installed"; exit 0; }
LOOP_OK=0
can_loop_mount && LOOP_OK=1

i=0
for opts in "" "-d dup" "-m single" "--csum xxhash" "--csum sha256" "--csum blake2" "-n 4096" \
	"-n 65536" "-n 8k -L my-label" "--size 128M" "--size 300G"; do
	i=$((i + 1))
	img="$T/mk$i.img"
	size=1G
	case $opts in *--size*) size=$(echo "$opts" | sed 's/.*--size //'); opts=$(echo "$opts" | sed 's/--size [^ ]*//') ;; esac
	name="mkfs-$(echo "${opts:-default} $size" | tr -c 'a-zA-Z0-9\n' '-' | sed 's/--*/-/g; s/-$//')"
	# shellcheck disable=SC2086
	run "$name" 0 "$BTRSIM" mkfs $opts --size "$size" "$img"
	out_has '^UUID: '
	btrfs check --readonly "$img" >"$T/progs.log" 2>&1 || fail "btrfs check: $(grep -m1 -i error "$T/progs.log")"
	done_check
	run "$name-check" 0 "$BTRSIM" check "$img"
	out_has '^no error found$'
	done_check
	if [ "$LOOP_OK" -eq 1 ]; then
		NAME="$name-kernel"
		mkdir -p "$T/mnt"
		if mount -o loop "$img" "$T/mnt" 2>"$T/mount.err"; then
			MOUNTS="$T/mnt $MOUNTS"
			mkdir -p "$T/mnt/d"
			head -c 300000 /dev/urandom >"$T/mnt/d/data"
			cp "$T/mnt/d/data" "$T/data.src"
			echo small >"$T/mnt/small"
			btrfs -q subvolume create "$T/mnt/sub" >/dev/null
			unmount "$T/mnt"
			btrfs check --readonly "$img" >"$T/progs.log" 2>&1 ||
				fail "btrfs check after kernel writes: $(grep -m1 -i error "$T/progs.log")"
			"$BTRSIM" cat "$img" /d/data >"$T/data.out" 2>"$T/err" && cmp -s "$T/data.out" "$T/data.src" ||
				fail "btrsim reads the kernel's writes wrong: $(head -c 200 "$T/err")"
			"$BTRSIM" check "$img" >"$T/check.out" 2>&1 || fail "btrsim check after kernel writes: $(grep -m1 ERROR "$T/check.out")"
		else
			fail "the kernel does not mount it: $(head -c 200 "$T/mount.err") $(dmesg | tail -n 3 | tr '\n' '|')"
		fi
		done_check
	else
		skip "$name-kernel" "$LOOP_WHY"
	fi
	rm -f "$img"
done

# Same seed and time: the same image, byte for byte.
run mkfs-seeded-a 0 "$BTRSIM" mkfs --seed 42 --time 1000000000 --size 256M "$T/a.img"
done_check
run mkfs-seeded-b 0 "$BTRSIM" mkfs --seed 42 --time 1000000000 --size 256M "$T/b.img"
cmp -s "$T/a.img" "$T/b.img" || fail "same seed and time, different images"
done_check
run mkfs-seeded-other 0 "$BTRSIM" mkfs --seed 43 --time 1000000000 --size 256M "$T/c.img"
cmp -s "$T/a.img" "$T/c.img" && fail "different seeds, same image"
done_check

# Refusals.
run mkfs-existing 1 "$BTRSIM" mkfs "$T/a.img"
err_has 'holds a btrfs file system already'
done_check
run mkfs-force 0 "$BTRSIM" mkfs -f "$T/a.img"
done_check
run mkfs-too-small 1 "$BTRSIM" mkfs --size 16M "$T/small.img"
err_has 'too small'
err_lines 1
done_check
run mkfs-missing-size 1 "$BTRSIM" mkfs "$T/none.img"
err_has 'give --size'
done_check
run mkfs-bad-profile 2 "$BTRSIM" mkfs -d raid7 --size 256M "$T/p.img"
err_has 'single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5 or raid6'
done_check
run mkfs-profile-needs-devices 1 "$BTRSIM" mkfs -d raid1 --size 256M "$T/p.img"
err_has 'data profile RAID1 needs at least 2 devices, the volume has 1'
err_lines 1
done_check
run mkfs-bad-nodesize 1 "$BTRSIM" mkfs -n 12k --size 256M "$T/n.img"
err_has 'nodesize'
done_check
run mkfs-bad-csum 2 "$BTRSIM" mkfs --csum md5 --size 256M "$T/m.img"
err_has 'checksum'
done_check
run mkfs-no-image 2 "$BTRSIM" mkfs --size 256M
err_has 'needs an image'
done_check
rm -f "$T"/*.img

# ---- Several images: one multi-device file system. ----------------------------

# mimg N PREFIX: the paths PREFIX1.img .. PREFIXN.img in $IMGS.
mimg() {
	IMGS=""
	k=1
	while [ "$k" -le "$1" ]; do
		IMGS="$IMGS $T/$2$k.img"
		k=$((k + 1))
	done
}

run mkfs-multi-needs-3 1 "$BTRSIM" mkfs -m raid1c3 --size 256M "$T/x1.img" "$T/x2.img"
err_has 'metadata profile RAID1C3 needs at least 3 devices, the volume has 2'
err_lines 1
done_check
run mkfs-multi-needs-4 1 "$BTRSIM" mkfs -d raid1c4 -m raid1 -f --size 256M "$T/x1.img" "$T/x2.img" "$T/x3.img"
err_has 'data profile RAID1C4 needs at least 4 devices, the volume has 3'
done_check
run mkfs-multi-raid6-needs-3 1 "$BTRSIM" mkfs -d raid6 -f --size 256M "$T/x1.img" "$T/x2.img"
err_has 'data profile RAID6 needs at least 3 devices, the volume has 2'
done_check
run mkfs-multi-twice 2 "$BTRSIM" mkfs -f --size 256M "$T/x1.img" "$T/x1.img"
err_has 'given twice'
done_check
run mkfs-multi-ok 0 "$BTRSIM" mkfs -d raid1 --size 256M "$T/y1.img" "$T/y2.img"
out_has '^  Metadata: +RAID1$'
out_has '^Number of devices:  2$'
done_check
run mkfs-multi-existing 1 "$BTRSIM" mkfs --size 256M "$T/x1.img" "$T/y2.img"
err_has 'y2.img holds a btrfs file system already'
done_check
rm -f "$T"/*.img

# Same seed and time: the same images.
mimg 3 sa
# shellcheck disable=SC2086
run mkfs-multi-seeded-a 0 "$BTRSIM" mkfs -d raid10 -m raid1c3 --seed 42 --time 1000000000 --size 256M $IMGS
done_check
mimg 3 sb
# shellcheck disable=SC2086
run mkfs-multi-seeded-b 0 "$BTRSIM" mkfs -d raid10 -m raid1c3 --seed 42 --time 1000000000 --size 256M $IMGS
for k in 1 2 3; do cmp -s "$T/sa$k.img" "$T/sb$k.img" || fail "same seed and time, image $k differs"; done
done_check
rm -f "$T"/*.img

# PROFILES as "N data meta" (meta "-": the default, RAID1 on several devices).
for cfg in "2 raid1 raid1" "2 single -" "2 dup dup" "2 raid0 raid0" "2 raid10 raid10" \
	"3 raid1c3 raid1c3" "3 raid0 raid1" "3 raid10 raid1c3" "4 raid1c4 raid1c4" "4 raid10 raid10" \
	"2 raid5 raid5" "3 raid5 raid1" "3 raid6 raid6" "4 raid6 raid5" "5 raid5 raid6"; do
	set -- $cfg
	n=$1
	data=$2
	meta=$3
	name="mkfs-multi-$n-$data-$(echo "$meta" | sed 's/^-$/default/')"
	mimg "$n" m
	mopt=""
	[ "$meta" = - ] || mopt="-m $meta"
	# shellcheck disable=SC2086
	run "$name" 0 "$BTRSIM" mkfs -d "$data" $mopt --size 1G $IMGS
	out_has "^Number of devices:  $n$"
	[ "$meta" = - ] && out_has '^  Metadata: +RAID1$'
	done_check
	# shellcheck disable=SC2086
	run "$name-check" 0 "$BTRSIM" check $IMGS
	out_has '^no error found$'
	done_check
	if [ "$LOOP_OK" -eq 1 ]; then
		NAME="$name-kernel"
		DEVS=""
		for img in $IMGS; do
			attach "$img" || fail "losetup $img failed"
			DEVS="$DEVS $LOOP"
		done
		first=$(echo $IMGS | cut -d' ' -f1)
		btrfs check --readonly "$first" >"$T/progs.log" 2>&1 ||
			fail "btrfs check: $(grep -m1 -iE 'error|missing' "$T/progs.log")"
		# shellcheck disable=SC2086
		if mount_dev "$T/mnt" "" $DEVS 2>"$T/mount.err"; then
			mkdir -p "$T/mnt/d"
			head -c 3000000 /dev/urandom >"$T/data.src"
			cp "$T/data.src" "$T/mnt/d/data"
			echo small >"$T/mnt/small"
			unmount "$T/mnt" || fail "umount failed"
			btrfs check --readonly "$first" >"$T/progs.log" 2>&1 ||
				fail "btrfs check after kernel writes: $(grep -m1 -iE 'error|missing' "$T/progs.log")"
			detach_all
			# shellcheck disable=SC2086
			"$BTRSIM" cat $IMGS /d/data >"$T/data.out" 2>"$T/err" && cmp -s "$T/data.out" "$T/data.src" ||
				fail "btrsim reads the kernel's writes wrong: $(head -c 200 "$T/err")"
			# shellcheck disable=SC2086
			"$BTRSIM" check $IMGS >"$T/check.out" 2>&1 ||
				fail "btrsim check after kernel writes: $(grep -m1 ERROR "$T/check.out")"
			# ref writes on top; the kernel and btrfs check see it.
			head -c 200000 /dev/urandom >"$T/ref.src"
			# shellcheck disable=SC2086
			"$BTRSIM" put $IMGS "$T/ref.src" /from-ref >/dev/null 2>"$T/err" ||
				fail "btrsim put: $(head -c 200 "$T/err")"
			# A partial overwrite (RAID5/6: a read-modify-write of its rows).
			head -c 70000 /dev/urandom >"$T/patch"
			dd if="$T/patch" of="$T/ref.src" bs=1 seek=33333 conv=notrunc status=none
			# shellcheck disable=SC2086
			"$BTRSIM" write --offset 33333 $IMGS /from-ref "$T/patch" >/dev/null 2>"$T/err" ||
				fail "btrsim write: $(head -c 200 "$T/err")"
			DEVS=""
			for img in $IMGS; do
				attach "$img" || fail "losetup $img failed"
				DEVS="$DEVS $LOOP"
			done
			btrfs check --readonly "$first" >"$T/progs.log" 2>&1 ||
				fail "btrfs check after ref's writes: $(grep -m1 -iE 'error|missing' "$T/progs.log")"
			# shellcheck disable=SC2086
			if mount_dev "$T/mnt" ro $DEVS 2>"$T/mount.err"; then
				cmp -s "$T/mnt/from-ref" "$T/ref.src" || fail "the kernel reads ref's file wrong"
				cmp -s "$T/mnt/d/data" "$T/data.src" || fail "the kernel reads its own file wrong"
				unmount "$T/mnt" || fail "umount failed"
			else
				fail "the kernel does not mount it after ref's writes: $(head -c 200 "$T/mount.err")"
			fi
			detach_all
			# RAID5/6: with any one device left out, the kernel rebuilds
			# what it held from ref's parity.
			case "$data $meta" in *raid5* | *raid6*)
				for out in $IMGS; do
					DEVS=""
					for img in $IMGS; do
						[ "$img" = "$out" ] && continue
						attach "$img" || fail "losetup $img failed"
						DEVS="$DEVS $LOOP"
					done
					# shellcheck disable=SC2086
					if mount_dev "$T/mnt" degraded,ro $DEVS 2>"$T/mount.err"; then
						cmp -s "$T/mnt/from-ref" "$T/ref.src" ||
							fail "without ${out##*/}, the kernel reads ref's file wrong"
						cmp -s "$T/mnt/d/data" "$T/data.src" ||
							fail "without ${out##*/}, the kernel reads its own file wrong"
						unmount "$T/mnt" || fail "umount failed"
					else
						fail "the kernel does not mount it without ${out##*/}: $(head -c 200 "$T/mount.err")"
					fi
					detach_all
				done
				;;
			esac
		else
			fail "the kernel does not mount it: $(head -c 200 "$T/mount.err") $(dmesg | tail -n 3 | tr '\n' '|')"
		fi
		detach_all
		done_check
	else
		skip "$name-kernel" "$LOOP_WHY"
	fi
	rm -f $IMGS
done
