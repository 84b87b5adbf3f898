/*
 * rw.c - the state of a file system mounted for writing: which features the
 * write path supports, the trees changed in the running transaction, and the
 * dirty blocks of the block cache.
 */
#include "ref/log/log_write.h"
#include "ref/qgroup/qgroup.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>
#include <xxhash.h>

struct rw_tree *rw_tree_find(ref_fs *fs, uint64_t id)
{
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; i < rw->ntrees; i++)
		if (rw->trees[i]->root.id == id)
			return rw->trees[i];
	return NULL;
}

void rw_tree_forget(ref_fs *fs, uint64_t id)
{
	struct rw_state *rw = fs->rw;
	for (size_t i = 0; i < rw->ntrees; i++)
		if (rw->trees[i]->root.id == id) {
			u64map_free(&rw->trees[i]->dir_index);
			free(rw->trees[i]);
			rw->trees[i] = rw->trees[--rw->ntrees];
			return;
		}
}

int rw_tree_add(ref_fs *fs, const struct ref_root *root, uint64_t last_snapshot,
		struct rw_tree **out)
{
	struct rw_state *rw = fs->rw;
	if (rw->ntrees == rw->trees_cap) {
		size_t cap = rw->trees_cap ? rw->trees_cap * 2 : 16;
		void *p = realloc(rw->trees, cap * sizeof(*rw->trees));
		if (!p)
			return ref_fail(fs, ENOMEM, "out of memory");
		rw->trees = p;
		rw->trees_cap = cap;
	}
	/* Each tree has its own allocation: pointers to it stay valid as trees come. */
	struct rw_tree *t = calloc(1, sizeof(*t));
	if (!t)
		return ref_fail(fs, ENOMEM, "out of memory");
	rw->trees[rw->ntrees++] = t;
	*t = (struct rw_tree){ .root = *root, .last_snapshot = last_snapshot };
	*out = t;
	return 0;
}

int rw_tree_get(ref_fs *fs, uint64_t id, struct rw_tree **out)
{
	if ((*out = rw_tree_find(fs, id)))
		return 0;
	struct ref_root root;
	int r = ref_find_root(fs, id, &root);
	if (r)
		return r;
	uint64_t last_snapshot = 0, flags = 0;
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	struct ref_root tr = rw_tree_find(fs, BTRFS_ROOT_TREE_OBJECTID)->root;
	if (!ref_find_first(fs, &tr, id, BTRFS_ROOT_ITEM_KEY, &p, &k, &d, &size)) {
		if (size >= offsetof(struct btrfs_root_item, last_snapshot) + 8)
			last_snapshot = le64(d + offsetof(struct btrfs_root_item, last_snapshot));
		if (size >= offsetof(struct btrfs_root_item, flags) + 8)
			flags = le64(d + offsetof(struct btrfs_root_item, flags));
		ref_path_release(fs, &p);
	}
	if ((r = rw_tree_add(fs, &root, last_snapshot, out)))
		return r;
	(*out)->rdonly = flags & BTRFS_ROOT_SUBVOL_RDONLY;
	return 0;
}

struct rw_bg *rw_bg_find(ref_fs *fs, uint64_t logical)
{
	struct rw_state *rw = fs->rw;
	size_t lo = 0, hi = rw->nbgs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rw->bgs[mid].start + rw->bgs[mid].len <= logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < rw->nbgs && rw->bgs[lo].start <= logical)
		return &rw->bgs[lo];
	return NULL;
}

static int dirty_push(ref_fs *fs, struct ref_block *b)
{
	struct rw_state *rw = fs->rw;
	if (rw->ndirty == rw->dirty_cap) {
		size_t cap = rw->dirty_cap ? rw->dirty_cap * 2 : 256;
		void *p = realloc(rw->dirty, cap * sizeof(*rw->dirty));
		if (!p)
			return -ENOMEM;
		rw->dirty = p;
		rw->dirty_cap = cap;
	}
	b->dirty_slot = rw->ndirty;
	rw->dirty[rw->ndirty++] = b;
	return 0;
}

