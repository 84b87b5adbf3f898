/*
 * compress_prop.c - the compression property of an inode, as Linux 6.18
 * keeps it (fs/btrfs/props.c, btrfs_fileattr_set in ioctl.c,
 * btrfs_inherit_iflags in inode.c):
 *
 *   - The xattr btrfs.compression holds "zlib", "lzo" or "zstd" (matched as
 *     prefixes, so "zstd:9" is taken as zstd, its level ignored), or "no" /
 *     "none".  Setting a type sets the inode flag COMPRESS and clears
 *     NOCOMPRESS; no/none sets NOCOMPRESS; an empty value or removexattr
 *     resets both.  Other values, and any value on a NODATACOW or NODATASUM
 *     inode, are EINVAL; on anything but a regular file or directory the
 *     call succeeds and stores nothing.  lzo and zstd set their incompat bits.
 *   - chattr +c sets COMPRESS and the property to the mount's algorithm (zlib
 *     when the mount has none); +m sets NOCOMPRESS and removes the property;
 *     dropping both clears both.  c with m, or either with C (NOCOW), is EINVAL.
 *   - A new inode takes its directory's COMPRESS / NOCOMPRESS (and NODATACOW,
 *     with NODATASUM for a regular file) flags, then, when it is a regular
 *     file or directory that may compress, the property's algorithm ("no"
 *     and "none" are not passed on: the flag is).
 */
#include "ref/compress/compress_int.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#define PROP_NAME "btrfs.compression"
#define PROP_LEN (sizeof(PROP_NAME) - 1)

/* The algorithm a property value names (btrfs_compress_is_valid_type: the
 * name as a prefix), or 0. */
static uint8_t value_type(const uint8_t *v, size_t len)
{
	static const uint8_t types[] = { REF_COMPRESS_ZLIB, REF_COMPRESS_LZO, REF_COMPRESS_ZSTD };
	for (size_t i = 0; i < sizeof(types); i++) {
		const char *name = ref_compress_name(types[i]);
		size_t n = strlen(name);
		if (len >= n && !memcmp(v, name, n))
			return types[i];
	}
	return 0;
}

static bool value_none(const uint8_t *v, size_t len)
{
	return (len == 2 && !memcmp(v, "no", 2)) || (len == 4 && !memcmp(v, "none", 4));
}

static bool can_compress(const struct btrfs_inode_item *ii)
{
	return !(LE64(ii->flags) & (BTRFS_INODE_NODATACOW | BTRFS_INODE_NODATASUM));
}

static void set_flags(struct btrfs_inode_item *ii, uint64_t set, uint64_t clear)
{
	ii->flags = htole64((LE64(ii->flags) & ~clear) | set);
}

void cw_need_incompat(ref_fs *fs, uint8_t type)
{
	uint64_t bit = type == REF_COMPRESS_LZO	   ? BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO
		       : type == REF_COMPRESS_ZSTD ? BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD
						   : 0;
	fs->sb.incompat_flags |= htole64(bit);
}

int cw_prop_type(ref_fs *fs, const struct ref_ino *ino, uint8_t *type)
{
	uint8_t *v;
	size_t len;
	*type = 0;
	int r = vfs_xattr_get(fs, ino, PROP_NAME, PROP_LEN, &v, &len);
	if (r)
		return r == -ENODATA ? 0 : r;
	*type = value_type(v, len);
	free(v);
	return 0;
}

/* prop_compression_apply: the flags a value gives (len 0: reset). */
static void apply(ref_fs *fs, struct btrfs_inode_item *ii, const uint8_t *v, size_t len)
{
	uint8_t type = len ? value_type(v, len) : 0;
	if (!len)
		set_flags(ii, 0, BTRFS_INODE_COMPRESS | BTRFS_INODE_NOCOMPRESS);
	else if (!type)
		set_flags(ii, BTRFS_INODE_NOCOMPRESS, BTRFS_INODE_COMPRESS);
	else
		set_flags(ii, BTRFS_INODE_COMPRESS, BTRFS_INODE_NOCOMPRESS);
	cw_need_incompat(fs, type);
}

int cw_prop_set(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		const char *name, const void *value, size_t len, int flags)
{
	if (strcmp(name, PROP_NAME))
		return ref_fail(fs, EINVAL, "%s: no such property (btrfs.compression is the one there is)",
				name);
	if (len && !value_type(value, len) && !value_none(value, len))
		return ref_fail(fs, EINVAL, "%.*s: not a compression (zlib, lzo, zstd, no, none)",
				(int)(len < 64 ? len : 64), (const char *)value);
	if (len && !can_compress(ii))
		return ref_fail(fs, EINVAL, "a nodatacow or nodatasum inode cannot be compressed");
	uint32_t mode = inode_mode(ii);
	if (!S_ISREG(mode) && !S_ISDIR(mode)) /* prop_compression_ignore */
		return 0;
	int r = len ? vfs_xattr_put(fs, ino, name, PROP_LEN, value, len, flags)
		    : vfs_xattr_cut(fs, ino, name, PROP_LEN);
	if (r == -ENODATA) /* removing what is not there: only removexattr says so */
		r = flags & XATTR_REPLACE ? ref_fail(fs, ENODATA, "%s: no such xattr", name) : 0;
	if (!r)
		apply(fs, ii, value, len);
	return r;
}

