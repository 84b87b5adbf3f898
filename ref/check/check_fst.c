/*
 * check_fst.c - the free-space tree against the extent tree: in every block
 * group, the free ranges it records (extents or bitmaps) must be exactly the
 * group's range minus its extents minus the stripe units that hold superblock
 * copies, and each FREE_SPACE_INFO's extent count must match.  Without the
 * tree, the v1 space cache (space_cache.c) the same way where it is valid,
 * as btrfs check's check_space_cache: a cache of another generation than
 * the superblock's is invalid (the kernel rebuilds it) and one the kernel
 * would not load is skipped, but a loaded cache must equal what the extent
 * tree implies.
 */
#include "ref/check/check.h"
#include "ref/txn/space_cache.h"

#include <errno.h>
#include <stdlib.h>

struct range {
	uint64_t start, end;
};

struct rlist {
	struct range *r;
	size_t n, cap;
};

static int push(struct rlist *l, uint64_t start, uint64_t end)
{
	if (start >= end)
		return 0;
	if (l->n && l->r[l->n - 1].end == start) { /* merge with the one before */
		l->r[l->n - 1].end = end;
		return 0;
	}
	if (GROW(l->r, l->n, l->cap))
		return -ENOMEM;
	l->r[l->n++] = (struct range){ start, end };
	return 0;
}

/* Used ranges from the extent tree, in address order. */
static int load_used(struct check *ck, struct rlist *used)
{
	ref_fs *fs = ck->fs;
	struct ref_root root;
	if (ref_find_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &root))
		return 1; /* reported by the extent pass */
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	int r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		uint64_t len = k.type == BTRFS_EXTENT_ITEM_KEY ? k.offset
			       : k.type == BTRFS_METADATA_ITEM_KEY ? fs->nodesize : 0;
		if (len && k.objectid + len > k.objectid &&
		    (!used->n || k.objectid >= used->r[used->n - 1].end) &&
		    push(used, k.objectid, k.objectid + len)) {
			r = -ENOMEM;
			break;
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	if (r == -ENOMEM)
		return r;
	return r < 0 ? 1 : 0;
}

/* What should be free in chunk c: its range minus the used ranges. */
static int expected_free(const struct ref_chunk *c, const struct rlist *used, struct rlist *out)
{
	uint64_t pos = c->logical, end = c->logical + c->length;
	size_t u = 0;
	while (u < used->n && used->r[u].end <= pos)
		u++;
	int r = 0;
	for (; !r && u < used->n && used->r[u].start < end; u++) {
		r = push(out, pos, used->r[u].start > pos ? used->r[u].start : pos);
		if (used->r[u].end > pos)
			pos = used->r[u].end;
	}
	return r ? r : push(out, pos < end ? pos : end, end);
}

/* What the items of one block group's FREE_SPACE_INFO are. */
struct info {
	bool found;             /* a FREE_SPACE_INFO */
	uint32_t count, flags;  /* its fields */
	bool extents, bitmaps;  /* items of each kind met */
};

