/*
 * namei.c - operations on names: create, mkdir, mknod, symlink, link, unlink, rmdir
 * and rename (over an existing name, RENAME_NOREPLACE, RENAME_EXCHANGE),
 * with the checks and errnos of Linux's VFS and btrfs.
 */
#include "ref/log/log_write.h"
#include "ref/compress/compress_int.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stddef.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/stat.h>

#define FE_HEADER offsetof(struct btrfs_file_extent_item, disk_bytenr)
#define PATH_LIMIT 4096 /* PATH_MAX, with its NUL */

/* Whether target, an entry of dir, is a subvolume's root (a stand-in is not:
 * it lies in dir's subvolume). */
static bool is_subvol_entry(const struct ref_ino *dir, const struct ref_ino *target)
{
	return target->subvol != dir->subvol;
}

/* A new name in a snapshot's stand-in for a subvolume: its inode operations
 * are simple_dir_inode_operations, with no create (the open gives EACCES)
 * and no mkdir, symlink, link or rename (EPERM). */
static int no_names_in_standin(ref_fs *fs, const struct ref_ino *dir, int err, const char *path)
{
	return vfs_is_standin(dir) ? ref_fail(fs, err, "%s: its directory is a snapshot's stand-in "
					     "for a subvolume, which takes no names", path)
				   : 0;
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

/* A new inode at path: mode (its type included), a symlink's target, a
 * device's number (the kernel's i_rdev, major << 20 | minor). */
static int make_node(ref_fs *fs, const char *path, uint32_t mode, const char *target,
		     uint64_t rdev)
{
	struct vfs_name n;
	int r = vfs_begin(fs, 10, false);
	if (r || (r = vfs_new_name(fs, path, &n)))
		return vfs_end(fs, r);
	if (n.trailing_slash && !S_ISDIR(mode))
		return vfs_end(fs, ref_fail(fs, S_ISREG(mode) ? EISDIR : ENOENT,
					    "%s: a trailing slash names a directory", path));
	/* may_create (EROFS), then the directory's own operations */
	if ((r = vfs_writable(fs, &n.dir)) ||
	    (r = no_names_in_standin(fs, &n.dir, S_ISREG(mode) ? EACCES : EPERM, path)))
		return vfs_end(fs, r);
	/* A set-group-ID directory passes its group on, and the bit to subdirectories. */
	struct btrfs_inode_item dii;
	if ((r = inode_read(fs, &n.dir, &dii)))
		return vfs_end(fs, r);
	bool sgid = inode_mode(&dii) & S_ISGID;
	if (sgid && S_ISDIR(mode))
		mode |= S_ISGID;
	/* The directory's default ACL masks the mode (posix_acl_create). */
	struct acl_inherited acl;
	if ((r = acl_inherit(fs, &n.dir, &mode, &acl)))
		return vfs_end(fs, r);
	if (!acl.masked && !S_ISLNK(mode))
		mode &= ~(fs->rw->umask & 0777);
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	if ((r = inode_create(fs, n.dir.subvol, mode, &ino, &ii))) {
		acl_inherited_free(&acl);
		return vfs_end(fs, r);
	}
	ii.uid = htole32(fs->rw->uid);
	ii.gid = sgid ? dii.gid : htole32(fs->rw->gid);
	ii.rdev = htole64(rdev);
	/* the directory's c, m and C flags and its compression property */
	r = cw_inherit(fs, &n.dir, &dii, &ino, &ii);
	if (r || (r = acl_inherit_store(fs, &ino, &acl))) {
		acl_inherited_free(&acl);
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

void ref_creds(ref_fs *fs, uint32_t uid, uint32_t gid)
{
	fs->rw->uid = uid;
	fs->rw->gid = gid;
}

uint32_t ref_umask(ref_fs *fs, uint32_t mask)
{
	if (!fs->rw)
		return 0;
	uint32_t old = fs->rw->umask;
	fs->rw->umask = mask & 0777;
	return old;
}

int ref_create(ref_fs *fs, const char *path, uint32_t mode)
{
	return make_node(fs, path, S_IFREG | (mode & 07777), NULL, 0);
}

int ref_mkdir(ref_fs *fs, const char *path, uint32_t mode)
{
	/* mkdir(2) keeps only the permission bits and the sticky bit. */
	return make_node(fs, path, S_IFDIR | (mode & (0777 | S_ISVTX)), NULL, 0);
}

int ref_mknod(ref_fs *fs, const char *path, uint32_t mode, uint64_t dev)
{
	/* may_mknod: a type of 0 is a regular file; a directory EPERM */
	uint32_t type = mode & S_IFMT;
	if (type == S_IFDIR)
		return ref_fail(fs, EPERM, "%s: mknod makes no directories", path);
	if (type && type != S_IFREG && type != S_IFCHR && type != S_IFBLK && type != S_IFIFO &&
	    type != S_IFSOCK)
		return ref_fail(fs, EINVAL, "%s: file type 0%o", path, type);
	/* The system call's device number is 32 bits (glibc refuses more);
	 * new_decode_dev, then the kernel's MKDEV as btrfs stores it. */
	if (dev >> 32)
		return ref_fail(fs, EINVAL, "%s: device number %#llx past 32 bits", path,
				(unsigned long long)dev);
	uint64_t major = (dev & 0xfff00) >> 8, minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
	uint64_t rdev = type == S_IFCHR || type == S_IFBLK ? major << 20 | minor : 0;
	return make_node(fs, path, (type ? type : S_IFREG) | (mode & 07777), NULL, rdev);
}

int ref_symlink(ref_fs *fs, const char *target, const char *path)
{
	size_t len = target ? strlen(target) : 0;
	if (len == 0)
		return ref_fail(fs, ENOENT, "a symlink needs a target");
	/* btrfs_symlink: the target is one inline extent, so at most
	 * BTRFS_MAX_INLINE_DATA_SIZE (a leaf's room for one item less the
	 * file extent item's header: 3949 bytes with 4 KiB nodes) */
	size_t max_inline = leaf_space(fs->nodesize) - ITEM_SIZE -
			    offsetof(struct btrfs_file_extent_item, disk_bytenr);
	if (len >= PATH_LIMIT || len > fs->sectorsize - 1 || len > max_inline)
		return ref_fail(fs, ENAMETOOLONG, "symlink target too long (%zu bytes)", len);
	return make_node(fs, path, S_IFLNK | 0777, target, 0);
}

int ref_link(ref_fs *fs, const char *oldpath, const char *newpath)
{
	const struct ref_ino *at = fs->at_set ? &fs->at : NULL;
	return ref_linkat(fs, at, oldpath, at, newpath);
}

/* vfs_resolve and vfs_new_name from a base (restored after). */
static int resolve_from(ref_fs *fs, const struct ref_ino *base, const char *path,
			struct ref_ino *out)
{
	struct ref_ino at = fs->at;
	bool set = fs->at_set;
	ref_chdir(fs, base);
	int r = vfs_resolve(fs, path, false, out);
	fs->at = at, fs->at_set = set;
	return r;
}

static int new_name_from(ref_fs *fs, const struct ref_ino *base, const char *path,
			 struct vfs_name *n)
{
	struct ref_ino at = fs->at;
	bool set = fs->at_set;
	ref_chdir(fs, base);
	int r = vfs_new_name(fs, path, n);
	fs->at = at, fs->at_set = set;
	return r;
}

int ref_linkat(ref_fs *fs, const struct ref_ino *olddir, const char *oldpath,
	       const struct ref_ino *newdir, const char *newpath)
{
	struct ref_ino ino;
	struct vfs_name n;
	int r = vfs_begin(fs, 6, false);
	if (r || (r = resolve_from(fs, olddir, oldpath, &ino)))
		return vfs_end(fs, r);
	struct btrfs_inode_item ii;
	if ((r = inode_read(fs, &ino, &ii)))
		return vfs_end(fs, r);
	/* Linux's order: the new name first (EEXIST), its directory (EROFS from
	 * may_create, a stand-in's EPERM), then the inode (EPERM, EXDEV, EMLINK;
	 * ENOENT for a file unlinked while open). */
	if ((r = new_name_from(fs, newdir, newpath, &n)))
		return vfs_end(fs, r);
	if (n.trailing_slash)
		return vfs_end(fs, ref_fail(fs, ENOENT, "%s: a trailing slash names a directory",
					    newpath));
	if ((r = vfs_writable(fs, &n.dir)) || (r = no_names_in_standin(fs, &n.dir, EPERM, newpath)))
		return vfs_end(fs, r);
	if (S_ISDIR(inode_mode(&ii)))
		return vfs_end(fs, ref_fail(fs, EPERM, "%s: hard links to directories are not allowed",
					    oldpath));
	if (n.dir.subvol != ino.subvol)
		return vfs_end(fs, ref_fail(fs, EXDEV, "links cannot cross subvolumes"));
	if (LE32(ii.nlink) == 0 && !vfs_is_standin(&ino))
		return vfs_end(fs, ref_fail(fs, ENOENT, "the file has no name left to link to"));
	if (LE32(ii.nlink) >= VFS_LINK_MAX)
		return vfs_end(fs, ref_fail(fs, EMLINK, "%s: too many links", oldpath));
	if ((r = dir_add(fs, &n.dir, n.name, n.len, &ino, mode_to_ft(inode_mode(&ii)))))
		return vfs_end(fs, r);
	log_note_new_name(fs, &ino, mode_to_ft(inode_mode(&ii)), NULL, 0);
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
	if (vfs_is_standin(ino)) /* nothing but its entry, which is gone */
		return 0;
	if (!S_ISDIR(inode_mode(&ii)) && nlink <= 1 && vfs_held(fs, ino))
		return held_orphan(fs, ino, &ii); /* open: it goes at the last close */
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
	/* do_unlinkat's checks, then may_delete's: EROFS before EISDIR */
	if (n.kind != LAST_NORM || (n.trailing_slash && type == BTRFS_FT_DIR))
		return vfs_end(fs, ref_fail(fs, EISDIR, "%s: is a directory", path));
	if (n.trailing_slash)
		return vfs_end(fs, ref_fail(fs, ENOTDIR, "%s: not a directory", path));
	if ((r = vfs_writable(fs, &n.dir)))
		return vfs_end(fs, r);
	if (type == BTRFS_FT_DIR)
		return vfs_end(fs, ref_fail(fs, EISDIR, "%s: is a directory", path));
	log_note_unlink(fs, &n.dir, &ino, false);
	uint64_t index;
	if ((r = dir_remove_at(fs, &n.dir, n.name, n.len, &ino, &index)))
		return vfs_end(fs, r);
	log_note_removed(fs, &n.dir, n.name, n.len, index, &ino);
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
	/* may_delete: EROFS, then ENOTDIR; btrfs_rmdir: ENOTEMPTY */
	if ((r = vfs_writable(fs, &n.dir)))
		return vfs_end(fs, r);
	if (type != BTRFS_FT_DIR)
		return vfs_end(fs, ref_fail(fs, ENOTDIR, "%s: not a directory", path));
	if (vfs_is_standin(&ino)) { /* btrfs_unlink_subvol: only the entry goes */
		log_note_dir_changed(fs, &n.dir);
		return vfs_end(fs, dir_remove(fs, &n.dir, n.name, n.len, &ino));
	}
	if ((r = dir_is_empty(fs, &ino)) <= 0)
		return vfs_end(fs, r < 0 ? r : ref_fail(fs, ENOTEMPTY, "%s: directory not empty", path));
	if (is_subvol_entry(&n.dir, &ino)) {
		/* An empty subvolume goes as btrfs_delete_subvolume deletes it (Linux
		 * 4.18 on; EPERM for the default subvolume); nothing changed yet. */
		if ((r = vfs_end(fs, 0)))
			return r;
		return ref_subvol_delete(fs, path);
	}
	log_note_rmdir(fs, &n.dir, &ino);
	uint64_t index;
	if ((r = dir_remove_at(fs, &n.dir, n.name, n.len, &ino, &index)))
		return vfs_end(fs, r);
	log_note_removed(fs, &n.dir, n.name, n.len, index, &ino);
	return vfs_end(fs, inode_drop(fs, &ino));
}

static bool same_ino(const struct ref_ino *a, const struct ref_ino *b)
{
	return a->subvol == b->subvol && a->ino == b->ino;
}

/* Whether two names are the same entry of the same directory. */
static bool same_entry(const struct vfs_name *a, const struct vfs_name *b)
{
	return same_ino(&a->dir, &b->dir) && a->len == b->len && !memcmp(a->name, b->name, a->len);
}

/* Whether dir is inside (or is) the directory `anc`, across subvolumes (a
 * subvolume's root moves too).  A snapshot's stand-in has no ".." here: the
 * walk ends there (callers start at the directory holding it). */
static int inside(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *anc)
{
	if (vfs_is_standin(anc))
		return 0; /* it holds nothing */
	struct ref_ino cur = *dir;
	for (int depth = 0; depth < 100000; depth++) {
		if (same_ino(&cur, anc))
			return 1;
		if (vfs_is_standin(&cur) ||
		    (cur.subvol == BTRFS_FS_TREE_OBJECTID && cur.ino == BTRFS_FIRST_FREE_OBJECTID))
			return 0; /* the top level's root, or a stand-in */
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

/* A rename: its arguments, the two names and what they name. */
struct rn {
	const char *oldpath, *newpath;
	const struct ref_ino *obase, *nbase; /* where relative paths start (ref_renameat) */
	unsigned flags;
	struct vfs_name on, nn;
	struct ref_ino oi, ni;
	uint8_t ot, nt;
	bool exists;  /* NEW names something (ni, nt) */
	bool osub, nsub; /* OLD, NEW name a subvolume's root */
};

/* Both names looked up, in do_renameat2's order: both directories, the
 * kinds of the last components (EBUSY; EEXIST with NOREPLACE), OLD
 * (ENOENT), NEW, then EEXIST, ENOENT for an exchange, and trailing slashes
 * on what is not a directory (ENOTDIR). */
static int rename_lookup(ref_fs *fs, struct rn *a)
{
	int r = vfs_parent_at(fs, a->obase, a->oldpath, &a->on);
	if (r || (r = vfs_parent_at(fs, a->nbase, a->newpath, &a->nn)))
		return r;
	bool exchange = a->flags & RENAME_EXCHANGE;
	if (a->on.kind != LAST_NORM)
		return ref_fail(fs, EBUSY, "%s: cannot rename", a->oldpath);
	if (a->nn.kind != LAST_NORM)
		return ref_fail(fs, a->flags & RENAME_NOREPLACE ? EEXIST : EBUSY,
				"%s: cannot rename onto it", a->newpath);
	if ((r = vfs_lookup(fs, &a->on.dir, a->on.name, a->on.len, &a->oi, &a->ot)))
		return r == -ENOENT ? ref_fail(fs, ENOENT, "%s: no such file or directory", a->oldpath)
				    : r;
	r = vfs_lookup(fs, &a->nn.dir, a->nn.name, a->nn.len, &a->ni, &a->nt);
	if (r && r != -ENOENT)
		return r;
	a->exists = r == 0;
	if (a->flags & RENAME_NOREPLACE && a->exists)
		return ref_fail(fs, EEXIST, "%s: file exists", a->newpath);
	if (exchange && !a->exists)
		return ref_fail(fs, ENOENT, "%s: no such file or directory", a->newpath);
	if (exchange && a->nt != BTRFS_FT_DIR && a->nn.trailing_slash)
		return ref_fail(fs, ENOTDIR, "%s: not a directory", a->newpath);
	if (a->ot != BTRFS_FT_DIR && (a->on.trailing_slash || (!exchange && a->nn.trailing_slash)))
		return ref_fail(fs, ENOTDIR, "%s: not a directory", a->oldpath);
	a->osub = is_subvol_entry(&a->on.dir, &a->oi);
	a->nsub = a->exists && is_subvol_entry(&a->nn.dir, &a->ni);
	return 0;
}

/* Whether OLD and NEW are one object (nothing to do).  Every stand-in of a
 * subvolume is inode 2 in ref, but each is its own inode in Linux. */
static bool rename_same(const struct rn *a)
{
	if (!a->exists || !same_ino(&a->oi, &a->ni))
		return false;
	return !vfs_is_standin(&a->oi) || same_entry(&a->on, &a->nn);
}

/* Whether NEW's directory is OLD or inside it: the walk up starts at the
 * directory itself, or for a stand-in (which may be OLD's entry itself) at
 * the directory holding it (NEW's path less its last name). */
static int new_dir_inside_old(ref_fs *fs, const struct rn *a)
{
	if (!vfs_is_standin(&a->nn.dir))
		return inside(fs, &a->nn.dir, &a->oi);
	/* A relative NEW of one name in a stand-in given as the base: which
	 * entry holds the stand-in is not known; btrfs_rename's EPERM for a
	 * name in a stand-in follows (rename_btrfs_checks). */
	if (a->newpath[0] != '/' && !strchr(a->newpath, '/'))
		return 0;
	char *p = strdup(a->newpath);
	if (!p)
		return ref_fail(fs, ENOMEM, "out of memory");
	size_t len = strlen(p);
	while (len > 1 && p[len - 1] == '/') /* NEW's trailing slashes, its name, the slash */
		len--;
	while (len > 1 && p[len - 1] != '/')
		len--;
	p[len] = '\0';
	struct vfs_name n;
	int r = vfs_parent_at(fs, a->nbase, p, &n);
	if (!r && n.kind == LAST_NORM && vfs_is_standin(&a->oi)) /* the same entry? */
		r = same_entry(&n, &a->on);
	else if (!r && n.kind == LAST_NORM)
		r = inside(fs, &n.dir, &a->oi);
	free(p); /* (n.name points into it) */
	return r;
}

/* The namespace checks of do_renameat2: a directory moved below itself
 * (EINVAL) or over its own ancestor (ENOTEMPTY).  1: OLD and NEW are one
 * object, nothing to do. */
static int rename_vfs_checks(ref_fs *fs, const struct rn *a)
{
	bool exchange = a->flags & RENAME_EXCHANGE;
	if (rename_same(a))
		return 1; /* the same file: nothing to do, as POSIX says */
	int r = a->ot == BTRFS_FT_DIR ? new_dir_inside_old(fs, a) : 0;
	if (r > 0)
		r = ref_fail(fs, EINVAL, "cannot move a directory into itself");
	if (!r && a->exists && a->nt == BTRFS_FT_DIR && (r = inside(fs, &a->on.dir, &a->ni)) > 0)
		r = exchange ? ref_fail(fs, EINVAL, "cannot move a directory into itself")
			     : ref_fail(fs, ENOTEMPTY, "%s: an ancestor of %s", a->newpath, a->oldpath);
	return r;
}

/* vfs_rename's permission and type checks: EROFS (may_delete, may_create,
 * and a directory moved to another parent: its ".." changes), ENOTDIR,
 * EISDIR. */
static int rename_perm_checks(ref_fs *fs, const struct rn *a)
{
	bool exchange = a->flags & RENAME_EXCHANGE;
	int r;
	if ((r = vfs_writable(fs, &a->on.dir)) || (r = vfs_writable(fs, &a->nn.dir)))
		return r;
	if (a->exists && !exchange && a->ot == BTRFS_FT_DIR && a->nt != BTRFS_FT_DIR)
		return ref_fail(fs, ENOTDIR, "%s: not a directory", a->newpath);
	if (a->exists && !exchange && a->ot != BTRFS_FT_DIR && a->nt == BTRFS_FT_DIR)
		return ref_fail(fs, EISDIR, "%s: is a directory", a->newpath);
	if (same_ino(&a->on.dir, &a->nn.dir))
		return 0;
	if (a->ot == BTRFS_FT_DIR && (r = vfs_writable(fs, &a->oi)))
		return r;
	return exchange && a->nt == BTRFS_FT_DIR ? vfs_writable(fs, &a->ni) : 0;
}

/* btrfs_rename's and btrfs_rename_exchange's own checks: stand-ins, the
 * subvolume boundary (EXDEV: only a subvolume's root crosses it), nothing
 * over a subvolume or a non-empty directory (ENOTEMPTY). */
static int rename_btrfs_checks(ref_fs *fs, const struct rn *a)
{
	bool exchange = a->flags & RENAME_EXCHANGE;
	int r = no_names_in_standin(fs, &a->nn.dir, EPERM, a->newpath);
	if (r)
		return r;
	if (a->on.dir.subvol != a->nn.dir.subvol && (!a->osub || (exchange && !a->nsub)))
		return ref_fail(fs, EXDEV, "only a subvolume's root moves to another subvolume");
	/* Linux 6.18 goes on with the exchange of a stand-in, fails on its
	 * missing inode reference (ENOENT) and aborts the transaction; ref
	 * gives the errno and changes nothing. */
	if (exchange && (vfs_is_standin(&a->oi) || vfs_is_standin(&a->ni)))
		return ref_fail(fs, ENOENT, "a snapshot's stand-in for a subvolume cannot be exchanged");
	if (exchange)
		return 0;
	if (vfs_is_standin(&a->oi))
		return ref_fail(fs, ENOTEMPTY, "%s: a snapshot's stand-in for a subvolume does not move",
				a->oldpath);
	if (a->nsub)
		return ref_fail(fs, ENOTEMPTY, "%s: a subvolume cannot be renamed over", a->newpath);
	if (a->exists && a->nt == BTRFS_FT_DIR && (r = dir_is_empty(fs, &a->ni)) <= 0)
		return r < 0 ? r : ref_fail(fs, ENOTEMPTY, "%s: directory not empty", a->newpath);
	return 0;
}

/* A moved object's ctime, but a subvolume's root's (btrfs_rename leaves
 * that inode, which may be in a read-only subvolume, as it is). */
static int touch_moved(ref_fs *fs, const struct ref_ino *ino, bool subvol_root)
{
	return subvol_root ? 0 : touch_ctime(fs, ino);
}

/* What the fsync log must know of a rename before it (log_names.c), as
 * btrfs_rename tells the kernel's: a subvolume's rename commits; a name
 * leaving its directory for another is an unlink's there. */
static void note_rename(ref_fs *fs, const struct rn *a)
{
	if (a->osub || a->nsub)
		log_note_must_commit(fs, REF_LOG_FULL_SUBVOL);
	if (!same_ino(&a->on.dir, &a->nn.dir)) {
		log_note_unlink(fs, &a->on.dir, &a->oi, true);
		if (a->exists && a->flags & RENAME_EXCHANGE)
			log_note_unlink(fs, &a->nn.dir, &a->ni, true);
	}
}

/* The change: names go first, then come back in their new places; then
 * the log hears of the overwritten target (an unlink's) and the new names. */
static int rename_apply(ref_fs *fs, const struct rn *a)
{
	bool exchange = a->flags & RENAME_EXCHANGE;
	uint64_t tidx = 0, oidx = 0;
	int r;
	note_rename(fs, a);
	if (a->exists && (r = dir_remove_at(fs, &a->nn.dir, a->nn.name, a->nn.len, &a->ni, &tidx)))
		return r;
	if ((r = dir_remove_at(fs, &a->on.dir, a->on.name, a->on.len, &a->oi, &oidx)) ||
	    (r = dir_add(fs, &a->nn.dir, a->nn.name, a->nn.len, &a->oi, a->ot)))
		return r;
	if (a->exists && exchange)
		r = dir_add(fs, &a->on.dir, a->on.name, a->on.len, &a->ni, a->nt);
	else if (a->exists)
		r = drop_link(fs, &a->ni);
	if (!r)
		r = touch_moved(fs, &a->oi, a->osub);
	if (!r && a->exists && exchange)
		r = touch_moved(fs, &a->ni, a->nsub);
	if (r)
		return r;
	if (a->exists && !exchange)
		log_note_removed(fs, &a->nn.dir, a->nn.name, a->nn.len, tidx, &a->ni);
	log_note_new_name(fs, &a->oi, a->ot, &a->on.dir, oidx);
	if (a->exists && exchange)
		log_note_new_name(fs, &a->ni, a->nt, &a->nn.dir, tidx);
	return 0;
}

int ref_rename(ref_fs *fs, const char *oldpath, const char *newpath, unsigned flags)
{
	const struct ref_ino *at = fs->at_set ? &fs->at : NULL;
	return ref_renameat(fs, at, oldpath, at, newpath, flags);
}

int ref_renameat(ref_fs *fs, const struct ref_ino *olddir, const char *oldpath,
		 const struct ref_ino *newdir, const char *newpath, unsigned flags)
{
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE) ||
	    (flags & RENAME_NOREPLACE && flags & RENAME_EXCHANGE))
		return ref_fail(fs, EINVAL, "invalid rename flags");
	struct rn a = { .oldpath = oldpath, .newpath = newpath, .obase = olddir, .nbase = newdir,
			.flags = flags };
	int r = vfs_begin(fs, 16, false);
	if (r || (r = rename_lookup(fs, &a)) || (r = rename_vfs_checks(fs, &a)) ||
	    (r = rename_perm_checks(fs, &a)) || (r = rename_btrfs_checks(fs, &a)))
		return vfs_end(fs, r > 0 ? 0 : r);
	return vfs_end(fs, rename_apply(fs, &a));
}
