/*
 * check_fs.c - the subvolume pass of the checker: one fs tree (the top level,
 * a subvolume or snapshot, the data reloc tree) walked once in key order, so
 * that all items of an inode come together, as btrfs check does it
 * (check/main.c process_one_leaf and check_inode_recs, check/mode-lowmem.c
 * check_inode_item):
 *  - INODE_ITEM: at least 160 bytes, key offset 0, a valid mode, generation
 *    and transid not past the superblock generation + 1, no immutable or
 *    append flag on a symlink; every inode with items has one;
 *  - INODE_REF / INODE_EXTREF: entries inside the item, names of 1..255 bytes,
 *    the extref key offset is the hash of (parent, name); the root directory
 *    has only its ".." reference to itself, index 0;
 *  - DIR_ITEM / DIR_INDEX: entries inside the item, names of 1..255 bytes,
 *    data_len 0, a valid file type, the DIR_ITEM key offset is the name hash, a
 *    DIR_INDEX holds one entry, the location is an inode (offset 0) or a
 *    subvolume root (then of type DIR); only directories have them;
 *  - every name is seen three times: the inode's INODE_REF or EXTREF, the
 *    directory's DIR_ITEM and its DIR_INDEX, with the same index and the type of
 *    the inode's mode (subvolume entries excepted: their ROOT_REF pairing is
 *    checked with the root tree);
 *  - nlink equals the number of names; a directory has at most one; nlink 0
 *    only with an ORPHAN_ITEM;
 *  - a directory's i_size is the total name length of its DIR_ITEM and
 *    DIR_INDEX entries, and it has no file extents;
 *  - XATTR_ITEM: entries inside the item, names of 1..255 bytes, type XATTR,
 *    key offset the name hash;
 *  - file extents: check_fs_extent.c.
 * Names are paired through a table of the names still waiting for a part
 * (check_fs_link.c); the rest is per inode, so memory follows the tree.
 */
#include "ref/check/check_fs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

#define DIR_ENTRY_HDR sizeof(struct btrfs_dir_item)             /* 30 bytes */
#define INODE_REF_HDR sizeof(struct btrfs_inode_ref)            /* 10 bytes */
#define INODE_EXTREF_HDR sizeof(struct btrfs_inode_extref)      /* 18 bytes */

_Static_assert(sizeof(struct btrfs_dir_item) == 30, "dir item is 30 bytes");
_Static_assert(sizeof(struct btrfs_inode_ref) == 10, "inode ref is 10 bytes");
_Static_assert(sizeof(struct btrfs_inode_extref) == 18, "inode extref is 18 bytes");

void fs_report(struct fs_check *c, const struct ref_key *k, uint64_t ino, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (k) {
		char kb[96];
		check_error(c->ck, "root %s key %s: %s", c->name, check_key_str(k, kb, sizeof(kb)),
			    msg);
	} else {
		check_error(c->ck, "root %s inode %llu: %s", c->name, (unsigned long long)ino, msg);
	}
}

const char *fs_qname(char *buf, size_t len, const char *name, size_t n)
{
	size_t o = 0;
	buf[o++] = '"';
	for (size_t i = 0; i < n && o + 6 < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

static uint8_t mode_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return BTRFS_FT_REG_FILE;
	case S_IFDIR: return BTRFS_FT_DIR;
	case S_IFCHR: return BTRFS_FT_CHRDEV;
	case S_IFBLK: return BTRFS_FT_BLKDEV;
	case S_IFIFO: return BTRFS_FT_FIFO;
	case S_IFSOCK: return BTRFS_FT_SOCK;
	case S_IFLNK: return BTRFS_FT_SYMLINK;
	default: return 0;
	}
}

