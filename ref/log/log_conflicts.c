/*
 * log_conflicts.c - names that another inode had at the last commit.  When
 * an fsync logs a name (parent, name) that the commit root gives to another
 * inode, replay will unlink that other inode's entry to make room
 * (__add_inode_ref), so the other inode must be in the log too or it is
 * lost with its subtree: after `rename --exchange A B` and an fsync of one
 * of them, for instance.  As the kernel's btrfs_check_ref_name_override and
 * log_conflicting_inodes (Linux 6.18, checked for every logged inode, not
 * only new ones): an other inode that still exists is logged "exists only"
 * (its names), and its own names are checked in turn; a directory deleted
 * since the commit has its old parent logged whole instead (a deleted file
 * needs nothing: replay just unlinks its entry); a subvolume's entry, or
 * more than ten such inodes, and the fsync commits.
 */
#include "ref/log/log_write.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_CONFLICTS = 10 };

struct conflicts {
	ref_fs *fs;
	struct ref_root commit;
	uint64_t self;	   /* the inode whose names these are */
	uint64_t fsynced;  /* the fsync's own inode: never a conflict */
	struct conflict {
		uint64_t ino, parent;
	} v[MAX_CONFLICTS];
	size_t n;
	size_t total; /* conflicts met by this fsync */
	bool too_many, subvol;
};

static int add(struct conflicts *c, uint64_t ino, uint64_t parent)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].ino == ino)
			return 0;
	if (c->n == MAX_CONFLICTS || ++c->total > MAX_CONFLICTS) {
		c->too_many = true; /* the kernel's MAX_CONFLICT_INODES */
		return 0;
	}
	c->v[c->n++] = (struct conflict){ ino, parent };
	return 0;
}

/* One name of c->self: who has it in the commit root. */
static int check_name(struct conflicts *c, uint64_t parent, const char *name, size_t len)
{
	struct ref_key k = { parent, BTRFS_DIR_ITEM_KEY, ref_name_hash(name, len) };
	uint32_t off, esize;
	struct ref_path p;
	int r = dir_item_find(c->fs, &c->commit, &k, name, len, &off, &esize, NULL, NULL);
	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	/* The entry's location key, read from the item found. */
	const uint8_t *d;
	uint32_t size;
	struct ref_key got;
	if ((r = ref_search(c->fs, &c->commit, &k, &p)) != 0)
		return r < 0 ? r : 0;
	ref_path_item(&p, &got, &d, &size);
	struct btrfs_disk_key loc;
	memcpy(&loc, d + off, sizeof(loc));
	ref_path_release(c->fs, &p);
	uint64_t other = LE64(loc.objectid);
	if (loc.type == BTRFS_ROOT_ITEM_KEY) {
		c->subvol = true; /* replay cannot drop a subvolume's entry */
		return 0;
	}
	if (loc.type != BTRFS_INODE_ITEM_KEY || other == c->self || other == c->fsynced)
		return 0;
	return add(c, other, parent);
}

/* Every name of c->self in the running transaction's tree. */
static int names_of(void *ctx, const struct ref_key *k, const uint8_t *d, uint32_t size)
{
	struct conflicts *c = ctx;
	for (uint32_t pos = 0; pos < size;) {
		uint64_t parent;
		uint32_t head;
		uint16_t nl;
		if (k->type == BTRFS_INODE_REF_KEY) {
			head = sizeof(struct btrfs_inode_ref);
			if (pos + head > size)
				break;
			parent = k->offset;
			nl = LE16(((const struct btrfs_inode_ref *)(d + pos))->name_len);
		} else {
			head = sizeof(struct btrfs_inode_extref);
			if (pos + head > size)
				break;
			const struct btrfs_inode_extref *x = (const void *)(d + pos);
			parent = LE64(x->parent_objectid);
			nl = LE16(x->name_len);
		}
		if (pos + head + nl > size)
			break;
		int r = check_name(c, parent, (const char *)d + pos + head, nl);
		if (r)
			return r;
		pos += head + nl;
	}
	return 0;
}

/* Whether inode ino of the commit root was a directory. */
static int was_dir(ref_fs *fs, const struct ref_root *commit, uint64_t ino)
{
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	int r = ref_find_first(fs, commit, ino, BTRFS_INODE_ITEM_KEY, &p, &k, &d, &size);
	if (r)
		return r == -ENOENT ? 0 : r;
	bool dir = size >= sizeof(struct btrfs_inode_item) &&
		   S_ISDIR(LE32(((const struct btrfs_inode_item *)d)->mode));
	ref_path_release(fs, &p);
	return dir;
}

int log_conflicts(ref_fs *fs, struct log_sub *s, const struct ref_ino *fsynced, enum ref_log_full *why)
{
	struct log_state *ls = fs->rw->log;
	struct conflicts c = { .fs = fs, .fsynced = fsynced->ino };
	int r = ref_find_commit_root(fs, fsynced->subvol, &c.commit);
	if (r)
		return r == -ENOENT ? 0 : r; /* a subvolume new in this transaction: nothing to meet */
	/* The inodes this fsync logged, those it logs here included. */
	for (size_t i = 0; !r && ls && i < ls->nthis; i++) {
		struct ref_ino in = ls->this_sync[i];
		if (in.subvol != fsynced->subvol)
			continue;
		c.self = in.ino;
		c.n = 0;
		r = log_each_item(fs, &in, BTRFS_INODE_REF_KEY, BTRFS_INODE_EXTREF_KEY, names_of, &c);
		if (!r && (c.subvol || c.too_many)) {
			*why = c.subvol ? REF_LOG_FULL_SUBVOL : REF_LOG_FULL_CONFLICTS;
			return 1;
		}
		for (size_t j = 0; !r && j < c.n; j++) {
			struct ref_ino o = { in.subvol, c.v[j].ino };
			const struct log_ino *li = log_ino_get(fs, &o, false);
			if (li && li->logged)
				continue;
			struct btrfs_inode_item ii;
			r = inode_read(fs, &o, &ii);
			if (r == -ENOENT) {
				/* Gone since the commit: a directory's old parent whole. */
				int d = was_dir(fs, &c.commit, o.ino);
				r = d < 0 ? d : 0;
				if (d > 0)
					r = log_dir_all(fs, s, &(struct ref_ino){ in.subvol, c.v[j].parent }, why);
			} else if (!r) {
				r = log_exists(fs, s, &o);
			}
		}
	}
	return r;
}