int cw_inherit(ref_fs *fs, const struct ref_ino *dir, const struct btrfs_inode_item *dii,
	       const struct ref_ino *ino, struct btrfs_inode_item *ii)
{
	uint64_t df = LE64(dii->flags);
	uint32_t mode = inode_mode(ii);
	if (df & BTRFS_INODE_NOCOMPRESS)
		set_flags(ii, BTRFS_INODE_NOCOMPRESS, BTRFS_INODE_COMPRESS);
	else if (df & BTRFS_INODE_COMPRESS)
		set_flags(ii, BTRFS_INODE_COMPRESS, BTRFS_INODE_NOCOMPRESS);
	if (df & BTRFS_INODE_NODATACOW)
		set_flags(ii, BTRFS_INODE_NODATACOW | (S_ISREG(mode) ? BTRFS_INODE_NODATASUM : 0), 0);
	uint8_t type = 0;
	int r = 0;
	if ((S_ISREG(mode) || S_ISDIR(mode)) && can_compress(ii) &&
	    !(r = cw_prop_type(fs, dir, &type)) && type) {
		const char *name = ref_compress_name(type);
		if (!(r = vfs_xattr_put(fs, ino, PROP_NAME, PROP_LEN, name, strlen(name), 0)))
			apply(fs, ii, (const uint8_t *)name, strlen(name));
	}
	return r ? r : inode_write(fs, ino, ii);
}

uint32_t ref_inode_fsflags(uint64_t f)
{
	uint32_t out = 0;
	if (f & BTRFS_INODE_NODATACOW)
		out |= FS_NOCOW_FL;
	if (f & BTRFS_INODE_NOCOMPRESS)
		out |= FS_NOCOMP_FL;
	else if (f & BTRFS_INODE_COMPRESS)
		out |= FS_COMPR_FL;
	static const struct {
		uint64_t inode;
		uint32_t fs;
	} same[] = { { BTRFS_INODE_SYNC, FS_SYNC_FL },	       { BTRFS_INODE_IMMUTABLE, FS_IMMUTABLE_FL },
		     { BTRFS_INODE_APPEND, FS_APPEND_FL },     { BTRFS_INODE_NODUMP, FS_NODUMP_FL },
		     { BTRFS_INODE_NOATIME, FS_NOATIME_FL },   { BTRFS_INODE_DIRSYNC, FS_DIRSYNC_FL } };
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		if (f & same[i].inode)
			out |= same[i].fs;
	return out;
}

int cw_getflags(const struct btrfs_inode_item *ii, uint32_t *fsflags)
{
	*fsflags = ref_inode_fsflags(LE64(ii->flags));
	return 0;
}

int cw_setflags(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		uint32_t fsflags)
{
	uint32_t old;
	cw_getflags(ii, &old);
	uint32_t ours = FS_COMPR_FL | FS_NOCOMP_FL;
	/* check_fsflags and check_fsflags_compatible, in their order */
	if ((fsflags & FS_NOCOMP_FL) && (fsflags & FS_COMPR_FL))
		return ref_fail(fs, EINVAL, "c (compress) and m (no compression) together");
	if ((fsflags & FS_COMPR_FL) && (fsflags & FS_NOCOW_FL))
		return ref_fail(fs, EINVAL, "c (compress) with C (no copy-on-write)");
	if ((old & FS_NOCOW_FL) && (fsflags & ours))
		return ref_fail(fs, EINVAL, "a no-copy-on-write inode cannot take c or m");
	if ((fsflags & FS_NOCOW_FL) && (old & ours))
		return ref_fail(fs, EINVAL, "an inode with c or m cannot take C");
	/* Only c and m change anything in ref: the others stay as they are. */
	if ((fsflags ^ old) & ~ours)
		return ref_fail(fs, EOPNOTSUPP,
				"ref changes only the flags c and m (the others are not enforced by its "
				"write path)");
	uint32_t mode = inode_mode(ii);
	int r = 0;
	if (fsflags & FS_NOCOMP_FL) {
		set_flags(ii, BTRFS_INODE_NOCOMPRESS, BTRFS_INODE_COMPRESS);
		if ((S_ISREG(mode) || S_ISDIR(mode)) &&
		    (r = vfs_xattr_cut(fs, ino, PROP_NAME, PROP_LEN)) == -ENODATA)
			r = 0;
	} else if (fsflags & FS_COMPR_FL) {
		set_flags(ii, BTRFS_INODE_COMPRESS, BTRFS_INODE_NOCOMPRESS);
		uint8_t type = fs->rw->compress ? fs->rw->compress : REF_COMPRESS_ZLIB;
		const char *name = ref_compress_name(type);
		if (S_ISREG(mode) || S_ISDIR(mode))
			r = vfs_xattr_put(fs, ino, PROP_NAME, PROP_LEN, name, strlen(name), 0);
		cw_need_incompat(fs, type);
	} else {
		set_flags(ii, 0, BTRFS_INODE_COMPRESS | BTRFS_INODE_NOCOMPRESS);
		if ((S_ISREG(mode) || S_ISDIR(mode)) &&
		    (r = vfs_xattr_cut(fs, ino, PROP_NAME, PROP_LEN)) == -ENODATA)
			r = 0;
	}
	return r;
}
