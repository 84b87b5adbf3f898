/*
 * check_extent.c - the extent tree against the trees: every tree block and
 * every file extent found by the walk must be recorded with the backref its
 * parent implies (implicit by root, or full by parent block when the parent
 * has FULL_BACKREF) and the right count; every extent item must be reached;
 * each item's refs field must equal the sum of its references; each block
 * group's used bytes must equal the extents inside it.
 */
#include "ref/check/check.h"

#include <errno.h>
#include <stdlib.h>

/* A reference recorded in the extent tree (inline or keyed). */
struct eref {
	uint8_t type;
	uint64_t a;        /* root (TREE_BLOCK, EXTENT_DATA) or parent (SHARED_*) */
	uint64_t ino, off; /* EXTENT_DATA_REF */
	uint64_t count;
	uint64_t found;    /* references the walk found for it */
	uint32_t next;     /* index + 1 of the next of the same extent */
};

/* An extent item. */
struct erec {
	uint64_t bytenr, num_bytes, refs, flags;
	int level; /* METADATA_ITEM key offset, or the tree_block_info level; -1 for data */
	bool metadata;
	bool reached;
	uint32_t erefs; /* first reference, index + 1 */
};

struct ectx {
	struct check *ck;
	struct erec *recs;
	size_t nrecs, recs_cap;
	struct u64map index; /* bytenr -> index + 1 */
	struct eref *refs;
	size_t nrefs, refs_cap;
};

/* An entry of 0 is a bytenr whose item was refused (too small): no record. */
static struct erec *erec_find(struct ectx *e, uint64_t bytenr)
{
	uint64_t *i = u64map_get(&e->index, bytenr, false);
	return i && *i ? &e->recs[*i - 1] : NULL;
}

static int add_ref(struct ectx *e, struct erec *rec, struct eref ref)
{
	size_t ri = (size_t)(rec - e->recs);
	if (GROW(e->refs, e->nrefs, e->refs_cap))
		return -ENOMEM;
	rec = &e->recs[ri];
	ref.next = rec->erefs;
	e->refs[e->nrefs] = ref;
	rec->erefs = (uint32_t)++e->nrefs;
	return 0;
}

static const char *ref_type_name(uint8_t t)
{
	switch (t) {
	case BTRFS_TREE_BLOCK_REF_KEY: return "TREE_BLOCK_REF";
	case BTRFS_SHARED_BLOCK_REF_KEY: return "SHARED_BLOCK_REF";
	case BTRFS_EXTENT_DATA_REF_KEY: return "EXTENT_DATA_REF";
	case BTRFS_SHARED_DATA_REF_KEY: return "SHARED_DATA_REF";
	default: return "REF";
	}
}

/* The inline references after an extent item's header. */
static int parse_inline(struct ectx *e, struct erec *rec, const struct ref_key *k, const uint8_t *p,
			uint32_t len)
{
	char kb[64];
	size_t ri = (size_t)(rec - e->recs);
	while (len) {
		uint8_t t = p[0];
		uint32_t need = t == BTRFS_EXTENT_DATA_REF_KEY ? 1 + sizeof(struct btrfs_extent_data_ref)
				: t == BTRFS_SHARED_DATA_REF_KEY ? 1 + 8 + 4
				: 1 + 8;
		if (t != BTRFS_TREE_BLOCK_REF_KEY && t != BTRFS_SHARED_BLOCK_REF_KEY &&
		    t != BTRFS_EXTENT_DATA_REF_KEY && t != BTRFS_SHARED_DATA_REF_KEY &&
		    t != BTRFS_EXTENT_OWNER_REF_KEY) {
			check_error(e->ck, "extent tree key %s: unknown inline ref type %u",
				    check_key_str(k, kb, sizeof(kb)), t);
			return 0;
		}
		if (len < need) {
			check_error(e->ck, "extent tree key %s: inline ref runs past the item",
				    check_key_str(k, kb, sizeof(kb)));
			return 0;
		}
		struct eref ref = { .type = t, .count = 1 };
		if (t == BTRFS_EXTENT_DATA_REF_KEY) {
			const struct btrfs_extent_data_ref *dr = (const void *)(p + 1);
			ref.a = LE64(dr->root);
			ref.ino = LE64(dr->objectid);
			ref.off = LE64(dr->offset);
			ref.count = LE32(dr->count);
		} else {
			ref.a = le64(p + 1);
			if (t == BTRFS_SHARED_DATA_REF_KEY)
				ref.count = le32(p + 9);
		}
		if (t != BTRFS_EXTENT_OWNER_REF_KEY) { /* simple-quota owner: not a reference */
			int r = add_ref(e, &e->recs[ri], ref);
			if (r)
				return r;
		}
		p += need;
		len -= need;
	}
	return 0;
}

