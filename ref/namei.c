/*
 * namei.c - operations on names: create, mkdir, symlink, link, unlink, rmdir
 * and rename (over an existing name, RENAME_NOREPLACE, RENAME_EXCHANGE),
 * with the checks and errnos of Linux's VFS and btrfs.
 */
#include "ref/vfs_int.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/stat.h>

#define FE_HEADER offsetof(struct btrfs_file_extent_item, disk_bytenr)
#define PATH_LIMIT 4096 /* PATH_MAX, with its NUL */

static bool is_subvol_entry(const struct ref_ino *dir, const struct ref_ino *target)
{
	return target->subvol != dir->subvol;
}

int vfs_new_name(ref_fs *fs, const char *path, struct vfs_name *n)
{
	int r = vfs_parent(fs, path, n);
	if (r)
		return r;
	if (n->kind != LAST_NORM)
		return ref_fail(fs, EEXIST, "%s: file exists", path);
	struct ref_ino existing;
	uint8_t type;
	r = vfs_lookup(fs, &n->dir, n->name, n->len, &existing, &type);
	if (r == 0)
		return ref_fail(fs, EEXIST, "%s: file exists", path);
	return r == -ENOENT ? 0 : r;
}

static int make_node(ref_fs *fs, const char *path, uint32_t mode, const char *target)
{
	struct vfs_name n;
	int r = vfs_begin(fs, 8, false);
	if (r || (r = vfs_new_name(fs, path, &n)))
		return vfs_end(fs, r);
	if (n.trailing_slash && !S_ISDIR(mode))
		return vfs_end(fs, ref_fail(fs, S_ISREG(mode) ? EISDIR : ENOENT,
					    "%s: a trailing slash names a directory", path));
	/* A set-group-ID directory passes its group on, and the bit to subdirectories. */
	struct btrfs_inode_item dii;
	if ((r = inode_read(fs, &n.dir, &dii)))
		return vfs_end(fs, r);
	bool sgid = inode_mode(&dii) & S_ISGID;
	if (sgid && S_ISDIR(mode))
		mode |= S_ISGID;
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	if ((r = inode_create(fs, n.dir.subvol, mode, &ino, &ii)))
		return vfs_end(fs, r);
	if (sgid) {
		ii.gid = dii.gid;
		if ((r = inode_write(fs, &ino, &ii)))
			return vfs_end(fs, r);
	}
	if (target) { /* a symlink's target: one inline extent */
		size_t len = strlen(target);
		struct rw_tree *t;
		uint8_t *buf = calloc(1, FE_HEADER + len);
		if (!buf)
			return vfs_end(fs, ref_fail(fs, ENOMEM, "out of memory"));
		struct btrfs_file_extent_item *fe = (void *)buf;
		fe->generation = htole64(fs->rw->transid);
		fe->ram_bytes = htole64(len);
		fe->type = BTRFS_FILE_EXTENT_INLINE;
		memcpy(buf + FE_HEADER, target, len);
		struct ref_key k = { ino.ino, BTRFS_EXTENT_DATA_KEY, 0 };
		if (!(r = rw_tree_get(fs, ino.subvol, &t)))
			r = bt_insert_data(fs, t, &k, buf, (uint32_t)(FE_HEADER + len));
		free(buf);
		ii.size = ii.nbytes = htole64(len);
		if (!r)
			r = inode_write(fs, &ino, &ii);
	}
	if (!r)
		r = dir_add(fs, &n.dir, n.name, n.len, &ino, mode_to_ft(mode));
	return vfs_end(fs, r);
}

int ref_create(ref_fs *fs, const char *path, uint32_t mode)
{
	return make_node(fs, path, S_IFREG | (mode & 07777), NULL);
}

int ref_mkdir(ref_fs *fs, const char *path, uint32_t mode)
{
	/* mkdir(2) keeps only the permission bits and the sticky bit. */
	return make_node(fs, path, S_IFDIR | (mode & (0777 | S_ISVTX)), NULL);
}

int ref_symlink(ref_fs *fs, const char *target, const char *path)
{
	size_t len = target ? strlen(target) : 0;
	if (len == 0)
		return ref_fail(fs, ENOENT, "a symlink needs a target");
	if (len >= PATH_LIMIT || len > fs->sectorsize - 1)
		return ref_fail(fs, ENAMETOOLONG, "symlink target too long");
	return make_node(fs, path, S_IFLNK | 0777, target);
}