const char *fs_ft_name(uint8_t t)
{
	static const char *const names[] = { "UNKNOWN", "REG", "DIR", "CHRDEV", "BLKDEV",
					     "FIFO", "SOCK", "SYMLINK", "XATTR" };
	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

bool fs_is_inode_number(uint64_t ino)
{
	return ino >= BTRFS_FIRST_FREE_OBJECTID && ino <= BTRFS_LAST_FREE_OBJECTID;
}

/* ---- Items ---- */

static void inode_item(struct fs_check *c, const struct ref_key *k, const uint8_t *data,
		       uint32_t size)
{
	struct fs_inode *in = &c->cur;
	if (size < sizeof(struct btrfs_inode_item)) {
		fs_report(c, k, 0, "inode item is %u bytes, expected %zu", size,
			  sizeof(struct btrfs_inode_item));
		in->bad_item = true;
		return;
	}
	if (in->have_item) {
		fs_report(c, k, 0, "a second INODE_ITEM for inode %llu", (unsigned long long)k->objectid);
		return;
	}
	if (k->offset)
		fs_report(c, k, 0, "INODE_ITEM key offset is %llu, expected 0",
			  (unsigned long long)k->offset);
	if (!fs_is_inode_number(k->objectid))
		fs_report(c, k, 0, "inode number %llu is outside [%llu, %llu]",
			  (unsigned long long)k->objectid,
			  (unsigned long long)BTRFS_FIRST_FREE_OBJECTID,
			  (unsigned long long)BTRFS_LAST_FREE_OBJECTID);
	const struct btrfs_inode_item *ii = (const void *)data;
	in->have_item = true;
	in->mode = LE32(ii->mode);
	in->nlink = LE32(ii->nlink);
	in->size = LE64(ii->size);
	in->nbytes = LE64(ii->nbytes);
	in->flags = LE64(ii->flags);
	in->type = mode_type(in->mode);
	if ((in->mode & ~(uint32_t)(S_IFMT | 07777)) || !in->type) {
		fs_report(c, NULL, k->objectid, "invalid mode 0%o", in->mode);
		in->type = 0;
	}
	uint64_t gen = LE64(ii->generation), transid = LE64(ii->transid);
	if (gen > c->gen_limit || transid > c->gen_limit)
		fs_report(c, NULL, k->objectid,
			  "generation %llu / transid %llu past the superblock generation + 1 (%llu)",
			  (unsigned long long)gen, (unsigned long long)transid,
			  (unsigned long long)c->gen_limit);
	if (S_ISLNK(in->mode) && (in->flags & (BTRFS_INODE_IMMUTABLE | BTRFS_INODE_APPEND)))
		fs_report(c, NULL, k->objectid, "symlink with the immutable or append flag (flags 0x%llx)",
			  (unsigned long long)in->flags);
	if (k->objectid == c->root_dirid)
		c->root_dir_seen = true;
}

/* One name of an INODE_REF or INODE_EXTREF item. */
static void ref_name(struct fs_check *c, const struct ref_key *k, uint64_t parent,
		     uint64_t index, const char *name, uint16_t len)
{
	struct fs_inode *in = &c->cur;
	char nb[FS_QNAME_LEN];
	in->refs++;
	if (k->objectid == c->root_dirid) {
		if (k->type == BTRFS_INODE_REF_KEY && parent == c->root_dirid && index == 0 &&
		    len == 2 && !memcmp(name, "..", 2) && !in->root_ref_ok)
			in->root_ref_ok = true;
		else
			fs_report(c, k, 0,
				  "the root directory's only reference must be \"..\" to itself "
				  "with index 0, not %s in dir %llu index %llu",
				  fs_qname(nb, sizeof(nb), name, len), (unsigned long long)parent,
				  (unsigned long long)index);
		return;
	}
	fs_add_link(c, FS_LINK_REF, k, parent, k->objectid, name, len, index,
		    in->have_item ? in->type : 0);
}

static void inode_ref(struct fs_check *c, const struct ref_key *k, const uint8_t *data,
		      uint32_t size)
{
	bool ext = k->type == BTRFS_INODE_EXTREF_KEY;
	uint32_t hdr = ext ? INODE_EXTREF_HDR : INODE_REF_HDR, pos = 0;
	if (!size)
		fs_report(c, k, 0, "empty %s item", ext ? "INODE_EXTREF" : "INODE_REF");
	while (pos < size) {
		if (size - pos < hdr) {
			fs_report(c, k, 0, "reference at byte %u runs past the %u-byte item", pos, size);
			return;
		}
		uint64_t parent, index;
		uint16_t len;
		if (ext) {
			const struct btrfs_inode_extref *e = (const void *)(data + pos);
			parent = LE64(e->parent_objectid);
			index = LE64(e->index);
			len = LE16(e->name_len);
		} else {
			const struct btrfs_inode_ref *r = (const void *)(data + pos);
			parent = k->offset;
			index = LE64(r->index);
			len = LE16(r->name_len);
		}
		if (size - pos - hdr < len) {
			fs_report(c, k, 0, "reference at byte %u: name of %u bytes runs past the %u-byte item",
				  pos, len, size);
			return;
		}
		const char *name = (const char *)data + pos + hdr;
		pos += hdr + len;
		if (!len || len > BTRFS_NAME_LEN) {
			fs_report(c, k, 0, "reference name of %u bytes", len);
			continue;
		}
		if (ext && ref_extref_hash(parent, name, len) != k->offset) {
			char nb[FS_QNAME_LEN];
			fs_report(c, k, 0, "name %s in dir %llu hashes to %llu, not the key offset",
				  fs_qname(nb, sizeof(nb), name, len), (unsigned long long)parent,
				  (unsigned long long)ref_extref_hash(parent, name, len));
		}
		ref_name(c, k, parent, index, name, len);
	}
}

/* DIR_ITEM, DIR_INDEX and XATTR_ITEM share the entry layout. */
static void dir_entries(struct fs_check *c, const struct ref_key *k, const uint8_t *data,
			uint32_t size)
{
	struct fs_inode *in = &c->cur;
	bool xattr = k->type == BTRFS_XATTR_ITEM_KEY, index = k->type == BTRFS_DIR_INDEX_KEY;
	char nb[FS_QNAME_LEN];
	uint32_t pos = 0, n = 0;
	if (!xattr) {
		in->dir_entries = true;
		if (in->have_item && in->type && in->type != BTRFS_FT_DIR && !in->said_not_dir) {
			fs_report(c, NULL, k->objectid, "is %s, not a directory, but has directory entries",
				  fs_ft_name(in->type));
			in->said_not_dir = true;
		}
	}
	if (!size)
		fs_report(c, k, 0, "empty item");
	while (pos < size) {
		const struct btrfs_dir_item *di = (const void *)(data + pos);
		if (size - pos < DIR_ENTRY_HDR) {
			fs_report(c, k, 0, "entry at byte %u runs past the %u-byte item", pos, size);
			return;
		}
		uint16_t nl = LE16(di->name_len), dl = LE16(di->data_len);
		if (size - pos - DIR_ENTRY_HDR < (uint32_t)nl + dl) {
			fs_report(c, k, 0, "entry at byte %u: name and data of %u bytes run past the %u-byte item",
				  pos, nl + dl, size);
			return;
		}
		const char *name = (const char *)(di + 1);
		pos += (uint32_t)DIR_ENTRY_HDR + nl + dl;
		if (++n > 1 && index) {
			fs_report(c, k, 0, "DIR_INDEX holds more than one entry");
			return;
		}
		if (!xattr)
			in->dir_size += nl;
		if (!nl || nl > BTRFS_NAME_LEN) {
			fs_report(c, k, 0, "entry name of %u bytes", nl);
			continue;
		}
		fs_qname(nb, sizeof(nb), name, nl);
		if (!index && ref_name_hash(name, nl) != k->offset) {
			fs_report(c, k, 0, "name %s hashes to %llu, not the key offset", nb,
				  (unsigned long long)ref_name_hash(name, nl));
			continue;
		}
		if (xattr) {
			if (di->type != BTRFS_FT_XATTR)
				fs_report(c, k, 0, "xattr %s has type %u, not XATTR", nb, di->type);
			continue;
		}
		if (dl)
			fs_report(c, k, 0, "name %s has data_len %u, expected 0", nb, dl);
		if (di->type == BTRFS_FT_UNKNOWN || di->type >= BTRFS_FT_XATTR) {
			fs_report(c, k, 0, "name %s has bad file type %u", nb, di->type);
			continue;
		}
		uint64_t loc = LE64(di->location.objectid), loc_off = LE64(di->location.offset);
		if (di->location.type == BTRFS_ROOT_ITEM_KEY) {
			/* A subvolume: paired with ROOT_REF and ROOT_BACKREF elsewhere. */
			if (di->type != BTRFS_FT_DIR)
				fs_report(c, k, 0, "name %s links subvolume %llu with type %s, not DIR",
					  nb, (unsigned long long)loc, fs_ft_name(di->type));
			if (!fs_is_inode_number(loc))
				fs_report(c, k, 0, "name %s links tree %llu, which cannot be a subvolume",
					  nb, (unsigned long long)loc);
			continue;
		}
		if (di->location.type != BTRFS_INODE_ITEM_KEY || loc_off) {
			fs_report(c, k, 0, "name %s has location (%llu %u %llu), neither an inode nor a subvolume",
				  nb, (unsigned long long)loc, di->location.type,
				  (unsigned long long)loc_off);
			continue;
		}
		if (loc == c->root_dirid || !fs_is_inode_number(loc)) {
			fs_report(c, k, 0, "name %s points to inode %llu, %s", nb,
				  (unsigned long long)loc,
				  loc == c->root_dirid ? "the subvolume's root directory"
						       : "outside the inode numbers");
			continue;
		}
		fs_add_link(c, index ? FS_LINK_INDEX : FS_LINK_ITEM, k, k->objectid, loc, name, nl,
			    k->offset, di->type);
	}
}

/* ---- Inodes ---- */

static void finish_inode(struct fs_check *c)
{
	struct fs_inode *in = &c->cur;
	if (!in->active)
		return;
	c->inodes++;
	if (!in->have_item) {
		if (!in->bad_item)
			fs_report(c, NULL, in->ino, "has items but no INODE_ITEM");
		return;
	}
	bool orphan = u64map_get(&c->orphans, in->ino, false) != NULL;
	bool dir = in->type == BTRFS_FT_DIR;
	if (in->nlink != in->refs)
		fs_report(c, NULL, in->ino, "nlink %u but %llu reference%s found", in->nlink,
			  (unsigned long long)in->refs, in->refs == 1 ? "" : "s");
	else if (dir && in->nlink > 1)
		fs_report(c, NULL, in->ino, "directory with %u names", in->nlink);
	if (in->nlink == 0 && !orphan && !c->orphans_unknown)
		fs_report(c, NULL, in->ino, "nlink 0 and no orphan item");
	if (in->ino == c->root_dirid) {
		if (!dir)
			fs_report(c, NULL, in->ino, "the root directory is %s, not a directory",
				  fs_ft_name(in->type));
		if (!in->root_ref_ok)
			fs_report(c, NULL, in->ino, "the root directory has no \"..\" INODE_REF to itself");
	}
	if (dir) {
		if (in->size != in->dir_size)
			fs_report(c, NULL, in->ino,
				  "directory i_size %llu but its DIR_ITEM and DIR_INDEX names total %llu",
				  (unsigned long long)in->size, (unsigned long long)in->dir_size);
		if (in->n_extents)
			fs_report(c, NULL, in->ino, "directory with %llu file extent item%s",
				  (unsigned long long)in->n_extents, in->n_extents == 1 ? "" : "s");
	} else if (in->type) {
		fs_extents_done(c, orphan);
	}
}

static void start_inode(struct fs_check *c, uint64_t ino)
{
	c->cur = (struct fs_inode){ .ino = ino, .active = true };
}

static void item(struct fs_check *c, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	switch (k->type) {
	case BTRFS_INODE_ITEM_KEY:
		inode_item(c, k, data, size);
		break;
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		inode_ref(c, k, data, size);
		break;
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_XATTR_ITEM_KEY:
		dir_entries(c, k, data, size);
		break;
	case BTRFS_EXTENT_DATA_KEY:
		fs_file_extent(c, k, data, size);
		break;
	case BTRFS_VERITY_DESC_ITEM_KEY:
	case BTRFS_VERITY_MERKLE_ITEM_KEY:
		break;
	default:
		fs_report(c, k, 0, "item type %u does not belong in a subvolume tree", k->type);
	}
}

/* ---- The tree ---- */

static void tree_name(char *buf, size_t len, uint64_t id)
{
	if (id > BTRFS_LAST_FREE_OBJECTID)
		snprintf(buf, len, "%lld", (long long)id);
	else
		snprintf(buf, len, "%llu", (unsigned long long)id);
}

/* The tree's ROOT_ITEM: its root directory, and whether it is a deleted
 * subvolume (refs 0) that the cleaner may have half dropped. */
static int root_item(struct fs_check *c, bool *dead)
{
	struct ref_path path;
	struct ref_key key = { c->id, BTRFS_ROOT_ITEM_KEY, 0 }, k;
	*dead = false;
	c->root_dirid = BTRFS_FIRST_FREE_OBJECTID;
	int r = ref_search(c->fs, &c->fs->tree_root, &key, &path);
	if (r)
		return r < 0 ? r : 0;
	const uint8_t *data;
	uint32_t size;
	ref_path_item(&path, &k, &data, &size);
	if (k.objectid == c->id && k.type == BTRFS_ROOT_ITEM_KEY &&
	    size >= offsetof(struct btrfs_root_item, refs) + sizeof(uint32_t)) {
		const struct btrfs_root_item *ri = (const void *)data;
		uint64_t dirid = LE64(ri->root_dirid);
		if (fs_is_inode_number(dirid))
			c->root_dirid = dirid;
		*dead = LE32(ri->refs) == 0;
	}
	ref_path_release(c->fs, &path);
	return 0;
}

/* The ORPHAN_ITEMs (-5 ORPHAN_ITEM ino), at the very end of the tree. */
static int load_orphans(struct fs_check *c)
{
	struct ref_path path;
	struct ref_key key = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, 0 }, k;
	int r = ref_search(c->fs, &c->root, &key, &path);
	while (r == 0) {
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid != BTRFS_ORPHAN_OBJECTID || k.type != BTRFS_ORPHAN_ITEM_KEY)
			break;
		if (!u64map_get(&c->orphans, k.offset, true)) {
			c->oom = true;
			break;
		}
		r = ref_next(c->fs, &path);
	}
	ref_path_release(c->fs, &path);
	return r < 0 ? r : 0;
}

