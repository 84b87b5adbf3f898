#!/bin/sh
# btrsim mkfs: every option mix passes btrfs check and btrsim check; the kernel
# mounts the result, writes to it, and both checkers still pass; the same seed
# and time make the same image; bad options and small disks fail cleanly.
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
run mkfs-bad-profile 2 "$BTRSIM" mkfs -d raid1 --size 256M "$T/p.img"
err_has 'single or dup'
done_check
run mkfs-bad-nodesize 1 "$BTRSIM" mkfs -n 12k --size 256M "$T/n.img"
err_has 'nodesize'
done_check
run mkfs-bad-csum 2 "$BTRSIM" mkfs --csum md5 --size 256M "$T/m.img"
err_has 'checksum'
done_check
run mkfs-two-images 2 "$BTRSIM" mkfs "$T/a.img" "$T/b.img"
done_check
