/*
 * vfs_int.h - what the files of the file-system API share (ref/ only):
 * path walking, inode items, directory entries and back references, and
 * file data.
 */
#ifndef BTRSIM_REF_VFS_INT_H
#define BTRSIM_REF_VFS_INT_H

#include "ref/rw.h"
#include "ref/vfs.h"

#define VFS_MAX_SYMLINKS 40
#define VFS_MAX_FILE_SIZE ((uint64_t)INT64_MAX) /* the kernel's MAX_LFS_FILESIZE */
#define VFS_LINK_MAX 65535u
#define VFS_MAX_INLINE 2048u /* the kernel's default max_inline */

enum vfs_last { LAST_NORM, LAST_DOT, LAST_DOTDOT, LAST_ROOT };

/* The last component of a path and the directory that holds it. */
struct vfs_name {
	struct ref_ino dir;
	const char *name;
	size_t len;
	enum vfs_last kind;
	bool trailing_slash; /* "a/": the name must be a directory */
};

/* vfs.c */
int vfs_parent(ref_fs *fs, const char *path, struct vfs_name *out);
/* The same from base for a relative path (NULL: refused as vfs_parent
 * refuses one without ref_chdir). */
int vfs_parent_at(ref_fs *fs, const struct ref_ino *base, const char *path, struct vfs_name *out);
int vfs_resolve(ref_fs *fs, const char *path, bool follow, struct ref_ino *out);
/* The directory entry `name` in dir: 0, -ENOENT, or -errno. */
int vfs_lookup(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       struct ref_ino *out, uint8_t *type);
/* The parent directory of a directory. */
int vfs_dotdot(ref_fs *fs, const struct ref_ino *dir, struct ref_ino *out);
/* Starts a changing operation: writable, and `items` items' worth of
 * metadata reserved (deletions may use the global reserve). */
int vfs_begin(ref_fs *fs, unsigned items, bool deleting);
/* Checks again, inside an operation that has changed nothing yet, that
 * `items` items' worth of metadata space is free (the reservation is a
 * check, not a hold: pass the operation's whole count). */
int vfs_reserve(ref_fs *fs, unsigned items, bool deleting);
/* Ends it: commits when the dirty metadata outgrew its limit. */
int vfs_end(ref_fs *fs, int r);
void vfs_now(ref_fs *fs, struct btrfs_timespec *t);

/* namei.c: the parent of a name about to be created: -EEXIST when it
 * exists, and for "/", "." and "..". */
int vfs_new_name(ref_fs *fs, const char *path, struct vfs_name *n);

/* inode.c */
int inode_read(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii);
int inode_write(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii);
/* orphan.c: the kernel's orphan cleanup of every writable subvolume, before
 * the first change of a mount for writing (vfs_begin; in its transaction). */
int orphan_cleanup(ref_fs *fs);
/* reloc_recover.c: the relocation trees an interrupted balance left dropped,
 * before the orphan cleanup (which takes the data relocation inode). */
int reloc_recover(ref_fs *fs);
/* held.c: whether ino is open (ref_hold); its last link gone while it is:
 * no links, an orphan item, the inode kept (ii as read, written back). */
bool vfs_held(ref_fs *fs, const struct ref_ino *ino);
int held_orphan(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii);
/* The subvolume's next free inode number found (above its highest item),
 * as the kernel finds it when it reads the root (btrfs_init_root_free_objectid):
 * before the orphan cleanup removes anything. */
int inode_numbers_known(ref_fs *fs, struct rw_tree *t);
/* A new inode in subvol (number, item inserted). */
int inode_create(ref_fs *fs, uint64_t subvol, uint32_t mode, struct ref_ino *out,
		 struct btrfs_inode_item *ii);
/* Removes every item of an inode, dropping its data references. */
int inode_drop(ref_fs *fs, const struct ref_ino *ino);
void inode_touch(ref_fs *fs, struct btrfs_inode_item *ii, bool mtime, bool ctime);
uint32_t inode_mode(const struct btrfs_inode_item *ii);
uint8_t mode_to_ft(uint32_t mode);
/* Whether ino is a snapshot's stand-in for a subvolume nested in its source:
 * the kernel's empty directory of inode 2 (new_simple_dir), which has no
 * inode item and no name, xattr or attribute operations of its own.
 * inode_read gives it as that directory (0755, one link). */
