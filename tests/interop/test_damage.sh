#!/bin/sh
# Damaged images made by mkfs.btrfs: a bad data copy is served from the good
# one and reported; with no good copy the read fails (EIO), never wrong data;
# a root tree lost in every copy fails the open (EIO, as the kernel's mount) unless
# --usebackuproot asks for the newest backup root that reads; truncated, zeroed and
# foreign images fail with a clear message.
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

command -v mkfs.btrfs >/dev/null || { skip damage "mkfs.btrfs is not installed"; exit 0; }

# flip IMG OFFSET: inverts one byte of an image file.
flip() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# physical IMG LOGICAL COPY: the physical offset of a copy, from btrsim map.
physical() {
	"$BTRSIM" map "$1" "$2" 2>/dev/null | awk -v c="copy $3:" 'index($0, c) == 1 { print $NF }'
}

mkdir -p "$T/src"
head -c 65536 /dev/urandom >"$T/src/data"
echo small >"$T/src/small"

for profile in dup single; do
	img="$T/$profile.img"
	truncate -s 300M "$img"
	mkfs.btrfs -q -f -d "$profile" -m dup --rootdir "$T/src" "$img" >/dev/null 2>&1 ||
		{ skip "damage-$profile" "mkfs.btrfs -d $profile failed"; continue; }
	ino=$("$BTRSIM" ls -i "$img" / | awk '$2 == "data" { split($1, a, ":"); print a[2] }')
	logical=$(btrfs inspect-internal dump-tree -t fs "$img" |
		grep -A2 "key ($ino EXTENT_DATA 0)" | awk '/disk byte/ { print $5 }')
	p0=$(physical "$img" "$logical" 0)
	NAME="damage-$profile-setup"
	[ -n "$p0" ] || { fail "no data extent found (ino '$ino' logical '$logical')"; done_check; continue; }
	flip "$img" $((p0 + 100))
	if [ "$profile" = dup ]; then
		run damage-dup-repaired 0 "$BTRSIM" cat "$img" /data
		cmp -s "$OUT" "$T/src/data" || fail "wrong data"
		err_has "data at logical [0-9]+: copy 0 has a bad checksum, served from copy 1"
		done_check
		flip "$img" $(($(physical "$img" "$logical" 1) + 200))
		run damage-dup-both-copies 1 "$BTRSIM" cat "$img" /data
		err_has 'checksum mismatch on every copy'
		out_empty
		done_check
	else
		run damage-single-eio 1 "$BTRSIM" cat "$img" /data
		err_has 'checksum mismatch on the only copy'
		out_empty
		done_check
		run damage-single-other-file 0 "$BTRSIM" cat "$img" /small
		out_has '^small$'
		done_check
	fi
done

# The root tree unreadable in both copies: the open fails, as the kernel's mount
# without -o usebackuproot (a backup root is an older state, never shown unasked);
# with --usebackuproot (check: --backup) the newest backup root that reads is used.
img="$T/backup.img"
truncate -s 300M "$img"
mkfs.btrfs -q -f --rootdir "$T/src" "$img" >/dev/null 2>&1
root=$(btrfs inspect-internal dump-super "$img" | awk '$1 == "root" { print $2 }')
flip "$img" $(($(physical "$img" "$root" 0) + 200))
flip "$img" $(($(physical "$img" "$root" 1) + 200))
run damage-root-refused 1 "$BTRSIM" ls "$img" /
err_has "^btrsim ls: $img: root tree unreadable: tree block $root: checksum mismatch \\(usebackuproot would try the backup roots\\)$"
err_lines 1
out_empty
done_check
run damage-root-check-refused 1 "$BTRSIM" check "$img"
err_has 'root tree unreadable: .*checksum mismatch'
done_check
run damage-backup-root 0 "$BTRSIM" ls --usebackuproot "$img" /
err_has 'using backup root [0-9] \(generation 6\)'
out_empty # mkfs filled the tree in generation 7: generation 6 is the empty file system
done_check
run damage-backup-root-manifest 0 "$BTRSIM" manifest --usebackuproot "$img"
out_has '^/ d 755 0 0 1 0 -$'
done_check
# The backup root is older than the rest of the superblock: btrfs check --backup
# finds the same disagreement.
run damage-backup-root-check 1 "$BTRSIM" check --backup "$img"
err_has 'using backup root [0-9] \(generation 6\)'
out_has '^ERROR: superblock bytes_used [0-9]+, the block groups add up to [0-9]+$'
out_has '^found 1 error$'
btrfs check --backup "$img" >"$T/bc.out" 2>&1
[ $? -eq 1 ] && grep -q 'super bytes used [0-9]* mismatches actual used' "$T/bc.out" ||
	fail "btrfs check --backup: $(tail -n 3 "$T/bc.out")"
done_check

# Images that are not (whole) btrfs file systems.
head -c 1048576 /dev/zero >"$T/zero.img"
run bad-zeroed 1 "$BTRSIM" ls "$T/zero.img" /
err_has 'no valid btrfs superblock'
err_lines 1
done_check

head -c 70000 /dev/zero >"$T/tiny.img"
run bad-not-sector-multiple 1 "$BTRSIM" ls "$T/tiny.img" /
err_lines 1
done_check

: >"$T/empty.img"
run bad-empty 1 "$BTRSIM" check "$T/empty.img"
err_lines 1
done_check

run bad-missing-image 1 "$BTRSIM" ls "$T/nonexistent.img" /
err_has 'No such file'
done_check

run bad-directory-image 1 "$BTRSIM" ls "$T" /
err_lines 1
done_check

cp "$T/dup.img" "$T/trunc.img" 2>/dev/null || cp "$img" "$T/trunc.img"
truncate -s 40M "$T/trunc.img"
run bad-truncated 1 "$BTRSIM" check "$T/trunc.img"
done_check

cp "$img" "$T/magic.img"
flip "$T/magic.img" $((65536 + 64))
run bad-magic 1 "$BTRSIM" dump-super "$T/magic.img"
err_has 'bad magic'
done_check

truncate -s 300M "$T/other.img"
mkfs.btrfs -q -f "$T/other.img" >/dev/null 2>&1
run bad-two-filesystems 1 "$BTRSIM" ls "$img" "$T/other.img" /
err_has 'belongs to'
done_check

run bad-same-image-twice 1 "$BTRSIM" ls "$img" "$img" /
err_has 'both claim devid'
done_check
