/*
 * subvol_flags.c - what a subvolume says about itself in its ROOT_ITEM, as
 * the kernel's ioctls change it: read-only or writable
 * (BTRFS_IOC_SUBVOL_SETFLAGS, `btrfs property set ro`), and where it was
 * received from (BTRFS_IOC_SET_RECEIVED_SUBVOL, the last step of `btrfs
 * receive`).  Each call commits before it returns, as the kernel's does.
 */
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <string.h>

/* The subvolume whose root directory path is (the ioctls are made on it):
 * EINVAL for any other directory or file, ENOTTY for a snapshot's stand-in. */
static int subvol_of(ref_fs *fs, const char *path, uint64_t *id)
{
	struct ref_ino ino;
	int r = vfs_resolve(fs, path, true, &ino);
	if (r)
		return r;
	if (vfs_is_standin(&ino))
		return ref_fail(fs, ENOTTY, "%s: a snapshot's stand-in for a subvolume takes no ioctls",
				path);
	if (ino.ino != BTRFS_FIRST_FREE_OBJECTID)
		return ref_fail(fs, EINVAL, "%s: not a subvolume", path);
	*id = ino.subvol;
	return 0;
}

int ref_subvol_set_readonly(ref_fs *fs, const char *path, bool readonly)
{
	uint64_t id;
	struct btrfs_root_item ri;
	struct ref_key key;
	struct rw_tree *t;
	int r = vfs_begin(fs, 1, false);
	if (r || (r = subvol_of(fs, path, &id)) || (r = sv_root_item_read(fs, id, &ri, &key)) ||
	    (r = rw_tree_get(fs, id, &t)))
		return sv_end_commit(fs, r);
	uint64_t flags = LE64(ri.flags);
	if (!!(flags & BTRFS_ROOT_SUBVOL_RDONLY) == readonly)
		return vfs_end(fs, 0); /* as the kernel: nothing to change, no transaction */
	if (!readonly && (flags & BTRFS_ROOT_SUBVOL_DEAD))
		return sv_end_commit(fs, ref_fail(fs, EPERM, "%s: the subvolume is being deleted", path));
	flags = readonly ? flags | BTRFS_ROOT_SUBVOL_RDONLY : flags & ~BTRFS_ROOT_SUBVOL_RDONLY;
	ri.flags = htole64(flags);
	if (!(r = sv_root_item_write(fs, &key, &ri)))
		t->rdonly = readonly;
	return sv_end_commit(fs, r);
}

int ref_subvol_set_received(ref_fs *fs, const char *path, const uint8_t uuid[BTRFS_UUID_SIZE],
			    uint64_t stransid, uint64_t *rtransid)
{
	static const uint8_t zero[BTRFS_UUID_SIZE];
	uint64_t id;
	struct btrfs_root_item ri;
	struct ref_key key;
	int r = vfs_begin(fs, 3, false);
	if (r || (r = subvol_of(fs, path, &id)) || (r = sv_root_item_read(fs, id, &ri, &key)))
		return sv_end_commit(fs, r);
	if (LE64(ri.flags) & BTRFS_ROOT_SUBVOL_RDONLY)
		return sv_end_commit(fs, ref_fail(fs, EROFS, "%s: the subvolume is read-only", path));
	/* _btrfs_ioctl_set_received_subvol: the old received uuid's entry of
	 * the uuid tree goes, the new one comes; rtransid is this transaction,
	 * rtime now; stime is what the caller gave (btrfs receive: zero). */
	bool changed = memcmp(ri.received_uuid, uuid, BTRFS_UUID_SIZE) != 0;
	if (changed &&
	    (r = sv_uuid_remove(fs, ri.received_uuid, BTRFS_UUID_KEY_RECEIVED_SUBVOL, id)))
		return sv_end_commit(fs, r);
	memcpy(ri.received_uuid, uuid, BTRFS_UUID_SIZE);
	ri.stransid = htole64(stransid);
	ri.rtransid = htole64(fs->rw->transid);
	memset(&ri.stime, 0, sizeof(ri.stime));
	vfs_now(fs, &ri.rtime);
	if ((r = sv_root_item_write(fs, &key, &ri)))
		return sv_end_commit(fs, r);
	if (changed && memcmp(uuid, zero, BTRFS_UUID_SIZE))
		r = sv_uuid_add(fs, uuid, BTRFS_UUID_KEY_RECEIVED_SUBVOL, id);
	if (!r && rtransid)
		*rtransid = fs->rw->transid;
	return sv_end_commit(fs, r);
}