int ref_link(ref_fs *fs, const char *oldpath, const char *newpath)
{
	struct ref_ino ino;
	struct vfs_name n;
	int r = vfs_begin(fs, 6, false);
	if (r || (r = vfs_resolve(fs, oldpath, false, &ino)))
		return vfs_end(fs, r);
	struct btrfs_inode_item ii;
	if ((r = inode_read(fs, &ino, &ii)))
		return vfs_end(fs, r);
	/* Linux's order: the new name first (EEXIST), then the inode (EPERM,
	 * EXDEV, EMLINK). */
	if ((r = vfs_new_name(fs, newpath, &n)))
		return vfs_end(fs, r);
	if (n.trailing_slash)
		return vfs_end(fs, ref_fail(fs, ENOENT, "%s: a trailing slash names a directory",
					    newpath));
	if (S_ISDIR(inode_mode(&ii)))
		return vfs_end(fs, ref_fail(fs, EPERM, "%s: hard links to directories are not allowed",
					    oldpath));
	if (n.dir.subvol != ino.subvol)
		return vfs_end(fs, ref_fail(fs, EXDEV, "links cannot cross subvolumes"));
	if (LE32(ii.nlink) >= VFS_LINK_MAX)
		return vfs_end(fs, ref_fail(fs, EMLINK, "%s: too many links", oldpath));
	if ((r = dir_add(fs, &n.dir, n.name, n.len, &ino, mode_to_ft(inode_mode(&ii)))))
		return vfs_end(fs, r);
	if ((r = inode_read(fs, &ino, &ii))) /* dir_add changed its back references */
		return vfs_end(fs, r);
	ii.nlink = htole32(LE32(ii.nlink) + 1);
	inode_touch(fs, &ii, false, true);
	return vfs_end(fs, inode_write(fs, &ino, &ii));
}

/* One link less for ino; the inode goes with its last one. */
static int drop_link(ref_fs *fs, const struct ref_ino *ino)
{
	struct btrfs_inode_item ii;
	int r = inode_read(fs, ino, &ii);
	if (r)
		return r;
	uint32_t nlink = LE32(ii.nlink);
	if (S_ISDIR(inode_mode(&ii)) || nlink <= 1)
		return inode_drop(fs, ino);
	ii.nlink = htole32(nlink - 1);
	inode_touch(fs, &ii, false, true);
	return inode_write(fs, ino, &ii);
}

/* The entry a path names for removal, without following a final symlink. */
static int victim(ref_fs *fs, const char *path, struct vfs_name *n, struct ref_ino *ino,
		  uint8_t *type)
{
	int r = vfs_parent(fs, path, n);
	if (r || n->kind != LAST_NORM)
		return r;
	r = vfs_lookup(fs, &n->dir, n->name, n->len, ino, type);
	return r == -ENOENT ? ref_fail(fs, ENOENT, "%s: no such file or directory", path) : r;
}

int ref_unlink(ref_fs *fs, const char *path)
{
	struct vfs_name n;
	struct ref_ino ino;
	uint8_t type;
	int r = vfs_begin(fs, 8, true);
	if (r || (r = victim(fs, path, &n, &ino, &type)))
		return vfs_end(fs, r);
	if (n.kind != LAST_NORM || type == BTRFS_FT_DIR)
		return vfs_end(fs, ref_fail(fs, EISDIR, "%s: is a directory", path));
	if (n.trailing_slash)
		return vfs_end(fs, ref_fail(fs, ENOTDIR, "%s: not a directory", path));
	if ((r = dir_remove(fs, &n.dir, n.name, n.len, &ino)))
		return vfs_end(fs, r);
	return vfs_end(fs, drop_link(fs, &ino));
}

int ref_rmdir(ref_fs *fs, const char *path)
{
	struct vfs_name n;
	struct ref_ino ino;
	uint8_t type;
	int r = vfs_begin(fs, 8, true);
	if (r || (r = victim(fs, path, &n, &ino, &type)))
		return vfs_end(fs, r);
	if (n.kind == LAST_ROOT)
		return vfs_end(fs, ref_fail(fs, EBUSY, "%s: the root is busy", path));
	if (n.kind == LAST_DOT)
		return vfs_end(fs, ref_fail(fs, EINVAL, "%s: cannot remove '.'", path));
	if (n.kind == LAST_DOTDOT)
		return vfs_end(fs, ref_fail(fs, ENOTEMPTY, "%s: directory not empty", path));
	if (type != BTRFS_FT_DIR)
		return vfs_end(fs, ref_fail(fs, ENOTDIR, "%s: not a directory", path));
	if (is_subvol_entry(&n.dir, &ino))
		return vfs_end(fs, ref_fail(fs, EPERM, "%s: a subvolume (btrsim subvolume delete removes it)",
					    path));
	if (ino.ino == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID) /* a snapshot's stand-in for a subvolume */
		return vfs_end(fs, dir_remove(fs, &n.dir, n.name, n.len, &ino));
	if ((r = dir_is_empty(fs, &ino)) <= 0)
		return vfs_end(fs, r < 0 ? r : ref_fail(fs, ENOTEMPTY, "%s: directory not empty", path));
	if ((r = dir_remove(fs, &n.dir, n.name, n.len, &ino)))
		return vfs_end(fs, r);
	return vfs_end(fs, inode_drop(fs, &ino));
}

/* Whether dir is inside (or is) the directory `anc`. */
static int inside(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *anc)
{
	struct ref_ino cur = *dir;
	for (int depth = 0; depth < 100000; depth++) {
		if (cur.subvol == anc->subvol && cur.ino == anc->ino)
			return 1;
		if (cur.ino == BTRFS_FIRST_FREE_OBJECTID)
			return 0; /* a subvolume's root: renames do not cross it */
		struct ref_ino up;
		int r = vfs_dotdot(fs, &cur, &up);
		if (r)
			return r;
		cur = up;
	}
	return ref_fail(fs, ELOOP, "directory parents form a loop");
}

