/*
 * tree.c - tree blocks: reading with checksum and mirror fallback, the
 * per-block validation of the kernel's tree-checker, the block cache, and
 * search and iteration over a tree.
 */
#include "ref/internal.h"

#include <errno.h>
#include <stdlib.h>

#define HDR sizeof(struct btrfs_header_disk)
#define ITEM sizeof(struct btrfs_item_disk)
#define PTR sizeof(struct btrfs_key_ptr_disk)

static void key_from_disk(struct ref_key *k, const struct btrfs_disk_key *d)
{
	k->objectid = LE64(d->objectid);
	k->type = d->type;
	k->offset = LE64(d->offset);
}

int ref_key_cmp(const struct ref_key *a, const struct ref_key *b)
{
	if (a->objectid != b->objectid)
		return a->objectid < b->objectid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

static const struct btrfs_header_disk *hdr(const uint8_t *data)
{
	return (const struct btrfs_header_disk *)data;
}

static const struct btrfs_item_disk *item_at(const uint8_t *data, int i)
{
	return (const struct btrfs_item_disk *)(data + HDR + (size_t)i * ITEM);
}

static const struct btrfs_key_ptr_disk *ptr_at(const uint8_t *data, int i)
{
	return (const struct btrfs_key_ptr_disk *)(data + HDR + (size_t)i * PTR);
}

static void key_at(const uint8_t *data, int i, struct ref_key *k)
{
	if (hdr(data)->level)
		key_from_disk(k, &ptr_at(data, i)->key);
	else
		key_from_disk(k, &item_at(data, i)->key);
}

bool block_csum_ok(const ref_fs *fs, const uint8_t *data)
{
	uint8_t c[BTRFS_CSUM_BYTES];
	ref_csum(fs->csum_type, data + BTRFS_CSUM_BYTES, fs->nodesize - BTRFS_CSUM_BYTES, c);
	return !memcmp(c, data, fs->csum_size);
}

const char *block_invalid(const ref_fs *fs, const uint8_t *data, uint64_t bytenr)
{
	const struct btrfs_header_disk *h = hdr(data);
	uint32_t n = LE32(h->nritems), space = fs->nodesize - (uint32_t)HDR;
	if (LE64(h->bytenr) != bytenr)
		return "header bytenr does not match the block's address";
	if (memcmp(h->fsid, fs->meta_fsid, BTRFS_FSID_BYTES))
		return "header fsid does not match the file system";
	if (h->level >= BTRFS_MAX_TREE_LEVEL)
		return "level is 8 or more";
	uint64_t gen = LE64(h->generation), owner = LE64(h->owner);
	if (owner == 0)
		return "owner 0 is not a tree";
	if (gen > fs->generation + (owner == BTRFS_TREE_LOG_OBJECTID))
		return "generation is newer than the superblock's";
	if (h->level) {
		if (n == 0)
			return "node with no pointers";
		if (n > space / PTR)
			return "more pointers than a node holds";
		for (uint32_t i = 0; i < n; i++) {
			uint64_t ptr = LE64(ptr_at(data, (int)i)->blockptr);
			if (!ptr || ptr % fs->sectorsize)
				return "child pointer zero or not aligned to the sectorsize";
			if (LE64(ptr_at(data, (int)i)->generation) > fs->generation + 1)
				return "child pointer generation is in the future";
		}
	} else {
		if (n > space / ITEM)
			return "more items than a leaf holds";
		uint32_t end = space; /* data of item i must end where item i-1's begins */
		for (uint32_t i = 0; i < n; i++) {
			const struct btrfs_item_disk *it = item_at(data, (int)i);
			uint32_t off = LE32(it->offset), sz = LE32(it->size);
			if (off > space || sz > space - off)
				return "item data runs past the end of the leaf";
			if (off + sz != end)
				return "item data is not packed in order";
			if (off < (i + 1) * ITEM && sz)
				return "item data overlaps the item headers";
			end = off;
		}
		if (n && end < n * ITEM)
			return "item data overlaps the item headers";
	}
	struct ref_key prev, cur;
	for (uint32_t i = 0; i < n; i++) {
		key_at(data, (int)i, &cur);
		if (i && ref_key_cmp(&prev, &cur) >= 0)
			return "keys out of order";
		prev = cur;
	}
	return h->level || fs->items_unjudged ? NULL : leaf_items_invalid(fs, data);
}

/* ---- The cache ---- */

static size_t bucket(uint64_t bytenr)
{
	return (size_t)((bytenr >> 12) * UINT64_C(0x9e3779b97f4a7c15) >> 52) % REF_CACHE_BUCKETS;
}

static void cache_evict_unused(ref_fs *fs)
{
	for (size_t b = 0; b < REF_CACHE_BUCKETS; b++) {
		struct ref_block **pp = &fs->cache[b];
		while (*pp) {
			struct ref_block *blk = *pp;
			if (blk->refs == 0 && !blk->dirty) {
				*pp = blk->hnext;
				free(blk);
				fs->ncached--;
			} else {
				pp = &blk->hnext;
			}
		}
	}
}

void cache_free_all(ref_fs *fs)
{
	for (size_t b = 0; b < REF_CACHE_BUCKETS; b++) {
		while (fs->cache[b]) {
			struct ref_block *blk = fs->cache[b];
			fs->cache[b] = blk->hnext;
			free(blk);
		}
	}
	fs->ncached = 0;
}

struct ref_block *cache_unlink(ref_fs *fs, uint64_t bytenr)
{
	struct ref_block **pp = &fs->cache[bucket(bytenr)];
	while (*pp && (*pp)->bytenr != bytenr)
		pp = &(*pp)->hnext;
	struct ref_block *b = *pp;
	if (b) {
		*pp = b->hnext;
		b->hnext = NULL;
		fs->ncached--;
	}
	return b;
}

const struct ref_block *cache_peek(const ref_fs *fs, uint64_t bytenr)
{
	const struct ref_block *b = fs->cache[bucket(bytenr)];
	while (b && b->bytenr != bytenr)
		b = b->hnext;
	return b;
}

void cache_insert(ref_fs *fs, struct ref_block *b)
{
	if (fs->ncached >= REF_CACHE_MAX_BLOCKS)
		cache_evict_unused(fs);
	size_t bk = bucket(b->bytenr);
	b->hnext = fs->cache[bk];
	fs->cache[bk] = b;
	fs->ncached++;
}

const uint8_t *ref_block_data(const struct ref_block *b)
{
	return b->data;
}

void ref_block_put(ref_fs *fs, struct ref_block *b)
{
	(void)fs;
	if (b && b->refs)
		b->refs--;
}

/* What the block's parent (a key pointer, the superblock, a root item) says
 * of it; 0, -1 and NULL are not checked. */
struct block_expect {
	uint64_t gen;
	int level;
	uint64_t owner;
	const struct ref_key *first_key; /* not checked on a block with no items */
};

/* Why a block that validates on its own is not the one its parent points to
 * (written into buf), or NULL.  As the kernel's btrfs_tree_parent_check, this
 * is part of each copy's validation: a stale copy (a lost write) is skipped
 * for the next one like a bad checksum. */
static const char *block_unexpected(const uint8_t *data, const struct block_expect *e, char *buf,
				    size_t len)
{
	const struct btrfs_header_disk *h = hdr(data);
	uint64_t gen = LE64(h->generation), owner = LE64(h->owner);
	if (e->gen && gen != e->gen) {
		snprintf(buf, len, "generation %llu, its parent expects %llu (a lost or misplaced write)",
			 (unsigned long long)gen, (unsigned long long)e->gen);
		return buf;
	}
	if (e->level >= 0 && h->level != e->level) {
		snprintf(buf, len, "level %u, expected %d", h->level, e->level);
		return buf;
	}
	if (e->owner && owner != e->owner) {
		snprintf(buf, len, "owner %llu, expected %llu", (unsigned long long)owner,
			 (unsigned long long)e->owner);
		return buf;
	}
	if (e->first_key && LE32(h->nritems)) {
		struct ref_key got;
		key_at(data, 0, &got);
		if (ref_key_cmp(e->first_key, &got)) {
			snprintf(buf, len, "first key (%llu %u %llu) differs from its parent's (%llu %u %llu)",
				 (unsigned long long)got.objectid, got.type,
				 (unsigned long long)got.offset,
				 (unsigned long long)e->first_key->objectid, e->first_key->type,
				 (unsigned long long)e->first_key->offset);
			return buf;
		}
	}
	return NULL;
}

/* Reads the block from the first copy that passes every check: checksum, the
 * block on its own (block_invalid), and what its parent expects.  Only that
 * copy is cached; with none, the first bad copy's reason is the error. */
static int load_block(ref_fs *fs, uint64_t bytenr, const struct block_expect *e,
		      struct ref_block **out)
{
	if (bytenr % fs->sectorsize)
		return ref_fail(fs, EUCLEAN, "tree block %llu is not aligned to the sectorsize",
				(unsigned long long)bytenr);
	struct ref_block *b = malloc(sizeof(*b) + fs->nodesize);
	if (!b)
		return ref_fail(fs, ENOMEM, "out of memory");
	int copies = ref_num_copies(fs, bytenr);
	if (copies <= 0) {
		free(b);
		return ref_fail(fs, EUCLEAN, "tree block %llu is not mapped by any chunk",
				(unsigned long long)bytenr);
	}
	int r = -EIO;
	char first_err[sizeof(fs->err)] = "", why_buf[sizeof(fs->err)];
	int bad_copy = -1;
	unsigned bad_mask = 0; /* copies that read but were wrong, or failed to read */
	for (int m = 0; m < copies; m++) {
		const char *why = NULL;
		r = ref_read_logical(fs, bytenr, b->data, fs->nodesize, m);
		if (r == 0 && !block_csum_ok(fs, b->data)) {
			why = "checksum mismatch";
			r = -EIO;
			fs->csum_errors++;
			devstats_inc(fs, io_copy_disk(fs, bytenr, m), BTRFS_DEV_STAT_CORRUPTION_ERRS);
		} else if (r == 0 && ((why = block_invalid(fs, b->data, bytenr)) ||
				      (why = block_unexpected(b->data, e, why_buf, sizeof(why_buf))))) {
			r = -EUCLEAN;
			/* (A copy of another generation than its parent records is the
			 * kernel's generation error; any other flaw a corruption.) */
			bool gen = e && e->gen && LE64(((const struct btrfs_header_disk *)b->data)->generation) != e->gen;
			devstats_inc(fs, io_copy_disk(fs, bytenr, m),
				     gen ? BTRFS_DEV_STAT_GENERATION_ERRS : BTRFS_DEV_STAT_CORRUPTION_ERRS);
		}
		if (r == 0) {
			if (bad_copy >= 0) {
				fs->repaired++;
				ref_log(fs, "tree block %llu: copy %d bad (%s), served from copy %d",
					(unsigned long long)bytenr, bad_copy, first_err, m);
			}
			for (int w = 0; w < m; w++)
				if (bad_mask >> w & 1)
					io_rewrite_copy(fs, bytenr, b->data, fs->nodesize, w);
			break;
		}
		if (r == -ENODEV)
			continue; /* a missing device: degraded, not damaged */
		bad_mask |= 1u << m;
		if (bad_copy < 0) {
			bad_copy = m;
			snprintf(first_err, sizeof(first_err), "%s", why ? why : fs->err);
		}
	}
	if (r) {
		free(b);
		return ref_fail(fs, r == -ENODEV ? EIO : -r, "tree block %llu: %s",
				(unsigned long long)bytenr, first_err[0] ? first_err : fs->err);
	}
	const struct btrfs_header_disk *h = hdr(b->data);
	b->bytenr = bytenr;
	b->gen = LE64(h->generation);
	b->owner = LE64(h->owner);
	b->level = h->level;
	b->refs = 0;
	b->dirty = b->dead = false;
	cache_insert(fs, b);
	*out = b;
	return 0;
}

static int read_block(ref_fs *fs, uint64_t bytenr, const struct block_expect *e,
		      struct ref_block **out)
{
	struct ref_block *b = fs->cache[bucket(bytenr)];
	while (b && b->bytenr != bytenr)
		b = b->hnext;
	if (b) {
		char why_buf[sizeof(fs->err)];
		const char *why = block_unexpected(b->data, e, why_buf, sizeof(why_buf));
		if (!why) {
			b->refs++;
			*out = b;
			return 0;
		}
		/* A block changed in this transaction or in use is what it is. */
		if (b->dirty || b->refs)
			return ref_fail(fs, EUCLEAN, "tree block %llu: %s",
					(unsigned long long)bytenr, why);
		/* Cached for a reader that expected less (no generation, no first
		 * key): read again, every copy held to these expectations, as the
		 * kernel re-reads a buffer that fails its parent's transid. */
		cache_unlink(fs, bytenr);
		free(b);
	}
	int r = load_block(fs, bytenr, e, &b);
	if (r)
		return r;
	b->refs++;
	*out = b;
	return 0;
}

int ref_read_block(ref_fs *fs, uint64_t bytenr, uint64_t gen, int level, uint64_t owner,
		   struct ref_block **out)
{
	struct block_expect e = { gen, level, owner, NULL };
	return read_block(fs, bytenr, &e, out);
}

int ref_read_child(ref_fs *fs, uint64_t bytenr, uint64_t gen, int level,
		   const struct ref_key *first_key, struct ref_block **out)
{
	struct block_expect e = { gen, level, 0, first_key };
	return read_block(fs, bytenr, &e, out);
}

/* ---- Paths ---- */

void ref_path_release(ref_fs *fs, struct ref_path *path)
{
	for (int l = 0; l < path->levels; l++)
		ref_block_put(fs, path->blk[l]);
	memset(path, 0, sizeof(*path));
}

static uint32_t nritems(const struct ref_block *b)
{
	return LE32(hdr(b->data)->nritems);
}

void ref_path_item(const struct ref_path *path, struct ref_key *key, const uint8_t **data,
		   uint32_t *size)
{
	const uint8_t *d = path->blk[0]->data;
	const struct btrfs_item_disk *it = item_at(d, path->slot[0]);
	key_from_disk(key, &it->key);
	*data = d + HDR + LE32(it->offset);
	*size = LE32(it->size);
}

/* Reads the child under slot[level] of path and puts it at level-1: a copy
 * that is not what the parent says (generation, level, first key) is skipped
 * for the next one. */
static int descend(ref_fs *fs, struct ref_path *path, int level)
{
	const struct btrfs_key_ptr_disk *p = ptr_at(path->blk[level]->data, path->slot[level]);
	struct ref_key want;
	key_from_disk(&want, &p->key);
	struct ref_block *child;
	int r = ref_read_child(fs, LE64(p->blockptr), LE64(p->generation), level - 1, &want,
			       &child);
	if (r)
		return r;
	ref_block_put(fs, path->blk[level - 1]);
	path->blk[level - 1] = child;
	return 0;
}

/* From a leaf slot that may be past its end, to the next existing item. */
static int settle(ref_fs *fs, struct ref_path *path)
{
	while ((uint32_t)path->slot[0] >= nritems(path->blk[0])) {
		int l = 1;
		while (l < path->levels && (uint32_t)path->slot[l] + 1 >= nritems(path->blk[l]))
			l++;
		if (l >= path->levels) {
			ref_path_release(fs, path);
			return 1;
		}
		path->slot[l]++;
		for (; l > 0; l--) {
			int r = descend(fs, path, l);
			if (r) {
				ref_path_release(fs, path);
				return r;
			}
			path->slot[l - 1] = 0;
		}
	}
	return 0;
}

int ref_next(ref_fs *fs, struct ref_path *path)
{
	if (!path->levels)
		return 1;
	path->slot[0]++;
	return settle(fs, path);
}

/* Descends to the leaf that holds key (or would), then places the leaf slot:
 * on the first item >= key, or with `le` on the last item <= key. */
static int search(ref_fs *fs, const struct ref_root *root, const struct ref_key *key,
		  struct ref_path *path, bool le)
{
	memset(path, 0, sizeof(*path));
	struct ref_block *b;
	int r = ref_read_block(fs, root->bytenr, root->gen, root->level, 0, &b);
	if (r)
		return r;
	path->levels = root->level + 1;
	path->blk[root->level] = b;
	for (int l = root->level;; l--) {
		const uint8_t *d = path->blk[l]->data;
		int lo = 0, hi = (int)nritems(path->blk[l]);
		/* First slot whose key is > key (nodes, and leaves with le) or >= key. */
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			struct ref_key k;
			key_at(d, mid, &k);
			int c = ref_key_cmp(&k, key);
			if (c < 0 || (c == 0 && (l > 0 || le)))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (l == 0) {
			if (!le) {
				path->slot[0] = lo;
				return settle(fs, path);
			}
			if (lo > 0) {
				path->slot[0] = lo - 1;
				return 0;
			}
			path->slot[0] = 0;
			return ref_prev(fs, path);
		}
		path->slot[l] = lo > 0 ? lo - 1 : 0;
		if ((r = descend(fs, path, l))) {
			ref_path_release(fs, path);
			return r;
		}
	}
}

int ref_search(ref_fs *fs, const struct ref_root *root, const struct ref_key *key,
	       struct ref_path *path)
{
	return search(fs, root, key, path, false);
}

int ref_search_le(ref_fs *fs, const struct ref_root *root, const struct ref_key *key,
		  struct ref_path *path)
{
	return search(fs, root, key, path, true);
}

int ref_prev(ref_fs *fs, struct ref_path *path)
{
	if (!path->levels)
		return 1;
	while (path->slot[0] == 0 || nritems(path->blk[0]) == 0) {
		int l = 1;
		while (l < path->levels && path->slot[l] == 0)
			l++;
		if (l >= path->levels) {
			ref_path_release(fs, path);
			return 1;
		}
		path->slot[l]--;
		for (; l > 0; l--) {
			int r = descend(fs, path, l);
			if (r) {
				ref_path_release(fs, path);
				return r;
			}
			path->slot[l - 1] = (int)nritems(path->blk[l - 1]);
		}
	}
	path->slot[0]--;
	return 0;
}

int ref_find_first(ref_fs *fs, const struct ref_root *root, uint64_t objectid, uint8_t type,
		   struct ref_path *path, struct ref_key *key, const uint8_t **data, uint32_t *size)
{
	struct ref_key want = { objectid, type, 0 };
	int r = ref_search(fs, root, &want, path);
	if (r < 0)
		return r;
	if (r == 0) {
		ref_path_item(path, key, data, size);
		if (key->objectid == objectid && key->type == type)
			return 0;
		ref_path_release(fs, path);
	}
	return -ENOENT;
}
