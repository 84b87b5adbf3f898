/*
 * log_names.c - what the fsync log must know when names change in the
 * running transaction: the kernel's btrfs_record_unlink_dir,
 * btrfs_log_new_name and btrfs_del_*_in_log, kept as flags on the inodes
 * (struct log_ino) that log_write.c and log_dir.c read at the next fsync.
 *
 * "unlinked" is the kernel's last_unlink_trans: set on an inode when a name
 * of it is unlinked or moved to another directory, and on a non-directory
 * when it gains a name (link, rename).  An fsync of such a file logs its
 * parent directories of the last commit whole, so that replay drops the
 * names it lost (log_all_parents).  It is set on a directory when a name
 * moves out of it by a rename while neither it nor the moved inode was
 * logged (replay could not find the name's new place), when a subvolume
 * appears or goes in it, and through rmdir from the child: such a directory
 * is never logged whole; the fsync commits, as the kernel's does.
 *
 * A name removed from a directory or an inode the log already holds is
 * removed from the log too (the kernel's btrfs_del_dir_entries_in_log and
 * btrfs_del_inode_ref_in_log); a new name of a logged inode, or a rename out
 * of a logged directory, updates the log at once (btrfs_log_new_name): the
 * old directory's entry leaves it (or a one-index DIR_LOG_INDEX range says
 * it is gone), the inode's names are logged anew with its old parents and
 * new ancestors.  Only the next fsync writes the log to disk.  What cannot
 * be noted (no memory, an error) makes the next fsync commit instead.
 */
#include "ref/log/log_write.h"

#include <errno.h>
#include <string.h>

void log_note_must_commit(ref_fs *fs, enum ref_log_full why)
{
	if (!fs->rw->log_must_commit) {
		fs->rw->log_must_commit = true;
		fs->rw->log_must_commit_why = why;
	}
}

static bool logged(ref_fs *fs, const struct ref_ino *in)
{
	const struct log_ino *li = log_ino_get(fs, in, false);
	return li && li->logged;
}

/* Sets in's last_unlink_trans; without memory to note it, the next fsync
 * commits (which makes every name durable). */
static void set_unlinked(ref_fs *fs, const struct ref_ino *in)
{
	struct log_ino *li = log_ino_get(fs, in, true);
	if (li)
		li->unlinked = true;
	else
		log_note_must_commit(fs, REF_LOG_FULL_ERROR);
}

void log_note_unlink(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *target,
		     bool for_rename)
{
	set_unlinked(fs, target);
	if (for_rename && !logged(fs, dir) && !logged(fs, target))
		set_unlinked(fs, dir);
}

/* The end of the entry of (parent, name) in a ref item's data at pos (0:
 * none there); *is: whether it is that entry. */
static uint32_t ref_entry(const struct log_item *it, uint32_t pos, uint64_t parent,
			  const char *name, size_t len, bool *is)
{
	bool ext = it->key.type == BTRFS_INODE_EXTREF_KEY;
	uint32_t head = ext ? sizeof(struct btrfs_inode_extref) : sizeof(struct btrfs_inode_ref);
	if (pos + head > it->size)
		return 0;
	const uint8_t *d = it->data + pos;
	uint16_t nl = ext ? LE16(((const struct btrfs_inode_extref *)d)->name_len)
			  : LE16(((const struct btrfs_inode_ref *)d)->name_len);
	if (pos + head + nl > it->size)
		return 0;
	uint64_t p = ext ? LE64(((const struct btrfs_inode_extref *)d)->parent_objectid)
			 : it->key.offset;
	*is = p == parent && nl == len && !memcmp(d + head, name, len);
	return pos + head + nl;
}

/* Removes (parent, name) from the logged ref items of ino. */
static void drop_logged_ref(struct log_sub *s, uint64_t ino, uint64_t parent, const char *name,
			    size_t len)
{
	for (size_t i = 0; i < s->n; i++) {
		struct log_item *it = &s->it[i];
		if (it->key.objectid != ino ||
		    (it->key.type != BTRFS_INODE_REF_KEY && it->key.type != BTRFS_INODE_EXTREF_KEY))
			continue;
		bool is = false;
		for (uint32_t pos = 0, end; (end = ref_entry(it, pos, parent, name, len, &is)); pos = end) {
			if (!is)
				continue;
			memmove(it->data + pos, it->data + end, it->size - end);
			it->size -= end - pos;
			if (!it->size)
				log_sub_drop(s, it);
			return;
		}
	}
}

