/*
 * attr.c - inode attributes: xattrs (XATTR_ITEMs keyed by the name's hash,
 * colliding names sharing an item, as directory entries do; the POSIX ACLs
 * among them through acl.c), chmod (the access ACL following), chown
 * and utimes; file capabilities removed by writes, truncates, fallocate and
 * chown (vfs_killpriv).
 */
#include "ref/log/log_write.h"
#include "ref/compress/compress_int.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#define DIR_ENTRY sizeof(struct btrfs_dir_item)
#define XATTR_VALUE_MAX 65536 /* XATTR_SIZE_MAX */

static int check_name(ref_fs *fs, const char *name, size_t *len)
{
	*len = name ? strlen(name) : 0;
	if (*len == 0 || *len > BTRFS_NAME_LEN)
		return ref_fail(fs, ERANGE, "xattr names are 1 to 255 bytes");
	static const char *const prefixes[] = { "user.", "trusted.", "security.", "btrfs." };
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);
		if (*len > pl && !strncmp(name, prefixes[i], pl))
			return 0;
	}
	if (acl_name(name, NULL)) /* the system. namespace holds the ACLs only */
		return 0;
	return ref_fail(fs, EOPNOTSUPP, "%s: unsupported xattr namespace", name);
}

/* The xattr entry of `name` in its item: offset and size, or -ENODATA. */
static int find_entry(ref_fs *fs, const struct ref_root *root, const struct ref_key *k,
		      const char *name, size_t len, uint32_t *off, uint32_t *esize, uint8_t *value,
		      size_t *vlen)
{
	int r = dir_item_find(fs, root, k, name, len, off, esize, value, vlen);
	return r == -ENOENT ? -ENODATA : r;
}

static int xattr_target(ref_fs *fs, const char *path, bool follow, const char *name,
			struct ref_ino *ino, struct btrfs_inode_item *ii, size_t *nlen)
{
	int r = check_name(fs, name, nlen);
	if (r || (r = vfs_resolve(fs, path, follow, ino)) || (r = inode_read(fs, ino, ii)))
		return r;
	uint32_t mode = inode_mode(ii);
	if (!strncmp(name, "user.", 5) && !S_ISREG(mode) && !S_ISDIR(mode))
		return ref_fail(fs, EPERM, "user xattrs only go on files and directories");
	if (vfs_is_standin(ino)) /* new_simple_dir clears IOP_XATTR */
		return ref_fail(fs, EOPNOTSUPP, "%s: a snapshot's stand-in for a subvolume has no xattrs",
				path);
	return 0;
}

/* Where xattr name of ino lies in its subvolume's tree, for a change: the
 * tree, the item's key, the entry's offset and size in it (0 or -ENODATA). */
struct xattr_at {
	struct rw_tree *t;
	struct ref_key k;
	uint32_t off, esize;
};

static int xattr_locate(ref_fs *fs, const struct ref_ino *ino, const char *name, size_t nlen,
			struct xattr_at *at)
{
	int r = rw_tree_get(fs, ino->subvol, &at->t);
	if (r)
		return r;
	at->k = (struct ref_key){ ino->ino, BTRFS_XATTR_ITEM_KEY, ref_name_hash(name, nlen) };
	return find_entry(fs, &at->t->root, &at->k, name, nlen, &at->off, &at->esize, NULL, NULL);
}

int vfs_xattr_put(ref_fs *fs, const struct ref_ino *ino, const char *name, size_t nlen,
		  const void *value, size_t len, int flags)
{
	if (DIR_ENTRY + nlen + len > bt_max_item(fs))
		return ref_fail(fs, ENOSPC, "the xattr does not fit in a leaf");
	struct xattr_at at;
	int r = xattr_locate(fs, ino, name, nlen, &at);
	struct rw_tree *t = at.t;
	if (r && r != -ENODATA)
		return r;
	if (r == 0 && flags & XATTR_CREATE)
		return ref_fail(fs, EEXIST, "%s: xattr exists", name);
	if (r == -ENODATA && flags & XATTR_REPLACE)
		return ref_fail(fs, ENODATA, "%s: no such xattr", name);
	if (r == 0 && (r = bt_item_cut(fs, t, &at.k, at.off, at.esize)))
		return r;
	uint8_t *e = malloc(DIR_ENTRY + nlen + len);
	if (!e)
		return ref_fail(fs, ENOMEM, "out of memory");
	struct btrfs_dir_item di;
	memset(&di, 0, sizeof(di));
	di.transid = htole64(fs->rw->transid);
	di.data_len = htole16((uint16_t)len);
	di.name_len = htole16((uint16_t)nlen);
	di.type = BTRFS_FT_XATTR;
	memcpy(e, &di, DIR_ENTRY);
	memcpy(e + DIR_ENTRY, name, nlen);
	if (len)
		memcpy(e + DIR_ENTRY + nlen, value, len);
	r = bt_item_append(fs, t, &at.k, e, (uint32_t)(DIR_ENTRY + nlen + len));
	if (r == -EOVERFLOW)
		r = ref_fail(fs, ENOSPC, "no room for this xattr beside its hash neighbours");
	free(e);
	return r;
}

