/*
 * tree_check.c - the items of a leaf, judged one by one as the kernel's
 * tree-checker judges them when it reads a leaf (fs/btrfs/tree-checker.c,
 * check_leaf_item and the functions it calls): a leaf holding an item it
 * rejects is unreadable (EUCLEAN), for the reader and for `btrsim check`.
 * Only what the kernel rejects is rejected here, each rule beside the
 * kernel function it mirrors; ref/README.md lists them.
 */
#include "ref/compress.h"
#include "ref/csum.h"
#include "ref/internal.h"

#include <linux/limits.h>
#include <stddef.h>
#include <sys/stat.h>

#define HDR sizeof(struct btrfs_header_disk)
#define ALIGNED(v, a) ((v) % (a) == 0)
/* FE_INLINE_START: an inline extent's data follows this */
#define FE_INLINE_START offsetof(struct btrfs_file_extent_item, disk_bytenr)

/* Subvolume trees (is_fstree): the top level and the ids a subvolume has. */
static bool fstree(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       ((int64_t)id >= (int64_t)BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

struct leaf {
	const ref_fs *fs;
	const uint8_t *d;
	uint64_t owner;
	uint32_t slot;
	struct ref_key key, prev; /* prev: {0, 0, 0} at slot 0 */
	const uint8_t *item;      /* the item's data */
	uint32_t size;
};

static const uint8_t *item_data(const uint8_t *d, uint32_t slot, uint32_t *size)
{
	const struct btrfs_item_disk *it = (const void *)(d + HDR + slot * sizeof(*it));
	*size = LE32(it->size);
	return d + HDR + LE32(it->offset);
}

/* check_prev_ino: in a subvolume tree, an item of these kinds follows an
 * item of the same inode (else its INODE_ITEM is missing). */
static const char *prev_ino(const struct leaf *l)
{
	if (l->slot == 0 || !fstree(l->owner) || l->key.objectid == l->prev.objectid)
		return NULL;
	return "an inode's item follows another inode's (its inode item is missing)";
}

/* file_extent_end */
static uint64_t extent_end(const struct leaf *l, const struct ref_key *k, const uint8_t *fi)
{
	const struct btrfs_file_extent_item *e = (const void *)fi;
	if (e->type == BTRFS_FILE_EXTENT_INLINE) {
		uint64_t end = k->offset + LE64(e->ram_bytes), s = l->fs->sectorsize;
		return (end + s - 1) / s * s;
	}
	return k->offset + LE64(e->num_bytes);
}

/* check_extent_data_item */
static const char *file_extent(const struct leaf *l)
{
	const uint32_t s = l->fs->sectorsize;
	const struct btrfs_file_extent_item *fi = (const void *)l->item;
	const char *why;
	if (!ALIGNED(l->key.offset, s))
		return "file extent: file offset not aligned to the sectorsize";
	if ((why = prev_ino(l)))
		return why;
	if (l->size < FE_INLINE_START)
		return "file extent: item smaller than its header";
	if (fi->type > BTRFS_FILE_EXTENT_PREALLOC)
		return "file extent: unknown type";
	if (fi->compression > REF_COMPRESS_ZSTD)
		return "file extent: unknown compression";
	if (fi->encryption)
		return "file extent: encryption set";
	if (fi->type == BTRFS_FILE_EXTENT_INLINE) {
		if (l->key.offset)
			return "file extent: an inline extent not at file offset 0";
		if (fi->compression == REF_COMPRESS_NONE &&
		    l->size != FE_INLINE_START + LE64(fi->ram_bytes))
			return "file extent: an uncompressed inline extent's ram_bytes is not its size";
		return NULL;
	}
	if (l->size != sizeof(*fi))
		return "file extent: a regular or prealloc item of the wrong size";
	if (!ALIGNED(LE64(fi->ram_bytes), s) || !ALIGNED(LE64(fi->disk_bytenr), s) ||
	    !ALIGNED(LE64(fi->disk_num_bytes), s) || !ALIGNED(LE64(fi->offset), s) ||
	    !ALIGNED(LE64(fi->num_bytes), s))
		return "file extent: a size or offset not aligned to the sectorsize";
	if (LE64(fi->num_bytes) > UINT64_MAX - l->key.offset)
		return "file extent: its end overflows";
	if (l->slot > 0 && l->prev.objectid == l->key.objectid &&
	    l->prev.type == BTRFS_EXTENT_DATA_KEY) {
		uint32_t psize;
		const uint8_t *prev = item_data(l->d, l->slot - 1, &psize);
		if (psize >= FE_INLINE_START &&
		    extent_end(l, &l->prev, prev) > l->key.offset)
			return "file extent: the previous extent ends past this one's start";
	}
	return NULL;
}

/* check_csum_item */
static const char *csum_item(const struct leaf *l)
{
	const uint32_t s = l->fs->sectorsize, cs = l->fs->csum_size;
	if (l->key.objectid != BTRFS_EXTENT_CSUM_OBJECTID)
		return "csum item: key objectid is not EXTENT_CSUM";
	if (!ALIGNED(l->key.offset, s))
		return "csum item: offset not aligned to the sectorsize";
	if (!ALIGNED(l->size, cs))
		return "csum item: size not a multiple of the checksum size";
	if (l->slot > 0 && l->prev.type == BTRFS_EXTENT_CSUM_KEY) {
		uint32_t psize;
		item_data(l->d, l->slot - 1, &psize);
		if (l->prev.offset + (uint64_t)(psize / cs) * s > l->key.offset)
			return "csum item: the previous item's range runs into this one";
	}
	return NULL;
}

/* check_inode_key: a location key naming an inode (or an xattr's, all 0) */
static const char *inode_key(const struct ref_key *k, uint8_t item_type)
{
	if (item_type == BTRFS_XATTR_ITEM_KEY)
		return k->objectid || k->type || k->offset ? "xattr item: location key not zero" : NULL;
	if ((k->objectid < BTRFS_FIRST_FREE_OBJECTID || k->objectid > BTRFS_LAST_FREE_OBJECTID) &&
	    k->objectid != BTRFS_ROOT_TREE_DIR_OBJECTID && k->objectid != BTRFS_FREE_INO_OBJECTID)
		return item_type == BTRFS_INODE_ITEM_KEY ? "inode item: objectid out of range"
							 : "dir item: location objectid out of range";
	if (k->offset)
		return item_type == BTRFS_INODE_ITEM_KEY ? "inode item: key offset not 0"
							 : "dir item: location key offset not 0";
	return NULL;
}

/* check_root_key: a ROOT_ITEM's key, or a location key naming a subvolume */
static const char *root_key(const struct ref_key *k, bool is_root_item)
{
	if (is_root_item && k->objectid == BTRFS_TREE_RELOC_OBJECTID && !fstree(k->offset))
		return "root item: a relocation tree of a tree that is no subvolume";
	if (k->objectid == 0)
		return is_root_item ? "root item: root id 0" : "dir item: location root id 0";
	if (!is_root_item && !fstree(k->objectid))
		return "dir item: location names a tree that is no subvolume";
	if (k->objectid == BTRFS_TREE_RELOC_OBJECTID && k->offset == 0)
		return "root item: relocation tree of root 0";
	return NULL;
}

/* check_dir_item (DIR_ITEM, DIR_INDEX, XATTR_ITEM) */
static const char *dir_item(const struct leaf *l)
{
	const char *why = prev_ino(l);
	if (why)
		return why;
	/* BTRFS_MAX_XATTR_SIZE: the largest item less an entry's header */
	uint32_t max_xattr = l->fs->nodesize - (uint32_t)HDR - (uint32_t)sizeof(struct btrfs_item_disk) -
			     (uint32_t)sizeof(struct btrfs_dir_item);
	for (uint32_t cur = 0; cur < l->size;) {
		const struct btrfs_dir_item *di = (const void *)(l->item + cur);
		if (cur + sizeof(*di) > l->size)
			return "dir item: an entry's header crosses the item's end";
		struct ref_key loc = { LE64(di->location.objectid), di->location.type,
				       LE64(di->location.offset) };
		if (loc.type == BTRFS_ROOT_ITEM_KEY)
			why = root_key(&loc, false);
		else if (loc.type == BTRFS_INODE_ITEM_KEY || loc.type == 0)
			why = inode_key(&loc, l->key.type);
		else
			why = "dir item: location key of an unknown type";
		if (why)
			return why;
		uint8_t ft = di->type;
		if (ft >= BTRFS_FT_MAX)
			return "dir item: unknown file type";
		if (l->key.type == BTRFS_XATTR_ITEM_KEY && ft != BTRFS_FT_XATTR)
			return "xattr item: entry not of the xattr type";
		if (ft == BTRFS_FT_XATTR && l->key.type != BTRFS_XATTR_ITEM_KEY)
			return "dir item: an xattr entry outside an xattr item";
		uint32_t nlen = LE16(di->name_len), dlen = LE16(di->data_len);
		if (nlen > (ft == BTRFS_FT_XATTR ? XATTR_NAME_MAX : BTRFS_NAME_LEN))
			return "dir item: name too long";
		if (nlen + dlen > max_xattr) /* BTRFS_MAX_XATTR_SIZE */
			return "dir item: name and data too long";
		if (dlen && ft != BTRFS_FT_XATTR)
			return "dir item: data in an entry that is no xattr";
		uint32_t total = (uint32_t)sizeof(*di) + nlen + dlen;
		if (cur + total > l->size)
			return "dir item: an entry crosses the item's end";
		if ((l->key.type == BTRFS_DIR_ITEM_KEY || l->key.type == BTRFS_XATTR_ITEM_KEY) &&
		    l->key.offset != ref_name_hash((const char *)(di + 1), nlen))
			return "dir item: name hash does not match the key";
		cur += total;
	}
	return NULL;
}

/* check_inode_ref */
static const char *inode_ref(const struct leaf *l)
{
	const char *why = prev_ino(l);
	if (why)
		return why;
	if (l->size <= sizeof(struct btrfs_inode_ref))
		return "inode ref: item holds no name";
	for (uint32_t cur = 0; cur < l->size;) {
		const struct btrfs_inode_ref *r = (const void *)(l->item + cur);
		/* (the kernel compares with the size of a pointer here, 8 bytes) */
		if (cur + sizeof(void *) > l->size)
			return "inode ref: an entry's header crosses the item's end";
		if (cur + sizeof(*r) + LE16(r->name_len) > l->size)
			return "inode ref: a name crosses the item's end";
		cur += (uint32_t)sizeof(*r) + LE16(r->name_len);
	}
	return NULL;
}

/* check_inode_extref (Linux 6.9 on) */
static const char *inode_extref(const struct leaf *l)
{
	const char *why = prev_ino(l);
	if (why)
		return why;
	for (uint32_t cur = 0; cur < l->size;) {
		const struct btrfs_inode_extref *r = (const void *)(l->item + cur);
		if (cur + sizeof(*r) > l->size)
			return "inode extref: an entry's header crosses the item's end";
		if (cur + sizeof(*r) + LE16(r->name_len) > l->size)
			return "inode extref: a name crosses the item's end";
		cur += (uint32_t)sizeof(*r) + LE16(r->name_len);
	}
	return NULL;
}

/* check_dev_extent_item (an item too small to hold one is not judged: the
 * kernel reads past it) */
static const char *dev_extent(const struct leaf *l)
{
	const struct btrfs_dev_extent *de = (const void *)l->item;
	const uint32_t s = l->fs->sectorsize;
	if (l->size < sizeof(*de))
		return NULL;
	if (LE64(de->chunk_tree) != BTRFS_CHUNK_TREE_OBJECTID)
		return "device extent: chunk tree is not the chunk tree";
	if (LE64(de->chunk_objectid) != BTRFS_FIRST_CHUNK_TREE_OBJECTID)
		return "device extent: chunk objectid is not 256";
	if (!ALIGNED(l->key.offset, s) || !ALIGNED(LE64(de->chunk_offset), s) ||
	    !ALIGNED(LE64(de->length), s))
		return "device extent: offset, chunk offset or length not aligned";
	if (l->slot && l->prev.objectid == l->key.objectid && l->prev.type == l->key.type) {
		uint32_t psize;
		const struct btrfs_dev_extent *p = (const void *)item_data(l->d, l->slot - 1, &psize);
		if (psize >= sizeof(*p) && l->prev.offset + LE64(p->length) > l->key.offset)
			return "device extent: overlaps the previous one";
	}
	return NULL;
}

static int popcount64(uint64_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

/* check_block_group_item */
static const char *block_group(const struct leaf *l)
{
	const struct btrfs_block_group_item *bg = (const void *)l->item;
	if (l->key.offset == 0)
		return "block group item: size 0";
	if (l->size != sizeof(*bg))
		return "block group item: wrong size";
	if (LE64(bg->chunk_objectid) != BTRFS_FIRST_CHUNK_TREE_OBJECTID)
		return "block group item: chunk objectid is not 256";
	if (LE64(bg->used) > l->key.offset)
		return "block group item: more used than its size";
	uint64_t flags = LE64(bg->flags), type = flags & BTRFS_BLOCK_GROUP_TYPE_MASK;
	if (popcount64(flags & BTRFS_BLOCK_GROUP_PROFILE_MASK) > 1)
		return "block group item: more than one profile";
	if (type != BTRFS_BLOCK_GROUP_DATA && type != BTRFS_BLOCK_GROUP_METADATA &&
	    type != BTRFS_BLOCK_GROUP_SYSTEM &&
	    type != (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DATA))
		return "block group item: invalid type";
	return NULL;
}

/* check_dev_item */
static const char *dev_item(const struct leaf *l)
{
	const struct btrfs_dev_item *di = (const void *)l->item;
	if (l->key.objectid != BTRFS_DEV_ITEMS_OBJECTID)
		return "device item: objectid is not DEV_ITEMS";
	if (l->size != sizeof(*di))
		return "device item: wrong size";
	if (LE64(di->devid) != l->key.offset)
		return "device item: devid differs from the key's";
	if (LE64(di->bytes_used) > LE64(di->total_bytes))
		return "device item: more bytes used than the device has";
	return NULL;
}

/* check_inode_item */
static const char *inode_item(const struct leaf *l)
{
	const struct btrfs_inode_item *ii = (const void *)l->item;
	uint64_t gen = l->fs->generation;
	const char *why = inode_key(&l->key, BTRFS_INODE_ITEM_KEY);
	if (why)
		return why;
	if (l->size != sizeof(*ii))
		return "inode item: wrong size";
	if (LE64(ii->generation) > gen + 1)
		return "inode item: generation newer than the superblock's";
	if (LE64(ii->transid) > gen + 1)
		return "inode item: transid newer than the superblock's";
	uint32_t mode = LE32(ii->mode), fmt = mode & S_IFMT;
	if (mode & ~(uint32_t)(S_IFMT | S_ISUID | S_ISGID | S_ISVTX | 0777))
		return "inode item: unknown mode bits";
	if (popcount64(fmt) != 1 && fmt != S_IFLNK && fmt != S_IFBLK && fmt != S_IFSOCK)
		return "inode item: invalid file type";
	if (fmt == S_IFDIR && LE32(ii->nlink) > 1)
		return "inode item: a directory with more than one link";
	/* BTRFS_INODE_FLAG_MASK: the flags of the low 32 bits Linux knows */
	uint32_t flags = (uint32_t)LE64(ii->flags);
	const uint32_t known = BTRFS_INODE_NODATASUM | BTRFS_INODE_NODATACOW | BTRFS_INODE_READONLY |
			       BTRFS_INODE_NOCOMPRESS | BTRFS_INODE_PREALLOC | BTRFS_INODE_SYNC |
			       BTRFS_INODE_IMMUTABLE | BTRFS_INODE_APPEND | BTRFS_INODE_NODUMP |
			       BTRFS_INODE_NOATIME | BTRFS_INODE_DIRSYNC | BTRFS_INODE_COMPRESS |
			       BTRFS_INODE_ROOT_ITEM_INIT;
	if (flags & ~known)
		return "inode item: unknown inode flags";
	/* The high half, ro-compat flags: only VERITY (the kernel's
	 * BTRFS_INODE_RO_VERITY, not in the uapi header) on a writable mount;
	 * a read-only one reads any. */
	const uint32_t ro_verity = 1u << 0;
	if (l->fs->opts.writable && (uint32_t)(LE64(ii->flags) >> 32) & ~ro_verity)
		return "inode item: unknown ro-compat inode flags on a writable mount";
	return NULL;
}

/* check_root_item */
static const char *root_item(const struct leaf *l)
{
	const char *why = root_key(&l->key, true);
	if (why)
		return why;
	if (l->size != sizeof(struct btrfs_root_item) && l->size != btrfs_legacy_root_item_size())
		return "root item: wrong size";
	struct btrfs_root_item ri;
	memset(&ri, 0, sizeof(ri));
	memcpy(&ri, l->item, l->size);
	uint64_t gen = l->fs->generation + 1;
	if (LE64(ri.generation) > gen || LE64(ri.generation_v2) > gen ||
	    LE64(ri.last_snapshot) > gen)
		return "root item: a generation newer than the superblock's";
	if (!ALIGNED(LE64(ri.bytenr), l->fs->sectorsize))
		return "root item: root block not aligned to the sectorsize";
	if (ri.level >= BTRFS_MAX_TREE_LEVEL || ri.drop_level >= BTRFS_MAX_TREE_LEVEL)
		return "root item: level of 8 or more";
	if (LE64(ri.flags) & ~(uint64_t)(BTRFS_ROOT_SUBVOL_RDONLY | BTRFS_ROOT_SUBVOL_DEAD))
		return "root item: unknown flags";
	return NULL;
}

/* check_extent_item (EXTENT_ITEM, METADATA_ITEM) */
static const char *extent_item(const struct leaf *l)
{
	const ref_fs *fs = l->fs;
	bool skinny = l->key.type == BTRFS_METADATA_ITEM_KEY;
	if (skinny && !(LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA))
		return "extent item: a metadata item without the skinny-metadata feature";
	if (!ALIGNED(l->key.objectid, fs->sectorsize))
		return "extent item: bytenr not aligned to the sectorsize";
	if (skinny && l->key.offset >= BTRFS_MAX_TREE_LEVEL)
		return "metadata item with a level of 8 or more";
	const struct btrfs_extent_item *ei = (const void *)l->item;
	if (l->size < sizeof(*ei))
		return "extent item: smaller than its header";
	uint64_t flags = LE64(ei->flags), refs = LE64(ei->refs);
	if (LE64(ei->generation) > fs->generation + 1)
		return "extent item: generation newer than the superblock's";
	if (popcount64(flags & (BTRFS_EXTENT_FLAG_DATA | BTRFS_EXTENT_FLAG_TREE_BLOCK)) != 1)
		return "extent item: neither data nor tree block, or both";
	bool tree = flags & BTRFS_EXTENT_FLAG_TREE_BLOCK;
	if (tree && !skinny && l->key.offset != fs->nodesize)
		return "extent item: a tree block's length is not the nodesize";
	if (!tree) {
		if (skinny)
			return "extent item: a data extent as a metadata item";
		if (!ALIGNED(l->key.offset, fs->sectorsize))
			return "extent item: data length not aligned to the sectorsize";
		if (flags & BTRFS_BLOCK_FLAG_FULL_BACKREF)
			return "extent item: data with FULL_BACKREF set";
	}
	uint32_t ptr = sizeof(*ei);
	if (tree && !skinny) {
		if (ptr + sizeof(struct btrfs_tree_block_info) > l->size)
			return "extent item: inline ref overflows the item";
		const struct btrfs_tree_block_info *info = (const void *)(l->item + ptr);
		if (info->level >= BTRFS_MAX_TREE_LEVEL)
			return "extent item: tree block info level of 8 or more";
		ptr += sizeof(*info);
	}
	uint64_t inline_refs = 0, last_seq = UINT64_MAX;
	uint8_t last_type = 0;
	while (ptr < l->size) {
		const struct btrfs_extent_inline_ref *ir = (const void *)(l->item + ptr);
		if (ptr + sizeof(*ir) > l->size)
			return "extent item: inline ref overflows the item";
		uint8_t t = ir->type;
		uint64_t off = LE64(ir->offset);
		uint32_t isize = sizeof(*ir);
		if (t == BTRFS_EXTENT_DATA_REF_KEY)
			isize = sizeof(*ir) - sizeof(ir->offset) + sizeof(struct btrfs_extent_data_ref);
		else if (t == BTRFS_SHARED_DATA_REF_KEY)
			isize = sizeof(*ir) + sizeof(struct btrfs_shared_data_ref);
		if (ptr + isize > l->size)
			return "extent item: inline ref overflows the item";
		/* types ascending; within one, the root, hash or parent
		 * not ascending (Linux 6.7 on) */
		uint64_t seq = off;
		if (t == BTRFS_EXTENT_DATA_REF_KEY) {
			const struct btrfs_extent_data_ref *dr = (const void *)&ir->offset;
			seq = ref_extent_data_ref_hash(LE64(dr->root), LE64(dr->objectid),
						       LE64(dr->offset));
		}
		if (t < last_type)
			return "extent item: inline refs out of order (type)";
		if (t > last_type)
			last_seq = UINT64_MAX;
		if (seq > last_seq)
			return "extent item: inline refs out of order (within a type)";
		last_type = t;
		last_seq = seq;
		switch (t) {
		case BTRFS_TREE_BLOCK_REF_KEY:
			inline_refs++;
			break;
		case BTRFS_SHARED_BLOCK_REF_KEY:
			if (!ALIGNED(off, fs->sectorsize))
				return "extent item: shared block ref parent not aligned";
			inline_refs++;
			break;
		case BTRFS_EXTENT_DATA_REF_KEY: {
			const struct btrfs_extent_data_ref *dr = (const void *)&ir->offset;
			if (!ALIGNED(LE64(dr->offset), fs->sectorsize))
				return "extent item: data ref offset not aligned";
			inline_refs += LE32(dr->count);
			break;
		}
		case BTRFS_SHARED_DATA_REF_KEY: {
			const struct btrfs_shared_data_ref *sr = (const void *)(ir + 1);
			if (!ALIGNED(off, fs->sectorsize))
				return "extent item: shared data ref parent not aligned";
			inline_refs += LE32(sr->count);
			break;
		}
		default:
			return "extent item: unknown inline ref type";
		}
		ptr += isize;
	}
	if (ptr != l->size)
		return "extent item: padding after the inline refs";
	if (inline_refs > refs)
		return "extent item: more inline refs than its count";
	if (l->prev.type == BTRFS_EXTENT_ITEM_KEY || l->prev.type == BTRFS_METADATA_ITEM_KEY) {
		uint64_t end = l->prev.objectid +
			       (l->prev.type == BTRFS_METADATA_ITEM_KEY ? fs->nodesize : l->prev.offset);
		if (end > l->key.objectid)
			return "extent item: overlaps the previous extent";
	}
	return NULL;
}

/* check_simple_keyed_refs (TREE_BLOCK_REF, SHARED_DATA_REF, SHARED_BLOCK_REF) */
static const char *keyed_ref(const struct leaf *l)
{
	uint32_t want = l->key.type == BTRFS_SHARED_DATA_REF_KEY
				? (uint32_t)sizeof(struct btrfs_shared_data_ref) : 0;
	if (l->size != want)
		return "keyed back reference: wrong size";
	if (!ALIGNED(l->key.objectid, l->fs->sectorsize))
		return "keyed back reference: bytenr not aligned";
	if (l->key.type != BTRFS_TREE_BLOCK_REF_KEY && !ALIGNED(l->key.offset, l->fs->sectorsize))
		return "keyed back reference: parent not aligned";
	return NULL;
}

/* check_extent_data_ref */
static const char *data_ref(const struct leaf *l)
{
	const uint32_t sz = sizeof(struct btrfs_extent_data_ref);
	if (l->size % sz)
		return "extent data ref: size not a multiple of a data ref";
	if (!ALIGNED(l->key.objectid, l->fs->sectorsize))
		return "extent data ref: bytenr not aligned";
	for (uint32_t p = 0; p < l->size; p += sz) {
		const struct btrfs_extent_data_ref *dr = (const void *)(l->item + p);
		if (!ALIGNED(LE64(dr->offset), l->fs->sectorsize))
			return "extent data ref: offset not aligned";
	}
	return NULL;
}

/* btrfs_check_chunk_valid with check_leaf_chunk_item's size check */
static const char *chunk_item(const struct leaf *l)
{
	const ref_fs *fs = l->fs;
	const struct btrfs_chunk *c = (const void *)l->item;
	if (l->size < sizeof(*c))
		return "chunk item: smaller than one stripe";
	uint16_t ns = LE16(c->num_stripes), sub = LE16(c->sub_stripes);
	if (ns && l->size != sizeof(*c) + (ns - 1u) * sizeof(struct btrfs_stripe))
		return "chunk item: size does not match its stripes";
	uint64_t type = LE64(c->type), len = LE64(c->length), logical = l->key.offset;
	uint64_t prof = type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	int ncopies = 1, nparity = 0;
	if (prof & (BTRFS_BLOCK_GROUP_DUP | BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID10))
		ncopies = 2;
	else if (prof & BTRFS_BLOCK_GROUP_RAID1C3)
		ncopies = 3;
	else if (prof & BTRFS_BLOCK_GROUP_RAID1C4)
		ncopies = 4;
	nparity = prof & BTRFS_BLOCK_GROUP_RAID5 ? 1 : prof & BTRFS_BLOCK_GROUP_RAID6 ? 2 : 0;
	if (!ns)
		return "chunk item: no stripes";
	if (ns < ncopies)
		return "chunk item: fewer stripes than copies";
	if (nparity && ns == nparity)
		return "chunk item: parity stripes only";
	if (!ALIGNED(logical, fs->sectorsize))
		return "chunk item: logical address not aligned";
	if (LE32(c->sector_size) != fs->sectorsize)
		return "chunk item: sectorsize differs from the file system's";
	if (!len || !ALIGNED(len, fs->sectorsize))
		return "chunk item: length 0 or not aligned";
	if (len > UINT64_MAX - logical)
		return "chunk item: its end overflows";
	if (LE64(c->stripe_len) != BTRFS_STRIPE_LEN_DEFAULT)
		return "chunk item: stripe length is not 64 KiB";
	if (len >= (uint64_t)UINT32_MAX * BTRFS_STRIPE_LEN_DEFAULT)
		return "chunk item: length too large";
	if (type & ~(uint64_t)(BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_PROFILE_MASK))
		return "chunk item: unknown type bits";
	if (popcount64(prof) > 1)
		return "chunk item: more than one profile";
	if (!(type & BTRFS_BLOCK_GROUP_TYPE_MASK))
		return "chunk item: no type";
	if (type & BTRFS_BLOCK_GROUP_SYSTEM &&
	    type & (BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_DATA))
		return "chunk item: system with data or metadata";
	if (!(LE64(fs->sb.incompat_flags) & BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS) &&
	    (type & BTRFS_BLOCK_GROUP_METADATA) && (type & BTRFS_BLOCK_GROUP_DATA))
		return "chunk item: mixed data and metadata without the mixed-groups feature";
	if ((prof & BTRFS_BLOCK_GROUP_RAID10 && sub != 2) ||
	    (prof & BTRFS_BLOCK_GROUP_RAID1 && ns != 2) ||
	    (prof & BTRFS_BLOCK_GROUP_RAID1C3 && ns != 3) ||
	    (prof & BTRFS_BLOCK_GROUP_RAID1C4 && ns != 4) ||
	    (prof & BTRFS_BLOCK_GROUP_RAID5 && ns < 2) ||
	    (prof & BTRFS_BLOCK_GROUP_RAID6 && ns < 3) ||
	    (prof & BTRFS_BLOCK_GROUP_DUP && ns != 2) || (!prof && ns != 1))
		return "chunk item: stripe count wrong for its profile";
	return NULL;
}

/* check_leaf_item */
static const char *item_invalid(const struct leaf *l)
{
	switch (l->key.type) {
	case BTRFS_EXTENT_DATA_KEY:
		return file_extent(l);
	case BTRFS_EXTENT_CSUM_KEY:
		return csum_item(l);
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_XATTR_ITEM_KEY:
		return dir_item(l);
	case BTRFS_INODE_REF_KEY:
		return inode_ref(l);
	case BTRFS_INODE_EXTREF_KEY:
		return inode_extref(l);
	case BTRFS_DEV_EXTENT_KEY:
		return dev_extent(l);
	case BTRFS_BLOCK_GROUP_ITEM_KEY:
		return block_group(l);
	case BTRFS_CHUNK_ITEM_KEY:
		return chunk_item(l);
	case BTRFS_DEV_ITEM_KEY:
		return dev_item(l);
	case BTRFS_INODE_ITEM_KEY:
		return inode_item(l);
	case BTRFS_ROOT_ITEM_KEY:
		return root_item(l);
	case BTRFS_EXTENT_ITEM_KEY:
	case BTRFS_METADATA_ITEM_KEY:
		return extent_item(l);
	case BTRFS_TREE_BLOCK_REF_KEY:
	case BTRFS_SHARED_DATA_REF_KEY:
	case BTRFS_SHARED_BLOCK_REF_KEY:
		return keyed_ref(l);
	case BTRFS_EXTENT_DATA_REF_KEY:
		return data_ref(l);
	}
	return NULL;
}

const char *leaf_items_invalid(const ref_fs *fs, const uint8_t *d)
{
	const struct btrfs_header_disk *h = (const void *)d;
	uint32_t n = LE32(h->nritems);
	uint64_t owner = LE64(h->owner), flags = LE64(h->flags);
	/* __btrfs_check_leaf: these trees are never empty (a relocation
	 * tree's blocks name the subvolume they copy: not judged) */
	if (n == 0 && !(flags & BTRFS_HEADER_FLAG_RELOC) &&
	    (owner == BTRFS_ROOT_TREE_OBJECTID || owner == BTRFS_CHUNK_TREE_OBJECTID ||
	     owner == BTRFS_DEV_TREE_OBJECTID || owner == BTRFS_FS_TREE_OBJECTID ||
	     owner == BTRFS_DATA_RELOC_TREE_OBJECTID || owner == BTRFS_EXTENT_TREE_OBJECTID))
		return "an empty leaf of a tree that is never empty";
	/* Every block on disk was written: since Linux 6.9 (e03418abde87) the
	 * tree-checker refuses one without the flag, whatever it holds. */
	if (!(flags & BTRFS_HEADER_FLAG_WRITTEN))
		return "WRITTEN flag not set";
	struct leaf l = { .fs = fs, .d = d, .owner = owner };
	for (uint32_t i = 0; i < n; i++) {
		const struct btrfs_item_disk *it = (const void *)(d + HDR + i * sizeof(*it));
		l.slot = i;
		l.key = (struct ref_key){ LE64(it->key.objectid), it->key.type, LE64(it->key.offset) };
		l.item = item_data(d, i, &l.size);
		const char *why = item_invalid(&l);
		if (why)
			return why;
		l.prev = l.key;
	}
	return NULL;
}