static int zombie_push(ref_fs *fs, struct ref_block *b)
{
	struct rw_state *rw = fs->rw;
	if (rw->nzombies == rw->zombies_cap) {
		size_t cap = rw->zombies_cap ? rw->zombies_cap * 2 : 16;
		void *p = realloc(rw->zombies, cap * sizeof(*rw->zombies));
		if (!p)
			return -ENOMEM;
		rw->zombies = p;
		rw->zombies_cap = cap;
	}
	rw->zombies[rw->nzombies++] = b;
	return 0;
}

struct ref_block *rw_block_new(ref_fs *fs, uint64_t bytenr)
{
	struct ref_block *old = cache_unlink(fs, bytenr);
	if (old && old->refs == 0)
		free(old);
	else if (old && zombie_push(fs, old)) {
		cache_insert(fs, old);
		return NULL;
	}
	struct ref_block *b = calloc(1, sizeof(*b) + fs->nodesize);
	if (!b)
		return NULL;
	b->bytenr = bytenr;
	b->refs = 1;
	b->dirty = true;
	if (dirty_push(fs, b)) {
		free(b);
		return NULL;
	}
	cache_insert(fs, b);
	return b;
}

void rw_block_kill(ref_fs *fs, struct ref_block *b)
{
	struct rw_state *rw = fs->rw;
	size_t i = b->dirty_slot;
	rw->dirty[i] = rw->dirty[--rw->ndirty];
	rw->dirty[i]->dirty_slot = i;
	b->dirty = false;
	b->dead = true;
	/* Out of the cache: its address may be handed out again before it is put. */
	if (cache_unlink(fs, b->bytenr) == b && b->refs)
		zombie_push(fs, b); /* on failure the block leaks, nothing worse */
	else if (!b->refs)
		free(b);
}

int rw_check_writable(ref_fs *fs)
{
	if (!fs->rw)
		return ref_fail(fs, EROFS, "the file system is mounted read-only");
	if (fs->rw->failed)
		return ref_fail(fs, EROFS, "a commit failed earlier; the file system is read-only now");
	return 0;
}

/* Features the write path keeps correct; anything else stays read-only. */
static int check_features(ref_fs *fs)
{
	const struct btrfs_super_disk *sb = &fs->sb;
	uint64_t incompat = LE64(sb->incompat_flags), ro = LE64(sb->compat_ro_flags);
	uint64_t known = BTRFS_FEATURE_INCOMPAT_MIXED_BACKREF | BTRFS_FEATURE_INCOMPAT_DEFAULT_SUBVOL |
			 BTRFS_FEATURE_INCOMPAT_COMPRESS_LZO | BTRFS_FEATURE_INCOMPAT_COMPRESS_ZSTD |
			 BTRFS_FEATURE_INCOMPAT_BIG_METADATA | BTRFS_FEATURE_INCOMPAT_EXTENDED_IREF |
			 BTRFS_FEATURE_INCOMPAT_SKINNY_METADATA | BTRFS_FEATURE_INCOMPAT_NO_HOLES |
			 BTRFS_FEATURE_INCOMPAT_RAID56 | BTRFS_FEATURE_INCOMPAT_RAID1C34 |
			 BTRFS_FEATURE_INCOMPAT_METADATA_UUID | BTRFS_FEATURE_INCOMPAT_MIXED_GROUPS;
	if (incompat & ~known)
		return ref_fail(fs, EROFS, "incompat features 0x%llx are not supported for writing",
				(unsigned long long)(incompat & ~known));
	/* Without the tree (the v1 space cache, or none), rw_init converts. */
	if ((ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE) &&
	    !(ro & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID))
		return ref_fail(fs, EROFS,
				"the free-space tree is marked invalid (an old kernel's clear_cache left it): writing needs it rebuilt, as the kernel's clear_cache,space_cache=v2 does");
	if (ro & ~(uint64_t)(BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE |
			     BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE_VALID |
			     BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE))
		return ref_fail(fs, EROFS, "compat_ro features 0x%llx are not supported for writing",
				(unsigned long long)ro);
	if (LE64(sb->log_root) && fs->opts.nologreplay)
		return ref_fail(fs, EROFS,
				"a log tree was left unreplayed (nologreplay): the file system is read-only, as the kernel's nologreplay needs ro");
	/* (Degraded: the open made sure no chunk lost more stripes than its
	 * profile tolerates, as the kernel's btrfs_check_rw_degradable; writes
	 * then skip what is missing.) */
	return 0;
}