int vfs_xattr_cut(ref_fs *fs, const struct ref_ino *ino, const char *name, size_t nlen)
{
	struct xattr_at at;
	int r = xattr_locate(fs, ino, name, nlen, &at);
	return r ? r : bt_item_cut(fs, at.t, &at.k, at.off, at.esize);
}

int vfs_xattr_get(ref_fs *fs, const struct ref_ino *ino, const char *name, size_t nlen,
		  uint8_t **value, size_t *len)
{
	struct ref_root root;
	int r = ref_find_root(fs, ino->subvol, &root);
	if (r)
		return r;
	struct ref_key k = { ino->ino, BTRFS_XATTR_ITEM_KEY, ref_name_hash(name, nlen) };
	uint32_t off, esize;
	if (!(*value = malloc(bt_max_item(fs))))
		return ref_fail(fs, ENOMEM, "out of memory");
	r = find_entry(fs, &root, &k, name, nlen, &off, &esize, *value, len);
	if (r) {
		free(*value);
		*value = NULL;
	}
	return r;
}

static int set_xattr(ref_fs *fs, const char *path, bool follow, const char *name,
		     const void *value, size_t len, int flags)
{
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	size_t nlen;
	bool dflt;
	int r = vfs_begin(fs, 6, false);
	if (r || (r = xattr_target(fs, path, follow, name, &ino, &ii, &nlen)))
		return vfs_end(fs, r);
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return vfs_end(fs, ref_fail(fs, EINVAL, "invalid xattr flags"));
	if (len > XATTR_VALUE_MAX)
		return vfs_end(fs, ref_fail(fs, E2BIG, "xattr values are at most 64 KiB"));
	if ((r = vfs_writable(fs, &ino))) /* xattr_permission: before EEXIST, ENODATA */
		return vfs_end(fs, r);
	if (acl_name(name, &dflt)) /* (the flags play no part: vfs_set_acl) */
		r = acl_set(fs, &ino, &ii, dflt, value, len);
	else if (!strncmp(name, "btrfs.", 6)) /* properties (ref/compress/compress_prop.c) */
		r = cw_prop_set(fs, &ino, &ii, name, value ? value : "", len, flags);
	else if (!(r = vfs_xattr_put(fs, &ino, name, nlen, value, len, flags)))
		r = inode_read(fs, &ino, &ii);
	if (!r) {
		inode_touch(fs, &ii, false, true);
		r = inode_write(fs, &ino, &ii);
	}
	if (!r)
		log_note_xattr(fs, &ino);
	return vfs_end(fs, r);
}

int ref_setxattr(ref_fs *fs, const char *path, const char *name, const void *value, size_t len,
		 int flags)
{
	return set_xattr(fs, path, true, name, value, len, flags);
}

int ref_lsetxattr(ref_fs *fs, const char *path, const char *name, const void *value, size_t len,
		  int flags)
{
	return set_xattr(fs, path, false, name, value, len, flags);
}

static int remove_xattr(ref_fs *fs, const char *path, bool follow, const char *name)
{
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	size_t nlen;
	bool dflt;
	int r = vfs_begin(fs, 4, true);
	if (r || (r = xattr_target(fs, path, follow, name, &ino, &ii, &nlen)) ||
	    (r = vfs_writable(fs, &ino))) /* xattr_permission: before ENODATA */
		return vfs_end(fs, r);
	if (acl_name(name, &dflt)) /* none there is no error (vfs_remove_acl) */
		r = acl_set(fs, &ino, &ii, dflt, NULL, 0);
	else if (!strncmp(name, "btrfs.", 6))
		r = cw_prop_set(fs, &ino, &ii, name, "", 0, XATTR_REPLACE);
	else if ((r = vfs_xattr_cut(fs, &ino, name, nlen)) == -ENODATA)
		r = ref_fail(fs, ENODATA, "%s: no such xattr", name);
	if (r)
		return vfs_end(fs, r);
	inode_touch(fs, &ii, false, true);
	if (!(r = inode_write(fs, &ino, &ii)))
		log_note_xattr(fs, &ino);
	return vfs_end(fs, r);
}

