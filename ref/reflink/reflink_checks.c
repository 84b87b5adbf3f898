/*
 * reflink_checks.c - the range checks of a clone or dedupe, as Linux 6.18
 * makes them (fs/remap_range.c: remap_verify_area, generic_remap_checks,
 * generic_remap_check_len; fs/btrfs/reflink.c: btrfs_remap_file_range_prep),
 * with the kernel's errnos.
 */
#include "ref/reflink/reflink_int.h"

#include <errno.h>

#define MAX_BYTES ((uint64_t)INT64_MAX) /* s_maxbytes of btrfs: MAX_LFS_FILESIZE */

int rl_read(ref_fs *fs, struct rl_file *f)
{
	return inode_read(fs, &f->ino, &f->ii);
}

int rl_verify_area(ref_fs *fs, const struct rl_file *f, uint64_t pos, uint64_t len)
{
	if (pos > MAX_BYTES || len > MAX_BYTES || len > MAX_BYTES - pos)
		return ref_fail(fs, EINVAL, "%s: the range [%llu, +%llu) passes 2^63", f->path,
				(unsigned long long)pos, (unsigned long long)len);
	return 0;
}

int rl_flags_check(ref_fs *fs, const struct rl_file *src, const struct rl_file *dst)
{
	uint64_t a = LE64(src->ii.flags), b = LE64(dst->ii.flags);
	if ((a ^ b) & BTRFS_INODE_NODATASUM)
		return ref_fail(fs, EINVAL, "%s and %s: one has data checksums, the other not "
					    "(nodatasum)", src->path, dst->path);
	if (b & BTRFS_INODE_IMMUTABLE)
		return ref_fail(fs, EPERM, "%s: the file is immutable", dst->path);
	return 0;
}

int rl_range_checks(ref_fs *fs, const struct rl_file *src, uint64_t soff, const struct rl_file *dst,
		    uint64_t doff, uint64_t *len, uint64_t *blen, bool dedupe)
{
	uint64_t bs = fs->sectorsize, size_in = LE64(src->ii.size), size_out = LE64(dst->ii.size);
	uint64_t count = *len;
	if (soff % bs || doff % bs)
		return ref_fail(fs, EINVAL, "offsets %llu and %llu: not multiples of the block size %llu",
				(unsigned long long)soff, (unsigned long long)doff,
				(unsigned long long)bs);
	if (dedupe && (soff >= size_in || count > size_in - soff || doff >= size_out ||
		       count > size_out - doff))
		return ref_fail(fs, EINVAL, "the range [%llu, +%llu) of %s or [%llu, +%llu) of %s "
					    "passes its end", (unsigned long long)soff,
				(unsigned long long)count, src->path, (unsigned long long)doff,
				(unsigned long long)count, dst->path);
	if (soff >= size_in)
		return ref_fail(fs, EINVAL, "%s: offset %llu is at or past its end (%llu)", src->path,
				(unsigned long long)soff, (unsigned long long)size_in);
	if (count > size_in - soff)
		count = size_in - soff;
	if (doff >= MAX_BYTES)
		return ref_fail(fs, EFBIG, "%s: offset %llu is past the largest file", dst->path,
				(unsigned long long)doff);
	if (count > MAX_BYTES - doff)
		count = MAX_BYTES - doff;
	uint64_t b;
	if (soff + count == size_in && (!dedupe || doff + count == size_out)) {
		b = (size_in + bs - 1) / bs * bs - soff; /* the source's last block whole */
	} else {
		count = count / bs * bs;
		b = count;
	}
	bool same = src->ino.subvol == dst->ino.subvol && src->ino.ino == dst->ino.ino;
	if (same && doff < soff + b && soff < doff + b)
		return ref_fail(fs, EINVAL, "%s: the ranges at %llu and %llu overlap", src->path,
				(unsigned long long)soff, (unsigned long long)doff);
	if (count != *len && !dedupe)
		return ref_fail(fs, EINVAL, "the range [%llu, +%llu) of %s is not whole blocks and does "
					    "not end where the file ends (%llu)",
				(unsigned long long)soff, (unsigned long long)*len, src->path,
				(unsigned long long)size_in);
	/* generic_remap_check_len: an unaligned tail lands only at or past the
	 * destination's end; a dedupe is shortened to whole blocks instead */
	if (count % bs && doff + count < size_out) {
		if (!dedupe)
			return ref_fail(fs, EINVAL, "%s: the source's last partial block would land "
						    "inside %s, before its end", src->path, dst->path);
		count = count / bs * bs;
		b = count;
	}
	*len = count;
	*blen = b;
	return 0;
}