void log_note_removed(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
		      uint64_t index, const struct ref_ino *target)
{
	struct log_sub *s = logged(fs, dir) || logged(fs, target) ? log_sub_get(fs, dir->subvol) : NULL;
	if (!s)
		return;
	struct ref_key k = { dir->ino, BTRFS_DIR_INDEX_KEY, index };
	struct log_item *it = log_sub_find(s, &k);
	if (it && logged(fs, dir))
		log_sub_drop(s, it);
	if (logged(fs, target))
		drop_logged_ref(s, target->ino, dir->ino, name, len);
}

/* The one-index range [index, index] of dir (insert_dir_log_key: a range
 * starting there already ends where it ends, or here). */
static int add_range(ref_fs *fs, struct log_sub *s, uint64_t dir, uint64_t index)
{
	struct ref_key k = { dir, BTRFS_DIR_LOG_INDEX_KEY, index };
	if (log_sub_find(s, &k))
		return 0;
	struct btrfs_dir_log_item range = { .end = htole64(index) };
	return log_sub_add(fs, s, &k, &range, sizeof(range));
}

/* The names (and xattrs) of an inode logged whole, logged anew; one not
 * logged whole, "exists only". */
static int relog_names(ref_fs *fs, struct log_sub *s, const struct ref_ino *in)
{
	struct ref_key k = { in->ino, BTRFS_INODE_ITEM_KEY, 0 };
	const struct log_item *it = log_sub_find(s, &k);
	if (!it || !LE64(((const struct btrfs_inode_item *)it->data)->generation))
		return log_exists(fs, s, in);
	struct btrfs_inode_item keep = *(const struct btrfs_inode_item *)it->data, ii;
	int r = inode_read(fs, in, &ii);
	if (r)
		return r;
	log_sub_forget(s, in->ino, BTRFS_XATTR_ITEM_KEY); /* (it goes too) */
	if ((r = log_sub_add(fs, s, &k, &keep, sizeof(keep))))
		return r;
	return log_copy_items(fs, s, in, BTRFS_INODE_REF_KEY, BTRFS_XATTR_ITEM_KEY, &ii, NULL);
}

void log_note_new_name(ref_fs *fs, const struct ref_ino *target, uint8_t type,
		       const struct ref_ino *old_dir, uint64_t old_index)
{
	if (type != BTRFS_FT_DIR)
		set_unlinked(fs, target);
	if (old_dir) {
		struct log_ino *li = log_ino_get(fs, target, true);
		if (li)
			li->moved = true;
		else
			log_note_must_commit(fs, REF_LOG_FULL_ERROR);
	}
	bool dir_logged = old_dir && logged(fs, old_dir);
	if (!logged(fs, target) && !dir_logged)
		return;
	struct log_sub *s = log_sub_get(fs, target->subvol);
	enum ref_log_full why = REF_LOG_FULL_ERROR;
	int r = s ? 0 : -ENOMEM;
	if (!r && dir_logged) {
		/* The old name leaves the old directory's log, or a range says it is gone. */
		struct ref_key k = { old_dir->ino, BTRFS_DIR_INDEX_KEY, old_index };
		struct log_item *it = log_sub_find(s, &k);
		if (it)
			log_sub_drop(s, it);
		else
			r = add_range(fs, s, old_dir->ino, old_index);
	}
	/* btrfs_log_inode_parent in LOG_INODE_EXISTS: the names, the old
	 * parents of an inode with last_unlink_trans (a file always here; a
	 * directory moved to another parent: else replay leaves its old entry
	 * and it has two names), the new directories above. */
	const struct log_ino *tl = log_ino_get(fs, target, false);
	if (!r)
		r = relog_names(fs, s, target);
	if (!r && (type != BTRFS_FT_DIR || (tl && tl->unlinked)))
		r = log_all_parents(fs, s, target, &why);
	if (!r)
		r = log_new_ancestors(fs, s, target, &why);
	if (r)
		log_note_must_commit(fs, r == 1 ? why : REF_LOG_FULL_ERROR);
}

void log_note_rmdir(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *child)
{
	const struct log_ino *li = log_ino_get(fs, child, false);
	if (li && li->unlinked)
		set_unlinked(fs, dir);
}

void log_note_dir_changed(ref_fs *fs, const struct ref_ino *dir)
{
	set_unlinked(fs, dir);
}
