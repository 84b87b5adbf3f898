/*
 * log_dir.c - directories in the fsync log, as the kernel's btrfs_log_inode
 * logs one whole (LOG_INODE_ALL: log_directory_changes, then
 * log_new_dir_dentries), and btrfs_log_all_parents, which logs whole the
 * directories a file had names in at the last commit.
 *
 * A directory logged whole holds its inode item, names and xattrs; the
 * DIR_INDEX items this transaction made (the entry's transid is the running
 * one); and DIR_LOG_INDEX ranges over every index that is not an entry of
 * the last commit still there: on replay, an entry of the subvolume inside a
 * range that the log lacks is unlinked (log_replay_items.c), which is how a
 * name removed since the commit is removed again.  The kernel draws its
 * ranges by leaves changed in this transaction; ranges over the gaps between
 * the commit's entries replay the same.  DIR_ITEM (name hash) keys are never
 * logged; replay makes them.
 *
 * The inodes the new entries name are logged too: a directory whole (and so
 * on down), a symlink whole, anything else "exists only" - so that a file
 * created and never fsynced comes back empty, as on Linux.  An inode already
 * logged in this transaction is left as it is (the kernel's need_log_inode).
 * Each sync rebuilds the directory's part of the log from the tree, so what
 * an earlier sync logged of it is dropped first.
 */
#include "ref/log/log_write.h"
#include "ref/mutant.h"

#include <errno.h>
#include <stdlib.h>

struct new_entry {
	uint64_t ino;
	uint8_t type;
};

struct dir_walk {
	ref_fs *fs;
	struct log_sub *s;
	uint64_t dir;
	uint64_t last_old; /* index of the last entry of the commit seen (1: none yet) */
	struct new_entry *v;
	size_t n, cap;
	bool subvol; /* a new entry names a subvolume or a snapshot's stand-in for one */
};

static int add_range(ref_fs *fs, struct log_sub *s, uint64_t dir, uint64_t first, uint64_t last)
{
	if (MUTANT(LOG_NO_DIR_RANGES))
		return 0;
	struct btrfs_dir_log_item it = { .end = htole64(last) };
	struct ref_key k = { dir, BTRFS_DIR_LOG_INDEX_KEY, first };
	return log_sub_add(fs, s, &k, &it, sizeof(it));
}

static int one_index(void *ctx, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	struct dir_walk *w = ctx;
	if (size < sizeof(struct btrfs_dir_item))
		return ref_fail(w->fs, EUCLEAN, "directory %llu: index item %llu is %u bytes",
				(unsigned long long)w->dir, (unsigned long long)k->offset, size);
	const struct btrfs_dir_item *di = (const void *)d;
	int r;
	if (LE64(di->transid) < w->fs->rw->transid) { /* the last commit's entry */
		if (k->offset > w->last_old + 1 &&
		    (r = add_range(w->fs, w->s, w->dir, w->last_old + 1, k->offset - 1)))
			return r;
		w->last_old = k->offset;
		return 0;
	}
	if ((r = log_sub_add(w->fs, w->s, k, d, size)))
		return r;
	if (di->location.type == BTRFS_ROOT_ITEM_KEY ||
	    LE64(di->location.objectid) == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID) {
		w->subvol = true;
		return 0;
	}
	if (GROW(w->v, w->n, w->cap))
		return ref_fail(w->fs, ENOMEM, "out of memory");
	w->v[w->n++] = (struct new_entry){ LE64(di->location.objectid), di->type };
	return 0;
}

/* The inode a new entry names, as log_new_dir_dentries logs it. */
static int log_new_entry(ref_fs *fs, struct log_sub *s, const struct ref_ino *t, uint8_t type,
			 enum ref_log_full *why)
{
	const struct log_ino *li = log_ino_get(fs, t, false);
	if (li && li->logged)
		return 0;
	if (type == BTRFS_FT_DIR)
		return log_dir_all(fs, s, t, why);
	if (type != BTRFS_FT_SYMLINK)
		return log_exists(fs, s, t);
	struct btrfs_inode_item ii; /* a symlink is always logged whole */
	int r = inode_read(fs, t, &ii);
	return r ? r : log_inode_all(fs, s, t, &ii);
}

int log_dir_all(ref_fs *fs, struct log_sub *s, const struct ref_ino *dir, enum ref_log_full *why)
{
	const struct log_ino *li = log_ino_get(fs, dir, false);
	if (li && li->unlinked) {
		*why = REF_LOG_FULL_DIR_UNLINK;
		return 1;
	}
	int u = log_unloggable(fs, dir);
	if (u) {
		*why = REF_LOG_FULL_SUBVOL;
		return u;
	}
	struct btrfs_inode_item ii;
	int r = inode_read(fs, dir, &ii);
	if (r)
		return r;
	log_sub_forget(s, dir->ino, UINT8_MAX);
	if ((r = log_mark_logged(fs, dir)) || (r = log_inode_item(fs, s, dir, &ii, false)) ||
	    (r = log_copy_items(fs, s, dir, BTRFS_INODE_REF_KEY, BTRFS_XATTR_ITEM_KEY, &ii, NULL)))
		return r;
	struct dir_walk w = { .fs = fs, .s = s, .dir = dir->ino, .last_old = 1 }; /* 0, 1: "." and ".." */
	r = log_each_item(fs, dir, BTRFS_DIR_INDEX_KEY, BTRFS_DIR_INDEX_KEY, one_index, &w);
	if (!r)
		r = add_range(fs, s, dir->ino, w.last_old + 1, UINT64_MAX);
	if (!r && w.subvol) {
		*why = REF_LOG_FULL_SUBVOL; /* replay cannot make a subvolume's entry */
		r = 1;
	}
	for (size_t i = 0; !r && i < w.n; i++)
		r = log_new_entry(fs, s, &(struct ref_ino){ dir->subvol, w.v[i].ino }, w.v[i].type, why);
	free(w.v);
	return r;
}

int log_all_parents(ref_fs *fs, struct log_sub *s, const struct ref_ino *in, enum ref_log_full *why)
{
	uint64_t *par;
	size_t n;
	int r = log_parents_of(fs, in, true, &par, &n);
	for (size_t i = 0; !r && i < n; i++) {
		struct ref_ino d = { in->subvol, par[i] };
		struct btrfs_inode_item ii;
		if ((r = inode_read(fs, &d, &ii)) == -ENOENT) {
			*why = REF_LOG_FULL_PARENT_GONE;
			r = 1;
			break;
		}
		if (r)
			break;
		const struct log_ino *li = log_ino_get(fs, &d, false);
		if (LE64(ii.transid) < fs->rw->transid || (li && li->logged))
			continue; /* unchanged since the commit, or logged already */
		r = log_dir_all(fs, s, &d, why);
	}
	free(par);
	return r;
}
