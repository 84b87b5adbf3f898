/*
 * subvol.c - creating subvolumes and snapshots, and the default subvolume,
 * as the kernel's create_subvol, create_pending_snapshot and
 * btrfs_ioctl_default_subvol do: a ROOT_ITEM in the root tree, ROOT_REF and
 * ROOT_BACKREF linking it to the directory that names it, the entry itself
 * (DIR_ITEM and DIR_INDEX pointing at the ROOT_ITEM), and the subvolume's
 * uuid in the uuid tree.  Each call commits before it returns, as `btrfs
 * subvolume snapshot` waits for the transaction that makes the snapshot.
 */
#include "ref/log/log_write.h"
#include "ref/mutant.h"
#include "ref/qgroup/qgroup.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

/* The kernel's BTRFS_INODE_ROOT_ITEM_INIT (btrfs_inode.h, not in the uapi
 * headers): the root item's inode was initialised by a kernel that knows
 * the v2 root item. */
#define INODE_ROOT_ITEM_INIT (1ULL << 31)

static int root_tree(ref_fs *fs, struct rw_tree **rt)
{
	return rw_tree_get(fs, BTRFS_ROOT_TREE_OBJECTID, rt);
}

/* A subvolume's ROOT_ITEM (zero-extended when an old, shorter one) and its key. */
int sv_root_item_read(ref_fs *fs, uint64_t id, struct btrfs_root_item *ri, struct ref_key *key)
{
	struct rw_tree *rt;
	int r = root_tree(fs, &rt);
	if (r)
		return r;
	struct ref_path p;
	const uint8_t *d;
	uint32_t size;
	r = ref_find_first(fs, &rt->root, id, BTRFS_ROOT_ITEM_KEY, &p, key, &d, &size);
	if (r)
		return r == -ENOENT ? ref_fail(fs, ENOENT, "no subvolume %llu", (unsigned long long)id)
				    : r;
	memset(ri, 0, sizeof(*ri));
	memcpy(ri, d, size < sizeof(*ri) ? size : sizeof(*ri));
	ref_path_release(fs, &p);
	return 0;
}

int sv_root_item_write(ref_fs *fs, const struct ref_key *key, const struct btrfs_root_item *ri)
{
	struct rw_tree *rt;
	struct ref_path p;
	int r = root_tree(fs, &rt);
	if (r || (r = bt_lookup_cow(fs, rt, key, &p)))
		return r;
	uint32_t size;
	uint8_t *d = bt_item(&p, &size);
	memcpy(d, ri, size < sizeof(*ri) ? size : sizeof(*ri));
	ref_path_release(fs, &p);
	return 0;
}

/* The next subvolume id: above every tree id in the root tree (the kernel's
 * btrfs_init_root_free_objectid), at least 256. */
static int new_subvol_id(ref_fs *fs, uint64_t *id)
{
	struct rw_tree *rt;
	int r = root_tree(fs, &rt);
	if (r)
		return r;
	struct ref_key k = { BTRFS_LAST_FREE_OBJECTID, UINT8_MAX, UINT64_MAX }, got;
	if ((r = bt_peek(fs, &rt->root, &k, true, &got, NULL)) < 0)
		return r;
	*id = BTRFS_FIRST_FREE_OBJECTID;
	if (r == 0 && got.objectid >= BTRFS_FIRST_FREE_OBJECTID)
		*id = got.objectid + 1;
	/* As the kernel's free_objectid: a subvolume dropped in this mount
	 * leaves its id unused until the next mount. */
	if (*id < fs->rw->next_subvol_id)
		*id = fs->rw->next_subvol_id;
	if (*id > BTRFS_LAST_FREE_OBJECTID)
		return ref_fail(fs, EOVERFLOW, "no subvolume ids left");
	fs->rw->next_subvol_id = *id + 1;
	return 0;
}

int sv_uuid_add(ref_fs *fs, const uint8_t uuid[BTRFS_UUID_SIZE], uint8_t type, uint64_t id)
{
	struct rw_tree *ut;
	int r = rw_tree_get(fs, BTRFS_UUID_TREE_OBJECTID, &ut);
	if (r)
		return r == -ENOENT ? ref_fail(fs, EROFS, "the file system has no uuid tree") : r;
	struct ref_key k = { le64(uuid), type, le64(uuid + 8) };
	uint64_t v = htole64(id);
	r = bt_item_append(fs, ut, &k, &v, sizeof(v));
	return r == -EOVERFLOW ? ref_fail(fs, EOVERFLOW, "uuid tree item full") : r;
}

