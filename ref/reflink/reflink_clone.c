/*
 * reflink_clone.c - FICLONE and FICLONERANGE as Linux 6.18 gives them on
 * btrfs (ref_clone, ref_clone_range; ref/vfs.h): the source opened for
 * reading and the destination for writing (EISDIR, EROFS, an append-only
 * file's EPERM), then the ioctl's checks in its order (fs/remap_range.c,
 * fs/btrfs/reflink.c): EISDIR and EINVAL for what is no regular file,
 * EINVAL for ranges past 2^63, for a NODATASUM flag on one side only, for
 * unaligned offsets, a range past the source's end or overlapping itself in
 * one file, an unaligned length that does not end at the source's end or
 * whose last partial block would land inside the destination; EPERM for an
 * immutable destination.  A length of 0 means up to the source's end (and
 * is nothing to do at it).  The destination loses its file capabilities
 * (file_modified; set-id bits stay: the caller is root) and gets new mtime
 * and ctime.  A clone is not a persistence point; it shares the source's
 * extents (reflink_remap.c) and the quota groups count them at the commit
 * as the kernel counts them (each extent whole, once per subvolume).
 * (Cross-file-system EXDEV has no case here: a ref_fs is one file system.)
 */
#include "ref/reflink/reflink_int.h"

#include <errno.h>
#include <sys/stat.h>

/* The open(2) of the destination for writing: EISDIR, EROFS, and EPERM for
 * an append-only file opened without O_APPEND (may_open). */
static int open_dst(ref_fs *fs, struct rl_file *d)
{
	int r = vfs_resolve(fs, d->path, true, &d->ino);
	if (r || (r = rl_read(fs, d)))
		return r;
	if (S_ISDIR(inode_mode(&d->ii)))
		return ref_fail(fs, EISDIR, "%s: is a directory", d->path);
	if ((r = vfs_writable(fs, &d->ino)))
		return r;
	if (LE64(d->ii.flags) & BTRFS_INODE_APPEND)
		return ref_fail(fs, EPERM, "%s: the file is append-only", d->path);
	return 0;
}

/* generic_file_rw_checks: directories EISDIR, anything else not regular EINVAL. */
static int both_regular(ref_fs *fs, const struct rl_file *s, const struct rl_file *d)
{
	uint32_t a = inode_mode(&s->ii), b = inode_mode(&d->ii);
	if (S_ISDIR(a) || S_ISDIR(b))
		return ref_fail(fs, EISDIR, "%s: is a directory", S_ISDIR(a) ? s->path : d->path);
	if (!S_ISREG(a) || !S_ISREG(b))
		return ref_fail(fs, EINVAL, "%s: not a regular file", !S_ISREG(a) ? s->path : d->path);
	return 0;
}

int ref_clone_range(ref_fs *fs, const char *src, uint64_t soff, uint64_t len, const char *dst,
		    uint64_t doff)
{
	struct rl_file s = { .path = src }, d = { .path = dst };
	int r = vfs_begin(fs, 8, false);
	if (r || (r = vfs_resolve(fs, src, true, &s.ino)) || (r = rl_read(fs, &s)) ||
	    (r = open_dst(fs, &d)) || (r = both_regular(fs, &s, &d)) ||
	    (r = rl_verify_area(fs, &s, soff, len)) || (r = rl_verify_area(fs, &d, doff, len)) ||
	    (r = rl_flags_check(fs, &s, &d)))
		return vfs_end(fs, r);
	uint64_t size = LE64(s.ii.size);
	if (len == 0) { /* to the source's end */
		if (soff == size)
			return vfs_end(fs, 0);
		if (soff > size)
			return vfs_end(fs, ref_fail(fs, EINVAL, "%s: offset %llu is past its end (%llu)",
						    src, (unsigned long long)soff,
						    (unsigned long long)size));
		len = size - soff;
	}
	uint64_t blen;
	unsigned items;
	if ((r = rl_range_checks(fs, &s, soff, &d, doff, &len, &blen, false)) ||
	    (r = rl_items(fs, &s, soff, blen, &items)) || (r = vfs_reserve(fs, items, false)) ||
	    (r = vfs_killpriv(fs, &d.ino, items, false)))
		return vfs_end(fs, r);
	return vfs_end(fs, rl_remap(fs, &s, soff, &d, doff, len, blen, false));
}

int ref_clone(ref_fs *fs, const char *src, const char *dst)
{
	return ref_clone_range(fs, src, 0, 0, dst, 0);
}