static int load_item(struct ectx *e, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	char kb[64];
	ref_fs *fs = e->ck->fs;
	if (k->type == BTRFS_EXTENT_ITEM_KEY || k->type == BTRFS_METADATA_ITEM_KEY) {
		if (size < sizeof(struct btrfs_extent_item)) {
			check_error(e->ck, "extent tree key %s: extent item is %u bytes",
				    check_key_str(k, kb, sizeof(kb)), size);
			return 0;
		}
		uint64_t *idx = u64map_get(&e->index, k->objectid, true);
		if (!idx || GROW(e->recs, e->nrecs, e->recs_cap))
			return -ENOMEM;
		if (*idx) {
			check_error(e->ck, "extent tree key %s: a second extent item at this bytenr",
				    check_key_str(k, kb, sizeof(kb)));
			return 0;
		}
		const struct btrfs_extent_item *ei = (const void *)data;
		uint64_t flags = LE64(ei->flags);
		bool meta = k->type == BTRFS_METADATA_ITEM_KEY || (flags & BTRFS_EXTENT_FLAG_TREE_BLOCK);
		uint32_t hdr = sizeof(*ei);
		if (k->type == BTRFS_EXTENT_ITEM_KEY && meta)
			hdr += sizeof(struct btrfs_tree_block_info);
		if (size < hdr) {
			check_error(e->ck, "extent tree key %s: item too small for its header",
				    check_key_str(k, kb, sizeof(kb)));
			return 0;
		}
		struct erec *rec = &e->recs[e->nrecs];
		int level = !meta ? -1
			    : k->type == BTRFS_METADATA_ITEM_KEY ? (int)k->offset
			    : ((const struct btrfs_tree_block_info *)(ei + 1))->level;
		*rec = (struct erec){ k->objectid,
				      k->type == BTRFS_METADATA_ITEM_KEY ? fs->nodesize : k->offset,
				      LE64(ei->refs), flags, level, meta, false, 0 };
		*idx = ++e->nrecs;
		if (LE64(ei->generation) > fs->generation)
			check_error(e->ck, "extent tree key %s: generation %llu is newer than the superblock's %llu",
				    check_key_str(k, kb, sizeof(kb)), (unsigned long long)LE64(ei->generation),
				    (unsigned long long)fs->generation);
		/* Tree blocks in METADATA or SYSTEM block groups, data in DATA ones. */
		const struct ref_chunk *ch = chunk_find(fs, k->objectid);
		uint64_t want = meta ? BTRFS_BLOCK_GROUP_METADATA | BTRFS_BLOCK_GROUP_SYSTEM
				     : BTRFS_BLOCK_GROUP_DATA;
		if (!ch || k->objectid + rec->num_bytes > ch->logical + ch->length)
			check_error(e->ck, "extent tree key %s: the extent lies outside every chunk",
				    check_key_str(k, kb, sizeof(kb)));
		else if (!(ch->type & want))
			check_error(e->ck, "extent tree key %s: a %s extent in a %s block group",
				    check_key_str(k, kb, sizeof(kb)), meta ? "tree block" : "data",
				    ch->type & BTRFS_BLOCK_GROUP_DATA ? "data" : "metadata");
		if (meta && rec->num_bytes != fs->nodesize)
			check_error(e->ck, "extent tree key %s: tree block extent of %llu bytes, nodesize is %u",
				    check_key_str(k, kb, sizeof(kb)), (unsigned long long)rec->num_bytes,
				    fs->nodesize);
		return parse_inline(e, rec, k, data + hdr, size - hdr);
	}
	if (k->type != BTRFS_TREE_BLOCK_REF_KEY && k->type != BTRFS_SHARED_BLOCK_REF_KEY &&
	    k->type != BTRFS_EXTENT_DATA_REF_KEY && k->type != BTRFS_SHARED_DATA_REF_KEY)
		return 0;
	struct erec *rec = erec_find(e, k->objectid);
	if (!rec) {
		check_error(e->ck, "extent tree key %s: backref without an extent item",
			    check_key_str(k, kb, sizeof(kb)));
		return 0;
	}
	struct eref ref = { .type = k->type, .a = k->offset, .count = 1 };
	if (k->type == BTRFS_EXTENT_DATA_REF_KEY) {
		if (size < sizeof(struct btrfs_extent_data_ref)) {
			check_error(e->ck, "extent tree key %s: data ref is %u bytes",
				    check_key_str(k, kb, sizeof(kb)), size);
			return 0;
		}
		const struct btrfs_extent_data_ref *dr = (const void *)data;
		ref.a = LE64(dr->root);
		ref.ino = LE64(dr->objectid);
		ref.off = LE64(dr->offset);
		ref.count = LE32(dr->count);
		if (k->offset != ref_extent_data_ref_hash(ref.a, ref.ino, ref.off))
			check_error(e->ck, "extent tree key %s: key offset is not the hash of its data ref",
				    check_key_str(k, kb, sizeof(kb)));
	} else if (k->type == BTRFS_SHARED_DATA_REF_KEY) {
		if (size < 4) {
			check_error(e->ck, "extent tree key %s: shared data ref is %u bytes",
				    check_key_str(k, kb, sizeof(kb)), size);
			return 0;
		}
		ref.count = le32(data);
	}
	return add_ref(e, rec, ref);
}