/* The new subvolume's name in its directory, and the links between the two
 * (dir_add: ROOT_REF and ROOT_BACKREF). */
static int link_subvol(ref_fs *fs, const struct vfs_name *n, uint64_t id)
{
	struct ref_ino target = { id, BTRFS_FIRST_FREE_OBJECTID };
	log_note_dir_changed(fs, &n->dir); /* btrfs_record_new_subvolume */
	return dir_add(fs, &n->dir, n->name, n->len, &target, BTRFS_FT_DIR);
}

static void set_time(struct btrfs_timespec *t, const struct btrfs_timespec *now)
{
	*t = *now;
}

/* The ioctl is made on the directory (btrfs-progs opens it): a snapshot's
 * stand-in for a subvolume has simple_dir_operations, without ioctls. */
static int takes_ioctls(ref_fs *fs, const struct ref_ino *dir, const char *path)
{
	return vfs_is_standin(dir) ? ref_fail(fs, ENOTTY, "%s: its directory is a snapshot's "
					      "stand-in for a subvolume, which takes no ioctls", path)
				   : 0;
}

/* The name of a new subvolume, its directory found (n) and no stand-in: the
 * name free (EEXIST), then the directory writable (EROFS). */
static int name_free_writable(ref_fs *fs, const char *path, struct vfs_name *n)
{
	int r = vfs_new_name(fs, path, n);
	return r ? r : vfs_writable(fs, &n->dir);
}

/* The start of subvol-create: the directory, its ioctls, the name. */
static int begin_new(ref_fs *fs, const char *path, struct vfs_name *n)
{
	int r = vfs_begin(fs, 16, false);
	if (r || (r = vfs_parent(fs, path, n)) || (r = takes_ioctls(fs, &n->dir, path)))
		return r;
	return name_free_writable(fs, path, n);
}

/* Ends the call: on success the transaction commits. */
int sv_end_commit(ref_fs *fs, int r)
{
	r = vfs_end(fs, r);
	return r ? r : rw_commit(fs);
}

int ref_subvol_create(ref_fs *fs, const char *path, uint64_t *id_out)
{
	struct vfs_name n;
	uint64_t id = 0;
	int r = begin_new(fs, path, &n);
	if (r || (r = new_subvol_id(fs, &id)))
		return sv_end_commit(fs, r);
	struct rw_tree *t;
	if ((r = bt_new_tree(fs, id, &t)) || (r = qg_subvol_created(fs, id)))
		return sv_end_commit(fs, r);
	/* The root directory, its own parent through "..". */
	struct btrfs_timespec now;
	vfs_now(fs, &now);
	struct btrfs_inode_item ii;
	memset(&ii, 0, sizeof(ii));
	ii.generation = ii.transid = htole64(fs->rw->transid);
	ii.nlink = htole32(1);
	ii.mode = htole32(S_IFDIR | 0755);
	set_time(&ii.atime, &now), set_time(&ii.ctime, &now);
	set_time(&ii.mtime, &now), set_time(&ii.otime, &now);
	struct ref_key ik = { BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0 };
	uint8_t ref[sizeof(struct btrfs_inode_ref) + 2];
	struct btrfs_inode_ref ir = { 0, htole16(2) };
	memcpy(ref, &ir, sizeof(ir));
	memcpy(ref + sizeof(ir), "..", 2);
	struct ref_key rk = { BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_REF_KEY,
			      BTRFS_FIRST_FREE_OBJECTID };
	if ((r = bt_insert_data(fs, t, &ik, &ii, sizeof(ii))) ||
	    (r = bt_insert_data(fs, t, &rk, ref, sizeof(ref))))
		return sv_end_commit(fs, r);
	/* Its root item, as create_subvol fills it. */
	struct btrfs_root_item ri;
	memset(&ri, 0, sizeof(ri));
	ri.inode.generation = htole64(1);
	ri.inode.size = htole64(3);
	ri.inode.nlink = htole32(1);
	ri.inode.nbytes = htole64(fs->nodesize);
	ri.inode.mode = htole32(S_IFDIR | 0755);
	ri.inode.flags = htole64(INODE_ROOT_ITEM_INIT);
	ri.generation = ri.generation_v2 = htole64(fs->rw->transid);
	ri.root_dirid = htole64(BTRFS_FIRST_FREE_OBJECTID);
	ri.bytenr = htole64(t->root.bytenr);
	ri.bytes_used = htole64(fs->nodesize);
	ri.refs = htole32(1);
	rw_new_uuid(fs, id, ri.uuid);
	set_time(&ri.otime, &now), set_time(&ri.ctime, &now);
	ri.ctransid = ri.otransid = htole64(fs->rw->transid);
	struct rw_tree *rt;
	struct ref_key key = { id, BTRFS_ROOT_ITEM_KEY, 0 };
	if (!(r = root_tree(fs, &rt)) && !(r = bt_insert_data(fs, rt, &key, &ri, sizeof(ri))) &&
	    !(r = link_subvol(fs, &n, id)))
		r = sv_uuid_add(fs, ri.uuid, BTRFS_UUID_KEY_SUBVOL, id);
	if (!r && id_out)
		*id_out = id;
	return sv_end_commit(fs, r);
}