/* What the free-space tree records for the block group at c. */
static int recorded_free(struct check *ck, const struct ref_root *root, const struct ref_chunk *c,
			 struct rlist *out, struct info *in)
{
	uint32_t *count = &in->count;
	bool *found = &in->found;
	ref_fs *fs = ck->fs;
	struct ref_path path;
	struct ref_key key = { c->logical, BTRFS_FREE_SPACE_INFO_KEY, c->length };
	uint64_t end = c->logical + c->length;
	*found = false;
	int r = ref_search(fs, root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid >= end)
			break;
		if (k.type == BTRFS_FREE_SPACE_INFO_KEY) {
			if (k.objectid != c->logical || *found)
				break;
			*found = true;
			*count = size >= sizeof(struct btrfs_free_space_info)
					 ? LE32(((const struct btrfs_free_space_info *)data)->extent_count)
					 : 0;
			in->flags = size >= sizeof(struct btrfs_free_space_info)
					    ? LE32(((const struct btrfs_free_space_info *)data)->flags)
					    : 0;
		} else if (k.type == BTRFS_FREE_SPACE_EXTENT_KEY) {
			in->extents = true;
			if (push(out, k.objectid, k.objectid + k.offset)) {
				r = -ENOMEM;
				break;
			}
		} else if (k.type == BTRFS_FREE_SPACE_BITMAP_KEY) {
			in->bitmaps = true;
			uint64_t bits = k.offset / fs->sectorsize;
			if (size < (bits + 7) / 8) {
				char kb[64];
				check_error(ck, "free space tree key %s: bitmap of %u bytes is too short",
					    check_key_str(&k, kb, sizeof(kb)), size);
			} else {
				for (uint64_t b = 0; b < bits && !r; b++)
					if (data[b / 8] & (1u << (b % 8)))
						r = push(out, k.objectid + b * fs->sectorsize,
							 k.objectid + (b + 1) * fs->sectorsize);
				if (r) {
					r = -ENOMEM;
					break;
				}
			}
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		check_error(ck, "free space tree: %s", ref_error(fs));
	return 0;
}

/* The first difference of two range lists: false when they are equal. */
static bool differ(const struct rlist *want, const struct sc_range *have, size_t nhave,
		   struct range *w, struct range *h, size_t *at)
{
	size_t k = 0;
	while (k < want->n && k < nhave && want->r[k].start == have[k].start &&
	       want->r[k].end == have[k].end)
		k++;
	*w = k < want->n ? want->r[k] : (struct range){ 0, 0 };
	*h = k < nhave ? (struct range){ have[k].start, have[k].end } : (struct range){ 0, 0 };
	*at = k;
	return k < want->n || k < nhave;
}

/* Takes [start, start + len) out of the sorted, disjoint ranges of l. */
static int cut(void *ctx, uint64_t start, uint64_t len)
{
	struct rlist *l = ctx, out = { 0 };
	uint64_t end = start + len;
	int r = 0;
	for (size_t i = 0; !r && i < l->n; i++) {
		struct range g = l->r[i];
		if (g.end <= start || g.start >= end) {
			r = push(&out, g.start, g.end);
			continue;
		}
		r = push(&out, g.start, start > g.start ? start : g.start);
		if (!r)
			r = push(&out, end < g.end ? end : g.end, g.end);
	}
	free(l->r);
	*l = out;
	return r;
}

static int check_space_cache(struct check *ck)
{
	ref_fs *fs = ck->fs;
	struct sc_file *files;
	size_t nfiles;
	int r = space_cache_files(fs, &files, &nfiles);
	if (r) {
		check_error(ck, "space cache: %s", ref_error(fs));
		return r == -ENOMEM ? r : 0;
	}
	uint64_t cgen = LE64(fs->sb.cache_generation), gen = LE64(fs->sb.generation);
	if (nfiles && cgen != (uint64_t)-1 && cgen != gen) {
		fprintf(ck->out, "cache and super generation don't match, space cache will be invalidated\n");
		nfiles = 0;
	}
	struct rlist used = { 0 };
	if (nfiles && (r = load_used(ck, &used))) {
		free(used.r);
		free(files);
		return r < 0 ? r : 0;
	}
	for (size_t i = 0; !r && i < nfiles; i++) {
		const struct ref_chunk *c = NULL;
		for (size_t j = 0; j < fs->nchunks && !c; j++)
			if (fs->chunks[j].logical == files[i].group)
				c = &fs->chunks[j];
		if (!c) {
			check_error(ck, "space cache: a FREE_SPACE item for block group %llu, which does not exist",
				    (unsigned long long)files[i].group);
			continue;
		}
		struct sc_range *have = NULL;
		size_t nhave = 0;
		char why[160];
		int l = space_cache_load(fs, &files[i], &have, &nhave, why, sizeof(why));
		if (l == 0 && ck->verbose)
			fprintf(ck->out, "free space cache of block group %llu not loaded: %s\n",
				(unsigned long long)files[i].group, why);
		if (l < 0 && l != -ENOMEM)
			fprintf(ck->out, "free space cache of block group %llu not loaded: %s\n",
				(unsigned long long)files[i].group, ref_error(fs));
		struct rlist want = { 0 };
		/* The cache leaves out the superblock copies' stripe units,
		 * which the allocator never uses. */
		if (l == 1 && !(r = expected_free(c, &used, &want)) &&
		    !(r = chunk_super_units(c, cut, &want))) {
			struct range w, h;
			size_t at;
			if (differ(&want, have, nhave, &w, &h, &at))
				check_error(ck, "space cache of block group %llu appears valid but isn't: free range %zu is [%llu, %llu), the extent tree implies [%llu, %llu)",
					    (unsigned long long)c->logical, at, (unsigned long long)h.start,
					    (unsigned long long)h.end, (unsigned long long)w.start,
					    (unsigned long long)w.end);
		}
		if (l == -ENOMEM)
			r = l;
		free(want.r);
		free(have);
	}
	free(used.r);
	free(files);
	return r;
}

int check_free_space(struct check *ck)
{
	ref_fs *fs = ck->fs;
	if (!(LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE))
		return check_space_cache(ck);
	struct ref_root root;
	if (ref_find_root(fs, BTRFS_FREE_SPACE_TREE_OBJECTID, &root)) {
		check_error(ck, "the free-space tree feature is on but there is no free-space tree");
		return 0;
	}
	struct rlist used = { 0 };
	int r = load_used(ck, &used);
	if (r) {
		free(used.r);
		return r < 0 ? r : 0;
	}
	for (size_t i = 0; !r && i < fs->nchunks; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		struct rlist want = { 0 }, have = { 0 };
		struct info in = { 0 };
		r = expected_free(c, &used, &want);
		if (!r)
			r = recorded_free(ck, &root, c, &have, &in);
		uint32_t count = in.count;
		bool found = in.found;
		/* The flag says which kind of item holds the group's free space: a
		 * reader (the kernel's, ref's writer) takes it at its word. */
		bool bm = in.flags & BTRFS_FREE_SPACE_USING_BITMAPS;
		/* Other flag bits are nobody's: Linux 6.18 loads and rewrites such
		 * an item as it is (its tree-checker has no rule for it) and btrfs
		 * check says nothing (tests/interop/test_fst_leftovers.sh). */
		if (!r && found && (bm ? in.extents : in.bitmaps))
			check_error(ck, "free space tree: block group %llu: FREE_SPACE_INFO says %s, but it has %s items",
				    (unsigned long long)c->logical, bm ? "bitmaps" : "extents",
				    bm ? "extent" : "bitmap");
		if (!r && !found)
			check_error(ck, "free space tree: block group %llu has no FREE_SPACE_INFO",
				    (unsigned long long)c->logical);
		if (!r && found) {
			size_t k = 0;
			while (k < want.n && k < have.n && want.r[k].start == have.r[k].start &&
			       want.r[k].end == have.r[k].end)
				k++;
			if (k < want.n || k < have.n) {
				struct range w = k < want.n ? want.r[k] : (struct range){ 0, 0 };
				struct range h = k < have.n ? have.r[k] : (struct range){ 0, 0 };
				check_error(ck, "free space tree: block group %llu: free range %zu is [%llu, %llu), the extent tree implies [%llu, %llu)",
					    (unsigned long long)c->logical, k, (unsigned long long)h.start,
					    (unsigned long long)h.end, (unsigned long long)w.start,
					    (unsigned long long)w.end);
			}
			if (count != have.n)
				check_error(ck, "free space tree: block group %llu: FREE_SPACE_INFO counts %u extents, %zu recorded",
					    (unsigned long long)c->logical, count, have.n);
		}
		free(want.r);
		free(have.r);
	}
	free(used.r);
	return r;
}