static int load_extent_tree(struct ectx *e)
{
	ref_fs *fs = e->ck->fs;
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &root);
	if (r) {
		check_error(e->ck, "extent tree: %s", ref_error(fs));
		return 0;
	}
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if ((r = load_item(e, &k, data, size)))
			break;
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	if (r < 0 && r != -ENOMEM) {
		check_error(e->ck, "extent tree: %s", ref_error(fs));
		r = 0;
	}
	return r < 0 ? r : 0;
}

/* Counts one found reference against the recorded ones. */
static void expect(struct ectx *e, struct erec *rec, uint8_t type, uint64_t a, uint64_t ino,
		   uint64_t off, const char *what)
{
	rec->reached = true;
	for (uint32_t i = rec->erefs; i; i = e->refs[i - 1].next) {
		struct eref *ref = &e->refs[i - 1];
		if (ref->type == type && ref->a == a &&
		    (type != BTRFS_EXTENT_DATA_REF_KEY || (ref->ino == ino && ref->off == off))) {
			ref->found++;
			return;
		}
	}
	if (type == BTRFS_EXTENT_DATA_REF_KEY)
		check_error(e->ck, "extent %llu: no %s for root %llu inode %llu offset %llu (%s)",
			    (unsigned long long)rec->bytenr, ref_type_name(type), (unsigned long long)a,
			    (unsigned long long)ino, (unsigned long long)off, what);
	else
		check_error(e->ck, "extent %llu: no %s %llu (%s)", (unsigned long long)rec->bytenr,
			    ref_type_name(type), (unsigned long long)a, what);
}

static bool full_backref(struct ectx *e, uint64_t block)
{
	struct erec *p = erec_find(e, block);
	return p && (p->flags & BTRFS_BLOCK_FLAG_FULL_BACKREF);
}