int ref_snapshot(ref_fs *fs, const char *src, const char *dest, bool readonly, uint64_t *id_out)
{
	struct vfs_name n;
	struct ref_ino sino;
	uint64_t id = 0;
	/* Linux's order: SRC opened (following symlinks), DEST's directory
	 * opened, the ioctl on it, a DEST of "." or ".." (EEXIST), SRC not a
	 * subvolume's root (EINVAL), then DEST itself (EEXIST, EROFS). */
	int r = vfs_begin(fs, 16, false);
	if (r || (r = vfs_resolve(fs, src, true, &sino)) || (r = vfs_parent(fs, dest, &n)) ||
	    (r = takes_ioctls(fs, &n.dir, dest)))
		return sv_end_commit(fs, r);
	if (n.kind == LAST_NORM && sino.ino != BTRFS_FIRST_FREE_OBJECTID)
		return sv_end_commit(fs, ref_fail(fs, EINVAL, "%s: not a subvolume", src));
	if ((r = name_free_writable(fs, dest, &n)))
		return sv_end_commit(fs, r);
	/* The running transaction is committed first: the source then has no
	 * block changed in place (a dirty block), so the copy shares only
	 * committed blocks and the snapshot's own entry, when it lands inside the
	 * source, goes into copies (the kernel forces COW on the source). */
	if ((r = new_subvol_id(fs, &id)) || (!MUTANT(SNAP_NO_COMMIT) && (r = rw_commit(fs))))
		return sv_end_commit(fs, r);
	struct btrfs_root_item ri;
	struct ref_key skey;
	struct rw_tree *st, *t;
	if ((r = sv_root_item_read(fs, sino.subvol, &ri, &skey)) ||
	    (r = rw_tree_get(fs, sino.subvol, &st)) || (r = bt_snapshot_root(fs, st, id, &t)) ||
	    (r = qg_snapshot(fs, sino.subvol, id)))
		return sv_end_commit(fs, r);
	t->rdonly = readonly;
	/* The source remembers the snapshot: its blocks up to now may be shared. */
	ri.last_snapshot = htole64(fs->rw->transid);
	if ((r = sv_root_item_write(fs, &skey, &ri)))
		return sv_end_commit(fs, r);
	/* The snapshot's root item: the source's, with its own identity. */
	struct btrfs_timespec now;
	vfs_now(fs, &now);
	uint64_t flags = LE64(ri.flags) & ~BTRFS_ROOT_SUBVOL_DEAD;
	flags = readonly && !MUTANT(SNAP_RW) ? flags | BTRFS_ROOT_SUBVOL_RDONLY
					     : flags & ~BTRFS_ROOT_SUBVOL_RDONLY;
	ri.flags = htole64(flags);
	ri.inode.flags |= htole64(INODE_ROOT_ITEM_INIT);
	ri.generation = ri.generation_v2 = htole64(fs->rw->transid);
	ri.bytenr = htole64(t->root.bytenr);
	ri.level = t->root.level;
	ri.refs = htole32(1);
	memset(&ri.drop_progress, 0, sizeof(ri.drop_progress));
	ri.drop_level = 0;
	memcpy(ri.parent_uuid, ri.uuid, BTRFS_UUID_SIZE);
	rw_new_uuid(fs, id, ri.uuid);
	if (!readonly) {
		memset(ri.received_uuid, 0, BTRFS_UUID_SIZE);
		memset(&ri.stime, 0, sizeof(ri.stime));
		memset(&ri.rtime, 0, sizeof(ri.rtime));
		ri.stransid = ri.rtransid = 0;
	}
	set_time(&ri.otime, &now);
	ri.otransid = htole64(fs->rw->transid);
	/* The key's offset records when the snapshot was made. */
	struct ref_key key = { id, BTRFS_ROOT_ITEM_KEY, fs->rw->transid };
	struct rw_tree *rt;
	if ((r = root_tree(fs, &rt)) || (r = bt_insert_data(fs, rt, &key, &ri, sizeof(ri))) ||
	    (r = link_subvol(fs, &n, id)) ||
	    (r = sv_uuid_add(fs, ri.uuid, BTRFS_UUID_KEY_SUBVOL, id)))
		return sv_end_commit(fs, r);
	static const uint8_t zero[BTRFS_UUID_SIZE];
	if (memcmp(ri.received_uuid, zero, BTRFS_UUID_SIZE))
		r = sv_uuid_add(fs, ri.received_uuid, BTRFS_UUID_KEY_RECEIVED_SUBVOL, id);
	if (!r && id_out)
		*id_out = id;
	return sv_end_commit(fs, r);
}