bool vfs_is_standin(const struct ref_ino *ino);
/* EROFS when ino lies in a read-only subvolume (btrfs_permission's MAY_WRITE,
 * which Linux checks before a name's type, an xattr's presence or a subvolume
 * boundary); a stand-in never does (it has no btrfs permission check). */
int vfs_writable(ref_fs *fs, const struct ref_ino *ino);

/* attr.c: an xattr of an inode, in the running transaction: stored
 * (XATTR_CREATE / XATTR_REPLACE as setxattr's), removed (-ENODATA when
 * absent), or read into a new buffer (free it; -ENODATA when absent). */
int vfs_xattr_put(ref_fs *fs, const struct ref_ino *ino, const char *name, size_t nlen,
		  const void *value, size_t len, int flags);
int vfs_xattr_cut(ref_fs *fs, const struct ref_ino *ino, const char *name, size_t nlen);
int vfs_xattr_get(ref_fs *fs, const struct ref_ino *ino, const char *name, size_t nlen,
		  uint8_t **value, size_t *len);

/* acl.c: POSIX ACLs. */
/* Whether name is one of the two ACL xattrs (*dflt: the default one). */
bool acl_name(const char *name, bool *dflt);
/* setxattr (value) or removexattr (NULL) of an ACL on ino: stored or removed,
 * ii's mode changed as an access ACL says (the caller writes ii). */
int acl_set(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, bool dflt,
	    const void *value, size_t len);
/* chmod: the access ACL's entries follow the new mode. */
int acl_chmod(ref_fs *fs, const struct ref_ino *ino, uint32_t mode);
/* What a new inode in dir takes from dir's default ACL: *mode masked, and
 * the xattr values to store once it exists (acl_inherit_store, which frees
 * them; acl_inherited_free when it is not made). */
struct acl_inherited {
	uint8_t *access, *dflt;
	size_t alen, dlen;
	bool masked; /* dir has a default ACL (then the umask plays no part) */
};
int acl_inherit(ref_fs *fs, const struct ref_ino *dir, uint32_t *mode, struct acl_inherited *out);
int acl_inherit_store(ref_fs *fs, const struct ref_ino *ino, struct acl_inherited *in);
void acl_inherited_free(struct acl_inherited *in);

/* attr.c */
/* What a write (of at least a byte), truncate or fallocate of a file, and a
 * chown of anything but a directory, do to its file capabilities, as Linux's
 * file_remove_privs and ATTR_KILL_PRIV (cap_inode_killpriv): the
 * security.capability xattr goes.  Called before the operation changes
 * anything; when there is one to remove, the operation's reservation
 * (items, deleting as given to vfs_begin) is checked again with one item
 * more.  (Set-id bits stay: the caller is root, CAP_FSETID; chown's rules
 * are its own.) */
int vfs_killpriv(ref_fs *fs, const struct ref_ino *ino, unsigned items, bool deleting);

/* dir.c */
/* Adds name -> target in dir: DIR_ITEM, DIR_INDEX and the target's back
 * reference; the directory's size and times.  -EEXIST, -EMLINK. */
int dir_add(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	    const struct ref_ino *target, uint8_t type);
/* The same, telling the entry's DIR_INDEX (a subvolume's ROOT_REF needs it).
 * For a subvolume's root (target in another subvolume than dir) the back
 * references are ROOT_REF and ROOT_BACKREF in the root tree; a snapshot's
 * stand-in has none. */
int dir_add_index(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		  const struct ref_ino *target, uint8_t type, uint64_t *index_out);
/* Adds name -> target at a given DIR_INDEX, the directory's times unchanged,
 * the back reference only when backref (log replay: btrfs_add_link while
 * the log is recovering). */