static void expect_tree_blocks(struct ectx *e)
{
	const struct check_state *st = e->ck->st;
	for (size_t i = 0; i < st->nblocks; i++) {
		const struct check_block *b = &st->blocks[i];
		bool logged = false;
		for (uint32_t p = b->parents; p; p = st->parents[p - 1].next)
			logged |= st->parents[p - 1].tree == BTRFS_TREE_LOG_OBJECTID;
		if (logged)
			continue; /* log tree blocks are not in the extent tree */
		struct erec *rec = erec_find(e, b->bytenr);
		if (!rec || !rec->metadata) {
			check_error(e->ck, "tree block %llu (owner %llu, level %u) has no %sextent item",
				    (unsigned long long)b->bytenr, (unsigned long long)b->owner, b->level,
				    rec ? "metadata " : "");
			continue;
		}
		if (rec->level != b->level)
			check_error(e->ck, "tree block %llu is level %u, its extent item says %d",
				    (unsigned long long)b->bytenr, b->level, rec->level);
		for (uint32_t p = b->parents; p; p = st->parents[p - 1].next) {
			const struct check_parent *par = &st->parents[p - 1];
			if (!par->parent && par->tree == BTRFS_TREE_RELOC_OBJECTID) {
				/* the kernel's alloc_tree_block: a relocation tree's
				 * root has a full backref with itself as the parent */
				expect(e, rec, BTRFS_SHARED_BLOCK_REF_KEY, b->bytenr, 0, 0,
				       "relocation tree root");
				continue;
			}
			if (!par->parent) {
				expect(e, rec, BTRFS_TREE_BLOCK_REF_KEY, par->tree, 0, 0, "tree root");
				continue;
			}
			const struct check_block *pb = check_block_find(e->ck, par->parent);
			if (full_backref(e, par->parent))
				expect(e, rec, BTRFS_SHARED_BLOCK_REF_KEY, par->parent, 0, 0,
				       "parent has full backrefs");
			else if (pb)
				expect(e, rec, BTRFS_TREE_BLOCK_REF_KEY, pb->owner, 0, 0,
				       "owner of its parent");
		}
	}
}

static void expect_data(struct ectx *e)
{
	const struct check_state *st = e->ck->st;
	for (size_t i = 0; i < st->ndrefs; i++) {
		const struct check_dref *d = &st->drefs[i];
		struct erec *rec = erec_find(e, d->disk_bytenr);
		if (!rec || rec->metadata) {
			check_error(e->ck, "data extent %llu (inode %llu) has no %sextent item",
				    (unsigned long long)d->disk_bytenr, (unsigned long long)d->ino,
				    rec ? "data " : "");
			continue;
		}
		if (rec->num_bytes != d->disk_num_bytes)
			check_error(e->ck, "data extent %llu: item of %llu bytes, file extent says %llu",
				    (unsigned long long)d->disk_bytenr, (unsigned long long)rec->num_bytes,
				    (unsigned long long)d->disk_num_bytes);
		const struct check_block *leaf = check_block_find(e->ck, d->leaf);
		if (full_backref(e, d->leaf))
			expect(e, rec, BTRFS_SHARED_DATA_REF_KEY, d->leaf, 0, 0, "leaf has full backrefs");
		else if (leaf)
			expect(e, rec, BTRFS_EXTENT_DATA_REF_KEY, leaf->owner, d->ino, d->offset,
			       "file extent item");
	}
}