int ref_subvol_set_default(ref_fs *fs, uint64_t id)
{
	int r = vfs_begin(fs, 4, false);
	if (r)
		return sv_end_commit(fs, r);
	if (id == 0)
		id = BTRFS_FS_TREE_OBJECTID;
	struct btrfs_root_item ri;
	struct ref_key key;
	struct rw_tree *rt;
	if ((r = sv_root_item_read(fs, id, &ri, &key)) || (r = root_tree(fs, &rt)))
		return sv_end_commit(fs, r);
	if (id != BTRFS_FS_TREE_OBJECTID && (id < BTRFS_FIRST_FREE_OBJECTID ||
					     id > BTRFS_LAST_FREE_OBJECTID))
		return sv_end_commit(fs, ref_fail(fs, EINVAL, "tree %llu is not a subvolume",
					       (unsigned long long)id));
	if (!ri.refs)
		return sv_end_commit(fs, ref_fail(fs, ENOENT, "subvolume %llu is being deleted",
					       (unsigned long long)id));
	/* The "default" entry of the root tree's directory points at it. */
	struct ref_key dk = { BTRFS_ROOT_TREE_DIR_OBJECTID, BTRFS_DIR_ITEM_KEY,
			      ref_name_hash("default", 7) };
	uint32_t off, esize;
	if ((r = dir_item_find(fs, &rt->root, &dk, "default", 7, &off, &esize, NULL, NULL)))
		return sv_end_commit(fs, r == -ENOENT ? ref_fail(fs, ENOENT, "the root tree has no default entry")
						   : r);
	struct ref_path p;
	if ((r = bt_lookup_cow(fs, rt, &dk, &p)))
		return sv_end_commit(fs, r);
	struct btrfs_dir_item *di = (void *)(bt_item(&p, NULL) + off);
	di->location.objectid = htole64(key.objectid);
	di->location.type = key.type;
	di->location.offset = htole64(key.offset);
	ref_path_release(fs, &p);
	fs->sb.incompat_flags =
		htole64(LE64(fs->sb.incompat_flags) | BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL);
	return sv_end_commit(fs, 0);
}

int sv_uuid_remove(ref_fs *fs, const uint8_t uuid[BTRFS_UUID_SIZE], uint8_t type,
			    uint64_t id)
{
	static const uint8_t zero[BTRFS_UUID_SIZE];
	if (!memcmp(uuid, zero, BTRFS_UUID_SIZE))
		return 0;
	struct rw_tree *ut;
	int r = rw_tree_get(fs, BTRFS_UUID_TREE_OBJECTID, &ut);
	if (r)
		return r == -ENOENT ? 0 : r;
	struct ref_key k = { le64(uuid), type, le64(uuid + 8) }, got;
	struct ref_path p;
	if ((r = ref_search(fs, &ut->root, &k, &p)) < 0)
		return r;
	if (r == 1)
		return 0;
	const uint8_t *d;
	uint32_t size, off = UINT32_MAX;
	ref_path_item(&p, &got, &d, &size);
	for (uint32_t i = 0; !ref_key_cmp(&got, &k) && i + 8 <= size; i += 8)
		if (le64(d + i) == id) {
			off = i;
			break;
		}
	ref_path_release(fs, &p);
	return off == UINT32_MAX ? 0 : bt_item_cut(fs, ut, &k, off, 8);
}

/* Whether a subvolume has other subvolumes linked inside it (ROOT_REF items). */
static int has_children(ref_fs *fs, uint64_t id)
{
	struct rw_tree *rt;
	int r = root_tree(fs, &rt);
	if (r)
		return r;
	struct ref_key k = { id, BTRFS_ROOT_REF_KEY, 0 }, got;
	if ((r = bt_peek(fs, &rt->root, &k, false, &got, NULL)) < 0)
		return r;
	return r == 0 && got.objectid == id && got.type == BTRFS_ROOT_REF_KEY;
}