int dir_add_at(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       const struct ref_ino *target, uint8_t type, uint64_t index, bool backref);
/* Removes it again (the target's link count is the caller's). */
int dir_remove(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       const struct ref_ino *target);
/* The same, telling the DIR_INDEX the name had. */
int dir_remove_at(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		  const struct ref_ino *target, uint64_t *index_out);
/* Finds name among the entries of a DIR_ITEM or XATTR_ITEM at key k: its
 * offset and size in the item, and the data (an xattr's value, up to the
 * caller's buffer of a leaf's size) when value is not NULL; -ENOENT. */
int dir_item_find(ref_fs *fs, const struct ref_root *root, const struct ref_key *k,
		  const char *name, size_t len, uint32_t *off, uint32_t *esize, uint8_t *value,
		  size_t *vlen);
/* Whether a directory has entries. */
int dir_is_empty(ref_fs *fs, const struct ref_ino *dir);

/* data.c of the write path (write.c) */
/* One file extent item, decoded. */
struct fext {
	struct ref_key key;
	uint8_t type, compression;
	uint64_t disk_bytenr, disk_num_bytes, offset, num_bytes, ram_bytes, generation;
	uint64_t end; /* file offset after it (an inline one: its size rounded to a sector) */
};
/* The first extent of ino that ends after pos: 0, or 1 when there is none. */
int file_extent_from(ref_fs *fs, const struct ref_ino *ino, uint64_t pos, struct fext *e);
/* Inserts a file extent item (EUCLEAN when one is at that key already). */
int file_insert_extent(ref_fs *fs, struct rw_tree *t, const struct ref_key *k,
		       const struct btrfs_file_extent_item *fe);
/* Turns an inline extent into a regular one (before the file grows past it). */
int file_uninline(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii);
int file_write(ref_fs *fs, const struct ref_ino *ino, const void *buf, size_t len, uint64_t off);
int file_truncate(ref_fs *fs, const struct ref_ino *ino, uint64_t size);
int file_fallocate(ref_fs *fs, const struct ref_ino *ino, int mode, uint64_t off, uint64_t len);
/* Drops file extents in [start, end) (sector-aligned; end may be UINT64_MAX),
 * splitting those that cross the edges; *freed gets the bytes nbytes loses. */
int file_drop_extents(ref_fs *fs, const struct ref_ino *ino, uint64_t start, uint64_t end,
		      uint64_t *freed);
/* New extents at file offset `at` where the file has none (ii->nbytes
 * counts them; written at commit with the inode): len bytes of sector-aligned
 * data in plain extents; or one compressed extent of disk_len bytes (the
 * encoding padded with zeros to a sector) holding ram bytes of data. */
/* Writes [at, at + len) (sector-aligned, within the file's size rounded up)
 * anew with the bytes it holds, as the kernel's writeback of pages a
 * defragmentation dirtied: new extents (compressed as the inode, the mount
 * and a running defragmentation say), a file of one sector made whole again
 * (inline when it fits).  Times stay; the caller writes ii. */
int file_rewrite(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, uint64_t at,
		 uint64_t len);
int file_put_plain(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, uint64_t at,
		   const uint8_t *data, uint64_t len);
int file_put_compressed(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
			uint64_t at, const uint8_t *enc, uint64_t disk_len, uint64_t ram, uint8_t type);

/* subvol.c, shared with subvol_flags.c: a subvolume's ROOT_ITEM read
 * (zero-extended when an old, shorter one) with its key, and written back;
 * an entry of the uuid tree added or removed (nothing for a zero uuid or an
 * absent entry); the end of a subvolume call, committing on success. */
int sv_root_item_read(ref_fs *fs, uint64_t id, struct btrfs_root_item *ri, struct ref_key *key);
int sv_root_item_write(ref_fs *fs, const struct ref_key *key, const struct btrfs_root_item *ri);
int sv_uuid_add(ref_fs *fs, const uint8_t uuid[BTRFS_UUID_SIZE], uint8_t type, uint64_t id);
int sv_uuid_remove(ref_fs *fs, const uint8_t uuid[BTRFS_UUID_SIZE], uint8_t type, uint64_t id);
int sv_end_commit(ref_fs *fs, int r);

#endif
