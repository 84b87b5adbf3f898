/*
 * fileops.c - the data calls of the API by path: write, truncate, fallocate,
 * fsync and fdatasync, with Linux's argument checks (EISDIR, EINVAL, EFBIG,
 * EOPNOTSUPP) and space reserved before anything changes; the first three
 * remove the file's capabilities (vfs_killpriv).
 */
#include "ref/log/log_write.h"
#include "ref/qgroup/qgroup.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <linux/falloc.h>
#include <sys/stat.h>

/* The regular file a path names (following symlinks). */
static int regular(ref_fs *fs, const char *path, int notreg, struct ref_ino *ino)
{
	int r = vfs_resolve(fs, path, true, ino);
	if (r)
		return r;
	struct btrfs_inode_item ii;
	if ((r = inode_read(fs, ino, &ii)))
		return r;
	if (S_ISDIR(inode_mode(&ii)))
		return ref_fail(fs, EISDIR, "%s: is a directory", path);
	if (!S_ISREG(inode_mode(&ii)))
		return ref_fail(fs, notreg, "%s: not a regular file", path);
	return 0;
}

/* Metadata items a data change of len bytes may touch. */
static unsigned data_items(const ref_fs *fs, uint64_t len)
{
	uint64_t extents = len / (UINT64_C(128) << 20) + 2;
	uint64_t csum_leaves = len / fs->sectorsize * fs->csum_size / (fs->nodesize / 2) + 1;
	return (unsigned)(8 + 2 * extents + csum_leaves);
}

/* The bytes of the sectors [off, off + len) touches: what a write or an
 * allocation of that range may add to its subvolume's quota group. */
static uint64_t sector_span(const ref_fs *fs, uint64_t off, uint64_t len)
{
	if (!len)
		return 0;
	uint64_t s = fs->sectorsize, start = off / s * s;
	uint64_t end = off + len > UINT64_MAX - s ? UINT64_MAX / s * s : (off + len + s - 1) / s * s;
	return end - start;
}

ssize_t ref_write(ref_fs *fs, const char *path, const void *buf, size_t len, uint64_t off)
{
	struct ref_ino ino;
	unsigned items = data_items(fs, len);
	int r = vfs_begin(fs, items, false);
	/* The open for writing: EISDIR, then EROFS (may_open, btrfs_permission) */
	if (r || (r = regular(fs, path, EINVAL, &ino)) || (r = vfs_writable(fs, &ino)))
		return vfs_end(fs, r);
	/* As rw_verify_area: an end past the largest loff_t is EINVAL (the
	 * maximum file size is that same value, so EFBIG cannot happen). */
	if (off > VFS_MAX_FILE_SIZE || len > VFS_MAX_FILE_SIZE - off)
		return vfs_end(fs, ref_fail(fs, EINVAL, "the write would pass the largest file offset"));
	if ((r = alloc_reserve_data(fs, len + 2 * (uint64_t)fs->sectorsize)) ||
	    (r = qg_reserve(fs, ino.subvol, sector_span(fs, off, len))))
		return vfs_end(fs, r);
	/* btrfs_buffered_write: a write of no bytes ends before file_remove_privs. */
	if (len && (r = vfs_killpriv(fs, &ino, items, false)))
		return vfs_end(fs, r);
	r = file_write(fs, &ino, buf, len, off);
	r = vfs_end(fs, r);
	return r ? r : (ssize_t)len;
}

int ref_truncate(ref_fs *fs, const char *path, uint64_t size)
{
	struct ref_ino ino;
	if (size > VFS_MAX_FILE_SIZE) /* a negative length: truncate(2) checks it first */
		return ref_fail(fs, EINVAL, "the size is past the largest file offset");
	int r = vfs_begin(fs, 12, true);
	/* vfs_truncate: EISDIR, EINVAL, then EROFS (btrfs_permission) */
	if (r || (r = regular(fs, path, EINVAL, &ino)) || (r = vfs_writable(fs, &ino)))
		return vfs_end(fs, r);
	if ((r = alloc_reserve_data(fs, 2 * (uint64_t)fs->sectorsize)))
		return vfs_end(fs, r);
	/* do_truncate: ATTR_KILL_PRIV, whatever the size */
	if ((r = vfs_killpriv(fs, &ino, 12, true)))
		return vfs_end(fs, r);
	return vfs_end(fs, file_truncate(fs, &ino, size));
}

/* fallocate's checks in vfs_fallocate's order, after the file is open
 * (so a missing path, a directory or a read-only subvolume is reported
 * first). */
static int falloc_args(ref_fs *fs, const char *path, int mode, uint64_t off, uint64_t len,
		       struct ref_ino *ino)
{
	int r = vfs_resolve(fs, path, true, ino);
	struct btrfs_inode_item ii;
	if (r || (r = inode_read(fs, ino, &ii)))
		return r;
	if (S_ISDIR(inode_mode(&ii)))
		return ref_fail(fs, EISDIR, "%s: is a directory", path);
	if ((r = vfs_writable(fs, ino))) /* the open for writing, as for write */
		return r;
	if (len == 0 || off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX)
		return ref_fail(fs, EINVAL, "invalid fallocate range");
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return ref_fail(fs, EOPNOTSUPP, "unsupported fallocate mode 0x%x", mode);
	if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
		return ref_fail(fs, EOPNOTSUPP, "punch-hole and zero-range exclude each other");
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return ref_fail(fs, EOPNOTSUPP, "punching a hole needs keep-size");
	if (!S_ISREG(inode_mode(&ii)))
		return ref_fail(fs, ENODEV, "%s: not a regular file", path);
	if (len > VFS_MAX_FILE_SIZE - off)
		return ref_fail(fs, EFBIG, "past the maximum file size");
	return 0;
}

int ref_fallocate(ref_fs *fs, const char *path, int mode, uint64_t off, uint64_t len)
{
	struct ref_ino ino;
	bool punch = mode & FALLOC_FL_PUNCH_HOLE;
	unsigned items = data_items(fs, punch ? 0 : len);
	int r = vfs_begin(fs, items, punch);
	if (r || (r = falloc_args(fs, path, mode, off, len, &ino)))
		return vfs_end(fs, r);
	if ((r = alloc_reserve_data(fs, (punch ? 0 : len) + 2 * (uint64_t)fs->sectorsize)) ||
	    (!punch && (r = qg_reserve(fs, ino.subvol, sector_span(fs, off, len)))))
		return vfs_end(fs, r);
	/* btrfs_fallocate, btrfs_punch_hole: file_modified.  (The kernel skips
	 * it when the whole range to punch lies in one hole of its extent-map
	 * cache; ref, like the oracle's model, always removes them.) */
	if ((r = vfs_killpriv(fs, &ino, items, punch)))
		return vfs_end(fs, r);
	return vfs_end(fs, file_fallocate(fs, &ino, mode, off, len));
}

int ref_fsync(ref_fs *fs, const char *path)
{
	struct ref_ino ino;
	int r = rw_check_writable(fs);
	if (r || (r = vfs_resolve(fs, path, true, &ino)))
		return r;
	return log_fsync(fs, &ino);
}

int ref_fdatasync(ref_fs *fs, const char *path)
{
	return ref_fsync(fs, path);
}