static int touch_ctime(ref_fs *fs, const struct ref_ino *ino)
{
	struct btrfs_inode_item ii;
	int r = inode_read(fs, ino, &ii);
	if (r)
		return r;
	inode_touch(fs, &ii, false, true);
	return inode_write(fs, ino, &ii);
}

int ref_rename(ref_fs *fs, const char *oldpath, const char *newpath, unsigned flags)
{
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE) ||
	    (flags & RENAME_NOREPLACE && flags & RENAME_EXCHANGE))
		return ref_fail(fs, EINVAL, "invalid rename flags");
	struct vfs_name on, nn;
	struct ref_ino oi, ni;
	uint8_t ot, nt = 0;
	int r = vfs_begin(fs, 16, false);
	if (r || (r = vfs_parent(fs, oldpath, &on)))
		return vfs_end(fs, r);
	if (on.kind != LAST_NORM)
		return vfs_end(fs, ref_fail(fs, EBUSY, "%s: cannot rename", oldpath));
	if ((r = vfs_lookup(fs, &on.dir, on.name, on.len, &oi, &ot)))
		return vfs_end(fs, r == -ENOENT ? ref_fail(fs, ENOENT, "%s: no such file or directory",
							   oldpath)
						: r);
	if ((r = vfs_parent(fs, newpath, &nn)))
		return vfs_end(fs, r);
	if (nn.kind != LAST_NORM)
		return vfs_end(fs, ref_fail(fs, EBUSY, "%s: cannot rename onto it", newpath));
	if ((on.trailing_slash || nn.trailing_slash) && ot != BTRFS_FT_DIR)
		return vfs_end(fs, ref_fail(fs, ENOTDIR, "%s: not a directory", oldpath));
	r = vfs_lookup(fs, &nn.dir, nn.name, nn.len, &ni, &nt);
	bool exists = r == 0;
	if (r && r != -ENOENT)
		return vfs_end(fs, r);
	if (on.dir.subvol != nn.dir.subvol)
		return vfs_end(fs, ref_fail(fs, EXDEV, "renames cannot cross subvolumes"));
	if (is_subvol_entry(&on.dir, &oi) || (exists && is_subvol_entry(&nn.dir, &ni)))
		return vfs_end(fs, ref_fail(fs, EPERM, "renaming subvolumes is not implemented"));
	if (flags & RENAME_EXCHANGE && !exists)
		return vfs_end(fs, ref_fail(fs, ENOENT, "%s: no such file or directory", newpath));
	if (flags & RENAME_NOREPLACE && exists)
		return vfs_end(fs, ref_fail(fs, EEXIST, "%s: file exists", newpath));
	if (exists && ni.ino == oi.ino)
		return vfs_end(fs, 0); /* the same file: nothing to do, as POSIX says */
	if (ot == BTRFS_FT_DIR && (r = inside(fs, &nn.dir, &oi)) != 0)
		return vfs_end(fs, r < 0 ? r : ref_fail(fs, EINVAL, "cannot move a directory into itself"));
	if (flags & RENAME_EXCHANGE && nt == BTRFS_FT_DIR && (r = inside(fs, &on.dir, &ni)) != 0)
		return vfs_end(fs, r < 0 ? r : ref_fail(fs, EINVAL, "cannot move a directory into itself"));
	if (exists && !(flags & RENAME_EXCHANGE)) {
		if (ot == BTRFS_FT_DIR && nt != BTRFS_FT_DIR)
			return vfs_end(fs, ref_fail(fs, ENOTDIR, "%s: not a directory", newpath));
		if (ot != BTRFS_FT_DIR && nt == BTRFS_FT_DIR)
			return vfs_end(fs, ref_fail(fs, EISDIR, "%s: is a directory", newpath));
		if (nt == BTRFS_FT_DIR && (r = dir_is_empty(fs, &ni)) <= 0)
			return vfs_end(fs, r < 0 ? r : ref_fail(fs, ENOTEMPTY, "%s: directory not empty",
								newpath));
	}
	/* Names go first, then come back in their new places. */
	if (exists && (r = dir_remove(fs, &nn.dir, nn.name, nn.len, &ni)))
		return vfs_end(fs, r);
	if ((r = dir_remove(fs, &on.dir, on.name, on.len, &oi)))
		return vfs_end(fs, r);
	if ((r = dir_add(fs, &nn.dir, nn.name, nn.len, &oi, ot)))
		return vfs_end(fs, r);
	if (exists && flags & RENAME_EXCHANGE)
		r = dir_add(fs, &on.dir, on.name, on.len, &ni, nt);
	else if (exists)
		r = drop_link(fs, &ni);
	if (!r)
		r = touch_ctime(fs, &oi);
	if (!r && exists && flags & RENAME_EXCHANGE)
		r = touch_ctime(fs, &ni);
	return vfs_end(fs, r);
}