int ref_removexattr(ref_fs *fs, const char *path, const char *name)
{
	return remove_xattr(fs, path, true, name);
}

int ref_lremovexattr(ref_fs *fs, const char *path, const char *name)
{
	return remove_xattr(fs, path, false, name);
}

ssize_t ref_getxattr(ref_fs *fs, const char *path, const char *name, void *value, size_t len)
{
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	size_t nlen, vlen = 0;
	uint8_t *buf;
	int r = xattr_target(fs, path, true, name, &ino, &ii, &nlen);
	if (r || (r = vfs_xattr_get(fs, &ino, name, nlen, &buf, &vlen)))
		return r == -ENODATA ? ref_fail(fs, ENODATA, "%s: no such xattr", name) : r;
	if (len && vlen > len)
		r = ref_fail(fs, ERANGE, "the value is %zu bytes", vlen);
	else if (len)
		memcpy(value, buf, vlen);
	free(buf);
	return r ? r : (ssize_t)vlen;
}

int vfs_killpriv(ref_fs *fs, const struct ref_ino *ino, unsigned items, bool deleting)
{
	static const char name[] = "security.capability"; /* XATTR_NAME_CAPS */
	size_t nlen = sizeof(name) - 1;
	struct rw_tree *t;
	int r = rw_tree_get(fs, ino->subvol, &t);
	if (r)
		return r;
	struct ref_key k = { ino->ino, BTRFS_XATTR_ITEM_KEY, ref_name_hash(name, nlen) };
	uint32_t off, esize;
	r = find_entry(fs, &t->root, &k, name, nlen, &off, &esize, NULL, NULL);
	if (r == -ENODATA)
		return 0;
	if (r || (r = vfs_reserve(fs, items + 1, deleting)))
		return r;
	return bt_item_cut(fs, t, &k, off, esize);
}

#define ATTR_ITEMS 3 /* set_attrs' reservation (killpriv adds its own) */

static int do_chmod(ref_fs *fs, struct btrfs_inode_item *ii, const void *arg);

/* Changes an inode's attributes under `path` (following symlinks when
 * follow); with
 * killpriv (chown), a non-directory loses its file capabilities too. */
static int set_attrs(ref_fs *fs, const char *path, bool follow,
		     int (*fn)(ref_fs *, struct btrfs_inode_item *, const void *), const void *arg,
		     bool killpriv)
{
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	int r = vfs_begin(fs, ATTR_ITEMS, false);
	if (r || (r = vfs_resolve(fs, path, follow, &ino)) || (r = inode_read(fs, &ino, &ii)) ||
	    (r = fn(fs, &ii, arg)))
		return vfs_end(fs, r);
	/* A stand-in has no setattr: simple_setattr changes the in-memory inode
	 * that the next lookup makes anew, so the call succeeds and keeps nothing. */
	if (vfs_is_standin(&ino))
		return vfs_end(fs, 0);
	if ((r = vfs_writable(fs, &ino)))
		return vfs_end(fs, r);
	if (killpriv && !S_ISDIR(inode_mode(&ii)) &&
	    (r = vfs_killpriv(fs, &ino, ATTR_ITEMS, false)))
		return vfs_end(fs, r);
	if (fn == do_chmod && (r = acl_chmod(fs, &ino, inode_mode(&ii))))
		return vfs_end(fs, r);
	inode_touch(fs, &ii, false, true);
	return vfs_end(fs, inode_write(fs, &ino, &ii));
}

static int do_chmod(ref_fs *fs, struct btrfs_inode_item *ii, const void *arg)
{
	(void)fs;
	uint32_t mode = *(const uint32_t *)arg;
	ii->mode = htole32((inode_mode(ii) & S_IFMT) | (mode & 07777));
	return 0;
}