int rw_init(ref_fs *fs)
{
	int r = check_features(fs);
	if (r)
		return r;
	if (fs->fsid_change & BTRFS_SUPER_FLAG_CHANGING_FSID_V2) /* device_list_add's answer */
		return ref_fail(fs, EAGAIN, "a device has an incomplete metadata_uuid change, please use btrfstune to complete");
	struct rw_state *rw = calloc(1, sizeof(*rw));
	if (!rw)
		return ref_fail(fs, ENOMEM, "out of memory");
	fs->rw = rw;
	rw->transid = fs->generation + 1;
	rw->orphans_pending = true; /* an earlier mount's deleted subvolume may wait */
	rw->bg_tree = LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_BLOCK_GROUP_TREE
			      ? BTRFS_BLOCK_GROUP_TREE_OBJECTID
			      : BTRFS_EXTENT_TREE_OBJECTID;
	struct ref_block *b;
	if ((r = ref_read_block(fs, fs->tree_root.bytenr, fs->tree_root.gen, fs->tree_root.level, 0,
				&b)))
		goto fail;
	memcpy(rw->chunk_tree_uuid, ((struct btrfs_header_disk *)b->data)->chunk_tree_uuid,
	       BTRFS_UUID_SIZE);
	ref_block_put(fs, b);
	struct rw_tree *t;
	if ((r = rw_tree_add(fs, &fs->tree_root, 0, &t)) ||
	    (r = rw_tree_add(fs, &fs->chunk_root, 0, &t)))
		goto fail;
	if ((r = alloc_load(fs)) || (r = qg_load(fs)))
		goto fail;
	return 0;
fail:
	rw_free(fs);
	return r;
}

void rw_free(ref_fs *fs)
{
	struct rw_state *rw = fs->rw;
	if (!rw)
		return;
	log_drop(fs);
	for (size_t i = 0; i < rw->nbgs; i++)
		rset_free(&rw->bgs[i].free);
	free(rw->bgs);
	for (size_t i = 0; i < rw->ntrees; i++) {
		u64map_free(&rw->trees[i]->dir_index);
		free(rw->trees[i]);
	}
	free(rw->trees);
	free(rw->dirty);
	for (size_t i = 0; i < rw->nzombies; i++)
		free(rw->zombies[i]);
	free(rw->zombies);
	rset_free(&rw->pinned);
	dref_free_all(fs);
	qg_free(fs);
	free(rw->pending);
	free(rw->devs);
	free(rw->held);
	free(rw);
	fs->rw = NULL;
}

/* A version-4 uuid drawn from the file system's state (fsid, tree id,
 * transaction, clock), so that a run is reproducible. */
void rw_new_uuid(ref_fs *fs, uint64_t id, uint8_t out[BTRFS_UUID_SIZE])
{
	uint64_t in[4] = { id, fs->rw->transid, fs->rw->time_ns, fs->rw->commits };
	uint8_t buf[sizeof(fs->sb.fsid) + sizeof(in)];
	memcpy(buf, fs->sb.fsid, sizeof(fs->sb.fsid));
	memcpy(buf + sizeof(fs->sb.fsid), in, sizeof(in));
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_withSeed(buf, sizeof(buf), 0x62747273696d));
	memcpy(out, c.digest, BTRFS_UUID_SIZE);
	out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
	out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
}