static void reconcile(struct ectx *e)
{
	/* Below an unreadable block nothing is reached: one line, not one per extent. */
	size_t hidden = 0, unreadable = e->ck->st->unreadable;
	for (size_t i = 0; i < e->nrecs; i++) {
		struct erec *rec = &e->recs[i];
		uint64_t sum = 0;
		for (uint32_t j = rec->erefs; j; j = e->refs[j - 1].next) {
			const struct eref *ref = &e->refs[j - 1];
			sum += ref->count;
			if (ref->found == ref->count || !rec->reached)
				continue;
			if (ref->type == BTRFS_EXTENT_DATA_REF_KEY)
				check_error(e->ck, "extent %llu: %s root %llu inode %llu offset %llu has count %llu, found %llu",
					    (unsigned long long)rec->bytenr, ref_type_name(ref->type),
					    (unsigned long long)ref->a, (unsigned long long)ref->ino,
					    (unsigned long long)ref->off, (unsigned long long)ref->count,
					    (unsigned long long)ref->found);
			else
				check_error(e->ck, "extent %llu: %s %llu has count %llu, found %llu",
					    (unsigned long long)rec->bytenr, ref_type_name(ref->type),
					    (unsigned long long)ref->a, (unsigned long long)ref->count,
					    (unsigned long long)ref->found);
		}
		if (!rec->reached && unreadable)
			hidden++;
		else if (!rec->reached)
			check_error(e->ck, "extent %llu (%llu bytes, %s) is not referenced by any tree",
				    (unsigned long long)rec->bytenr, (unsigned long long)rec->num_bytes,
				    rec->metadata ? "tree block" : "data");
		else if (sum != rec->refs)
			check_error(e->ck, "extent %llu: refs %llu, its backrefs add up to %llu",
				    (unsigned long long)rec->bytenr, (unsigned long long)rec->refs,
				    (unsigned long long)sum);
	}
	if (hidden)
		check_error(e->ck, "%zu extents are not referenced by any readable tree (%zu tree blocks could not be read)",
			    hidden, unreadable);
}

/* The used bytes of each block group against the extents in it. */
static void check_block_group_usage(struct ectx *e)
{
	ref_fs *fs = e->ck->fs;
	bool bgt = LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE;
	struct ref_root root;
	if (ref_find_root(fs, bgt ? BTRFS_BLOCK_GROUP_TREE_OBJECTID : BTRFS_EXTENT_TREE_OBJECTID,
			  &root))
		return; /* reported elsewhere */
	size_t lo = 0; /* recs are in bytenr order */
	uint64_t total = 0;
	for (size_t c = 0; c < fs->nchunks; c++) {
		const struct ref_chunk *ch = &fs->chunks[c];
		struct ref_path path;
		struct ref_key key = { ch->logical, BTRFS_BLOCK_GROUP_ITEM_KEY, ch->length }, k;
		const uint8_t *data;
		uint32_t size;
		int r = ref_search(fs, &root, &key, &path);
		if (r)
			continue;
		ref_path_item(&path, &k, &data, &size);
		bool ok = !ref_key_cmp(&k, &key) && size >= sizeof(struct btrfs_block_group_item);
		uint64_t used = ok ? LE64(((const struct btrfs_block_group_item *)data)->used) : 0;
		ref_path_release(fs, &path);
		if (!ok)
			continue; /* a missing block group is check_chunk's to report */
		uint64_t sum = 0;
		while (lo < e->nrecs && e->recs[lo].bytenr < ch->logical)
			lo++;
		for (size_t i = lo; i < e->nrecs && e->recs[i].bytenr < ch->logical + ch->length; i++)
			sum += e->recs[i].num_bytes;
		total += used;
		if (sum != used)
			check_error(e->ck, "block group %llu: used %llu, its extents add up to %llu",
				    (unsigned long long)ch->logical, (unsigned long long)used,
				    (unsigned long long)sum);
	}
	if (total != LE64(fs->sb.bytes_used))
		check_error(e->ck, "superblock bytes_used %llu, the block groups add up to %llu",
			    (unsigned long long)LE64(fs->sb.bytes_used), (unsigned long long)total);
}

int check_extents(struct check *ck)
{
	struct ectx e = { .ck = ck };
	int r = load_extent_tree(&e);
	if (!r) {
		expect_tree_blocks(&e);
		expect_data(&e);
		reconcile(&e);
		check_block_group_usage(&e);
	}
	free(e.recs);
	free(e.refs);
	u64map_free(&e.index);
	return r;
}