int check_fs_tree(struct check *ck, uint64_t subvol)
{
	struct fs_check c = { .ck = ck, .fs = ck->fs, .id = subvol };
	ref_fs *fs = ck->fs;
	tree_name(c.name, sizeof(c.name), subvol);
	c.sectorsize = fs->sectorsize ? fs->sectorsize : 4096;
	c.gen_limit = LE64(ref_super(fs)->generation) + 1;
	c.no_holes = LE64(ref_super(fs)->incompat_flags) & BTRFS_FEATURE_INCOMPAT_NO_HOLES;

	int r = ref_find_root(fs, subvol, &c.root);
	if (r) {
		check_error(ck, "root %s: cannot find the tree: %s", c.name, ref_error(fs));
		return 0;
	}
	bool dead;
	if ((r = root_item(&c, &dead)) < 0) {
		check_error(ck, "root %s: cannot read its ROOT_ITEM: %s", c.name, ref_error(fs));
		return 0;
	}
	if (dead) {
		if (ck->verbose)
			fprintf(ck->out, "fs tree %s: deleted subvolume, inodes not checked\n", c.name);
		return 0;
	}
	/* Unreadable orphan items are reported after the walk, unless the walk
	 * itself stops on a bad block (most likely the same one). */
	char orphan_err[256] = "";
	if ((r = load_orphans(&c)) < 0) {
		snprintf(orphan_err, sizeof(orphan_err), "%s", ref_error(fs));
		c.orphans_unknown = true;
	}

	struct ref_path path;
	struct ref_key k = { 0, 0, 0 };
	r = c.oom ? -ENOMEM : ref_search(fs, &c.root, &k, &path);
	while (r == 0 && !c.oom) {
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid > BTRFS_LAST_FREE_OBJECTID)
			break; /* orphan items, and the free-ino cache of old kernels */
		if (!c.cur.active || k.objectid != c.cur.ino) {
			finish_inode(&c);
			start_inode(&c, k.objectid);
		}
		item(&c, &k, data, size);
		r = ref_next(fs, &path);
	}
	if (r == 0)
		ref_path_release(fs, &path);
	if (c.oom) {
		fs_links_free(&c.links);
		u64map_free(&c.orphans);
		return -ENOMEM;
	}
	if (r < 0 && !c.cur.active) {
		check_error(ck, "root %s: cannot read the tree: %s", c.name, ref_error(fs));
	} else if (r < 0) {
		char kb[96];
		check_error(ck, "root %s: cannot read the tree past key %s: %s; inodes checked up to there",
			    c.name, check_key_str(&k, kb, sizeof(kb)), ref_error(fs));
	} else {
		if (orphan_err[0])
			check_error(ck, "root %s: cannot read its orphan items: %s; nlink 0 not checked",
				    c.name, orphan_err);
		finish_inode(&c);
		if (!c.root_dir_seen)
			fs_report(&c, NULL, c.root_dirid, "the root directory has no INODE_ITEM");
		fs_report_links(&c);
	}
	if (ck->verbose)
		fprintf(ck->out, "fs tree %s: %llu inodes, %llu names, %llu file extents\n", c.name,
			(unsigned long long)c.inodes, (unsigned long long)c.names,
			(unsigned long long)c.extents);
	fs_links_free(&c.links);
	u64map_free(&c.orphans);
	return c.oom ? -ENOMEM : 0;
}