int ref_subvol_delete(ref_fs *fs, const char *path)
{
	struct vfs_name n;
	struct ref_ino ino;
	uint8_t type;
	int r = vfs_begin(fs, 16, true);
	if (r || (r = vfs_parent(fs, path, &n)))
		return sv_end_commit(fs, r);
	if (n.kind == LAST_ROOT)
		return sv_end_commit(fs, ref_fail(fs, EPERM, "%s: the top-level subvolume cannot be deleted", path));
	/* Linux's order (btrfs_ioctl_snap_destroy): the ioctl on the directory,
	 * ".." (EINVAL), the lookup ("." is EACCES, ENOENT), the directory's
	 * subvolume read-only (EROFS), not a directory (ENOTDIR), not a
	 * subvolume's root (EINVAL), the default subvolume (EPERM), subvolumes
	 * inside (ENOTEMPTY). */
	if ((r = takes_ioctls(fs, &n.dir, path)))
		return sv_end_commit(fs, r);
	if (n.kind == LAST_DOTDOT)
		return sv_end_commit(fs, ref_fail(fs, EINVAL, "%s: not a subvolume", path));
	if (n.kind == LAST_DOT)
		return sv_end_commit(fs, ref_fail(fs, EACCES, "%s: '.' cannot be looked up", path));
	if ((r = vfs_lookup(fs, &n.dir, n.name, n.len, &ino, &type)))
		return sv_end_commit(fs, r == -ENOENT ? ref_fail(fs, ENOENT, "%s: no such subvolume", path) : r);
	if ((r = vfs_writable(fs, &n.dir)))
		return sv_end_commit(fs, r);
	if (type != BTRFS_FT_DIR)
		return sv_end_commit(fs, ref_fail(fs, ENOTDIR, "%s: not a directory", path));
	if (ino.subvol == n.dir.subvol || ino.ino != BTRFS_FIRST_FREE_OBJECTID)
		return sv_end_commit(fs, ref_fail(fs, EINVAL, "%s: not a subvolume", path));
	uint64_t id = ino.subvol, def;
	if ((r = ref_subvol_default(fs, &def)))
		return sv_end_commit(fs, r);
	if (def == id)
		return sv_end_commit(fs, ref_fail(fs, EPERM, "%s: the default subvolume cannot be deleted", path));
	if ((r = has_children(fs, id)))
		return sv_end_commit(fs, r < 0 ? r : ref_fail(fs, ENOTEMPTY, "%s: it holds other subvolumes", path));
	struct btrfs_root_item ri;
	struct ref_key key;
	struct rw_tree *rt;
	if ((r = sv_root_item_read(fs, id, &ri, &key)) || (r = root_tree(fs, &rt)))
		return sv_end_commit(fs, r);
	/* Out of the namespace at once: the entry and its links (dir_remove),
	 * the uuids. */
	log_note_dir_changed(fs, &n.dir); /* btrfs_record_snapshot_destroy */
	if ((r = dir_remove(fs, &n.dir, n.name, n.len, &ino)) ||
	    (r = sv_uuid_remove(fs, ri.uuid, BTRFS_UUID_KEY_SUBVOL, id)) ||
	    (r = sv_uuid_remove(fs, ri.received_uuid, BTRFS_UUID_KEY_RECEIVED_SUBVOL, id)))
		return sv_end_commit(fs, r);
	/* Dead: no references, its drop starting from the beginning, and an
	 * orphan item telling the cleaner (also after a crash or remount). */
	ri.refs = 0;
	ri.flags = htole64(LE64(ri.flags) | BTRFS_ROOT_SUBVOL_DEAD);
	memset(&ri.drop_progress, 0, sizeof(ri.drop_progress));
	ri.drop_level = 0;
	struct ref_key ok = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, id };
	if (!(r = sv_root_item_write(fs, &key, &ri)))
		r = bt_insert_data(fs, rt, &ok, NULL, 0);
	fs->rw->orphans_pending = true;
	return sv_end_commit(fs, r == -EEXIST ? ref_fail(fs, EUCLEAN, "subvolume %llu is already deleted",
						       (unsigned long long)id)
					   : r);
}

int ref_subvol_sync(ref_fs *fs)
{
	int r;
	while ((r = cleaner_pending(fs)) > 0)
		if ((r = cleaner_step(fs)) || (r = rw_commit(fs)))
			return r;
	return r;
}