int ref_chmod(ref_fs *fs, const char *path, uint32_t mode)
{
	return set_attrs(fs, path, true, do_chmod, &mode, false);
}

static int do_chown(ref_fs *fs, struct btrfs_inode_item *ii, const void *arg)
{
	(void)fs;
	const uint32_t *ids = arg;
	if (ids[0] != UINT32_MAX)
		ii->uid = htole32(ids[0]);
	if (ids[1] != UINT32_MAX)
		ii->gid = htole32(ids[1]);
	uint32_t mode = inode_mode(ii);
	/* chown_common: on anything but a directory, set-user-ID goes, and
	 * set-group-ID with group exec (root keeps the others); and the file's
	 * capabilities (ATTR_KILL_PRIV: set_attrs), even for -1 -1. */
	if (!S_ISDIR(mode)) {
		mode &= ~(uint32_t)S_ISUID;
		if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
			mode &= ~(uint32_t)S_ISGID;
		ii->mode = htole32(mode);
	}
	return 0;
}

int ref_chown(ref_fs *fs, const char *path, uint32_t uid, uint32_t gid)
{
	uint32_t ids[2] = { uid, gid };
	return set_attrs(fs, path, true, do_chown, ids, true);
}

int ref_lchown(ref_fs *fs, const char *path, uint32_t uid, uint32_t gid)
{
	uint32_t ids[2] = { uid, gid };
	return set_attrs(fs, path, false, do_chown, ids, true);
}

static int set_time(ref_fs *fs, struct btrfs_timespec *t, const struct timespec *ts)
{
	if (ts->tv_nsec == UTIME_OMIT)
		return 0;
	if (ts->tv_nsec == UTIME_NOW) {
		vfs_now(fs, t);
		return 0;
	}
	if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000)
		return ref_fail(fs, EINVAL, "nanoseconds out of range");
	t->sec = htole64((uint64_t)ts->tv_sec);
	t->nsec = htole32((uint32_t)ts->tv_nsec);
	return 0;
}

static int do_utimes(ref_fs *fs, struct btrfs_inode_item *ii, const void *arg)
{
	const struct timespec *ts = arg;
	if (!ts) {
		vfs_now(fs, &ii->atime);
		ii->mtime = ii->atime;
		return 0;
	}
	struct btrfs_inode_item tmp = *ii; /* nothing changes unless both are valid */
	int r = set_time(fs, &tmp.atime, &ts[0]);
	if (!r)
		r = set_time(fs, &tmp.mtime, &ts[1]);
	if (!r)
		*ii = tmp;
	return r;
}

static int utimes_at(ref_fs *fs, const char *path, bool follow, const struct timespec times[2])
{
	if (times && times[0].tv_nsec == UTIME_OMIT && times[1].tv_nsec == UTIME_OMIT)
		return 0; /* as utimensat: nothing to do, not even a lookup */
	return set_attrs(fs, path, follow, do_utimes, times, false);
}

int ref_utimes(ref_fs *fs, const char *path, const struct timespec times[2])
{
	return utimes_at(fs, path, true, times);
}

int ref_lutimes(ref_fs *fs, const char *path, const struct timespec times[2])
{
	return utimes_at(fs, path, false, times);
}

int ref_getflags(ref_fs *fs, const char *path, uint32_t *fsflags)
{
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	int r = vfs_resolve(fs, path, true, &ino);
	if (r || (r = inode_read(fs, &ino, &ii)))
		return r;
	return cw_getflags(&ii, fsflags);
}

int ref_setflags(ref_fs *fs, const char *path, uint32_t fsflags)
{
	struct ref_ino ino;
	struct btrfs_inode_item ii;
	int r = vfs_begin(fs, 6, false); /* the inode and the property's xattr */
	if (r || (r = vfs_resolve(fs, path, true, &ino)) || (r = inode_read(fs, &ino, &ii)))
		return vfs_end(fs, r);
	/* FS_IOC_SETFLAGS needs an open file: a stand-in has no fileattr_set */
	if (vfs_is_standin(&ino))
		return vfs_end(fs, ref_fail(fs, ENOTTY, "%s: a snapshot's stand-in has no flags", path));
	if ((r = vfs_writable(fs, &ino)) || (r = cw_setflags(fs, &ino, &ii, fsflags)))
		return vfs_end(fs, r);
	inode_touch(fs, &ii, false, true);
	return vfs_end(fs, inode_write(fs, &ino, &ii));
}
