/*
 * check.c - `btrsim check`: the structure walk over every tree, and the
 * driver of the other passes (see check.h).
 */
#include "ref/check/check.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

void check_error(struct check *ck, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ERROR: ", ck->out);
	vfprintf(ck->out, fmt, ap);
	fputc('\n', ck->out);
	va_end(ap);
	ck->errors++;
}

const char *check_key_str(const struct ref_key *k, char *buf, size_t len)
{
	snprintf(buf, len, "(%llu %u %llu)", (unsigned long long)k->objectid, k->type,
		 (unsigned long long)k->offset);
	return buf;
}

/* An entry of 0 is a block that could not be read: no record. */
const struct check_block *check_block_find(const struct check *ck, uint64_t bytenr)
{
	uint64_t *i = u64map_get(&ck->st->block_index, bytenr, false);
	return i && *i ? &ck->st->blocks[*i - 1] : NULL;
}

static int add_parent(struct check_state *st, struct check_block *b, uint64_t parent, uint64_t tree)
{
	if (GROW(st->parents, st->nparents, st->parents_cap))
		return -ENOMEM;
	st->parents[st->nparents] = (struct check_parent){ parent, tree, b->parents };
	b->parents = (uint32_t)++st->nparents;
	return 0;
}

static bool holds_files(uint64_t tree)
{
	/* the root tree: the v1 space cache's free-space inodes; a relocation
	 * tree: a subvolume's copy whose file extents point to moved data */
	return tree == BTRFS_ROOT_TREE_OBJECTID || tree == BTRFS_FS_TREE_OBJECTID ||
	       tree == BTRFS_DATA_RELOC_TREE_OBJECTID || tree == BTRFS_TREE_RELOC_OBJECTID ||
	       (tree >= BTRFS_FIRST_FREE_OBJECTID && tree <= BTRFS_LAST_FREE_OBJECTID);
}

/* The data references of a leaf's file extent items. */
static int collect_drefs(struct check *ck, uint64_t tree, const uint8_t *leaf, uint64_t bytenr)
{
	struct check_state *st = ck->st;
	const struct btrfs_header_disk *h = (const void *)leaf;
	uint32_t n = LE32(h->nritems);
	for (uint32_t i = 0; i < n; i++) {
		const struct btrfs_item_disk *it = (const void *)(leaf + sizeof(*h) + i * sizeof(*it));
		if (it->key.type != BTRFS_EXTENT_DATA_KEY)
			continue;
		const struct btrfs_file_extent_item *fe = (const void *)(leaf + sizeof(*h) +
									LE32(it->offset));
		uint32_t size = LE32(it->size);
		if (size < offsetof(struct btrfs_file_extent_item, disk_bytenr) ||
		    fe->type == BTRFS_FILE_EXTENT_INLINE)
			continue;
		if (size < sizeof(*fe)) {
			check_error(ck, "tree %llu leaf %llu slot %u: file extent item is %u bytes",
				    (unsigned long long)tree, (unsigned long long)bytenr, i, size);
			continue;
		}
		if (!LE64(fe->disk_bytenr))
			continue; /* a hole */
		if (GROW(st->drefs, st->ndrefs, st->drefs_cap))
			return -ENOMEM;
		st->drefs[st->ndrefs++] = (struct check_dref){
			LE64(fe->disk_bytenr), LE64(fe->disk_num_bytes), bytenr, LE64(it->key.objectid),
			LE64(it->key.offset) - LE64(fe->offset) };
	}
	return 0;
}

static void key_of(const uint8_t *blk, uint32_t i, struct ref_key *k)
{
	const struct btrfs_header_disk *h = (const void *)blk;
	const struct btrfs_disk_key *dk =
		h->level ? &((const struct btrfs_key_ptr_disk *)(blk + sizeof(*h)))[i].key
			 : &((const struct btrfs_item_disk *)(blk + sizeof(*h)))[i].key;
	*k = (struct ref_key){ LE64(dk->objectid), dk->type, LE64(dk->offset) };
}

/* A block's keys against what its parent says: its first key the parent's
 * key for it (lo), its last key below the parent's next key (hi). */
static void check_keys(struct check *ck, uint64_t tree, uint64_t bytenr, const uint8_t *d,
		       uint64_t parent, const struct ref_key *lo, const struct ref_key *hi)
{
	char kb[64], kb2[64];
	uint32_t n = LE32(((const struct btrfs_header_disk *)d)->nritems);
	struct ref_key first, last;
	if (n) {
		key_of(d, 0, &first);
		key_of(d, n - 1, &last);
		if (lo && ref_key_cmp(&first, lo))
			check_error(ck, "tree %llu block %llu: first key %s is not its parent's %s",
				    (unsigned long long)tree, (unsigned long long)bytenr,
				    check_key_str(&first, kb, sizeof(kb)), check_key_str(lo, kb2, sizeof(kb2)));
		if (hi && ref_key_cmp(&last, hi) >= 0)
			check_error(ck, "tree %llu block %llu: last key %s is not below the next key %s of its parent",
				    (unsigned long long)tree, (unsigned long long)bytenr,
				    check_key_str(&last, kb, sizeof(kb)), check_key_str(hi, kb2, sizeof(kb2)));
	} else if (parent) {
		check_error(ck, "tree %llu: block %llu is empty but not a root",
			    (unsigned long long)tree, (unsigned long long)bytenr);
	}
}

/*
 * Walks the tree below bytenr once: every block validated (ref_read_block),
 * its keys inside [lo, hi) given by its parent, its first key equal to the
 * parent's, every reference recorded for the extent pass.  A block reached
 * again (shared by snapshots) has its level, generation and keys checked
 * against each further parent too.
 */
static int walk(struct check *ck, uint64_t tree, uint64_t bytenr, uint64_t gen, int level,
		uint64_t parent, const struct ref_key *lo, const struct ref_key *hi)
{
	struct check_state *st = ck->st;
	uint64_t *idx = u64map_get(&st->block_index, bytenr, true);
	if (!idx)
		return -ENOMEM;
	struct ref_block *rb;
	if (*idx) { /* shared with a tree walked before: check this parent's view of it */
		struct check_block *b = &st->blocks[*idx - 1];
		if (b->level != level) {
			check_error(ck, "tree %llu: block %llu is level %u, its parent expects %d",
				    (unsigned long long)tree, (unsigned long long)bytenr, b->level,
				    level);
		} else if (gen && b->gen != gen) {
			check_error(ck, "tree %llu: block %llu has generation %llu, its parent expects %llu",
				    (unsigned long long)tree, (unsigned long long)bytenr,
				    (unsigned long long)b->gen, (unsigned long long)gen);
		} else if (!ref_read_block(ck->fs, bytenr, 0, -1, 0, &rb)) {
			check_keys(ck, tree, bytenr, ref_block_data(rb), parent, lo, hi);
			ref_block_put(ck->fs, rb);
		}
		return add_parent(st, b, parent, tree);
	}
	if (ref_read_block(ck->fs, bytenr, gen, level, 0, &rb)) {
		st->unreadable++;
		check_error(ck, "tree %llu: %s", (unsigned long long)tree, ref_error(ck->fs));
		return 0;
	}
	const uint8_t *d = ref_block_data(rb);
	const struct btrfs_header_disk *h = (const void *)d;
	if (GROW(st->blocks, st->nblocks, st->blocks_cap)) {
		ref_block_put(ck->fs, rb);
		return -ENOMEM;
	}
	struct check_block *b = &st->blocks[st->nblocks];
	*b = (struct check_block){ bytenr, LE64(h->owner), LE64(h->generation), h->level, 0 };
	*idx = ++st->nblocks;
	int r = add_parent(st, b, parent, tree);
	/* A relocation tree's root is its own block or, once merging swapped
	 * it, one the subvolume's tree owned. */
	if (!parent && b->owner != tree && tree != BTRFS_TREE_LOG_OBJECTID &&
	    !(ck->reloc_of && b->owner == ck->reloc_of))
		check_error(ck, "tree %llu: root block %llu has owner %llu",
			    (unsigned long long)tree, (unsigned long long)bytenr,
			    (unsigned long long)b->owner);
	uint32_t n = LE32(h->nritems);
	check_keys(ck, tree, bytenr, d, parent, lo, hi);
	const char *why = h->level ? NULL : leaf_items_invalid(ck->fs, d);
	if (why) /* (read all the same, as btrfs check goes on past it) */
		check_error(ck, "tree %llu: leaf %llu: %s (the kernel's tree-checker refuses the leaf)",
			    (unsigned long long)tree, (unsigned long long)bytenr, why);
	if (!r && h->level == 0 && holds_files(tree))
		r = collect_drefs(ck, tree, d, bytenr);
	for (uint32_t i = 0; !r && h->level && i < n; i++) {
		const struct btrfs_key_ptr_disk *p =
			&((const struct btrfs_key_ptr_disk *)(d + sizeof(*h)))[i];
		struct ref_key k, next;
		key_of(d, i, &k);
		if (i + 1 < n)
			key_of(d, i + 1, &next);
		if (ck->drop_level >= 0 && node_child_dropped(d, (int)i, &ck->drop_key))
			continue; /* dropped by the cleaner already (as btrfs check skips it) */
		r = walk(ck, tree, LE64(p->blockptr), LE64(p->generation), h->level - 1, bytenr, &k,
			 i + 1 < n ? &next : hi);
	}
	ref_block_put(ck->fs, rb);
	return r;
}

struct tree_root {
	struct ref_root root;
	struct ref_key key;
	int drop_level; /* -1 unless a deleted subvolume is half dropped */
	struct ref_key drop_key;
};

/* Every tree: root, chunk, then each ROOT_ITEM of the root tree, and the log tree. */
static int walk_all(struct check *ck)
{
	ref_fs *fs = ck->fs;
	int r = walk(ck, BTRFS_ROOT_TREE_OBJECTID, fs->tree_root.bytenr, fs->tree_root.gen,
		     fs->tree_root.level, 0, NULL, NULL);
	if (!r)
		r = walk(ck, BTRFS_CHUNK_TREE_OBJECTID, fs->chunk_root.bytenr, fs->chunk_root.gen,
			 fs->chunk_root.level, 0, NULL, NULL);
	struct tree_root *roots = NULL;
	size_t n = 0, cap = 0;
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	int s = r ? 1 : ref_search(fs, &fs->tree_root, &key, &path);
	while (s == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.type == BTRFS_ROOT_ITEM_KEY) {
			char kb[64];
			if (size < btrfs_legacy_root_item_size()) {
				check_error(ck, "root tree key %s: root item is %u bytes",
					    check_key_str(&k, kb, sizeof(kb)), size);
			} else if (!GROW(roots, n, cap)) {
				const struct btrfs_root_item *ri = (const void *)data;
				roots[n++] = (struct tree_root){
					{ k.objectid, LE64(ri->bytenr), LE64(ri->generation), ri->level },
					k, -1, { 0, 0, 0 } };
				/* (a relocation tree still linked records how far the
				 * merge got there, merge_reloc_root: not a drop) */
				bool merging = k.objectid == BTRFS_TREE_RELOC_OBJECTID && LE32(ri->refs);
				if (ri->drop_progress.objectid && !merging) {
					roots[n - 1].drop_level = ri->drop_level;
					roots[n - 1].drop_key = (struct ref_key){
						LE64(ri->drop_progress.objectid), ri->drop_progress.type,
						LE64(ri->drop_progress.offset) };
				}
				if (ri->level >= BTRFS_MAX_TREE_LEVEL) {
					check_error(ck, "root tree key %s: level %u",
						    check_key_str(&k, kb, sizeof(kb)), ri->level);
					n--;
				}
			} else {
				r = -ENOMEM;
				break;
			}
		}
		s = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	if (s < 0)
		check_error(ck, "root tree: %s", ref_error(fs));
	struct check_state *st = ck->st;
	for (size_t i = 0; !r && i < n; i++) {
		const struct ref_root *rt = &roots[i].root;
		ck->drop_level = roots[i].drop_level;
		ck->drop_key = roots[i].drop_key;
		ck->reloc_of = rt->id == BTRFS_TREE_RELOC_OBJECTID ? roots[i].key.offset : 0;
		r = walk(ck, rt->id, rt->bytenr, rt->gen, rt->level, 0, NULL, NULL);
		ck->drop_level = -1;
		ck->reloc_of = 0;
		/* (a relocation tree's files are its subvolume's, checked there) */
		if (!r && holds_files(rt->id) && rt->id != BTRFS_TREE_RELOC_OBJECTID) {
			if (GROW(st->subvols, st->nsubvols, st->subvols_cap))
				r = -ENOMEM;
			else
				st->subvols[st->nsubvols++] = rt->id;
		}
	}
	free(roots);
	uint64_t log = LE64(fs->sb.log_root);
	if (!r && log)
		r = walk(ck, BTRFS_TREE_LOG_OBJECTID, log, 0, fs->sb.log_root_level, 0, NULL, NULL);
	return r;
}

static void state_free(struct check_state *st)
{
	free(st->blocks);
	free(st->parents);
	free(st->drefs);
	free(st->subvols);
	u64map_free(&st->block_index);
}

long ref_check(ref_fs *fs, const struct ref_check_opts *opts)
{
	struct check_state st = { 0 };
	struct check ck = { fs, opts && opts->out ? opts->out : stdout, 0, opts && opts->verbose,
			    &st, -1, { 0, 0, 0 }, 0 };
	fprintf(ck.out, "[1/7] checking tree structure\n");
	/* Leaves with items the tree-checker rejects are read and reported
	 * (walk), not refused. */
	bool unjudged = fs->items_unjudged;
	fs->items_unjudged = true;
	int r = walk_all(&ck);
	if (!r) {
		fprintf(ck.out, "[2/7] checking chunks, block groups and device extents\n");
		r = check_chunks(&ck);
	}
	if (!r) {
		fprintf(ck.out, "[3/7] checking fs trees (%zu)\n", st.nsubvols);
		for (size_t i = 0; !r && i < st.nsubvols; i++)
			r = check_fs_tree(&ck, st.subvols[i]);
	}
	if (!r) {
		fprintf(ck.out, "[4/7] checking extent references (%zu tree blocks, %zu data references)\n",
			st.nblocks, st.ndrefs);
		r = check_extents(&ck);
	}
	if (!r) {
		fprintf(ck.out, "[5/7] checking csums\n");
		r = check_csums(&ck);
	}
	if (!r) {
		bool fst = LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE;
		fprintf(ck.out, "[6/7] checking the free %s\n", fst ? "space tree" : "space cache");
		r = check_free_space(&ck);
	}
	if (!r)
		r = check_qgroups(&ck);
	state_free(&st);
	fs->items_unjudged = unjudged;
	if (r)
		return ref_fail(fs, -r, "check stopped: %s", r == -ENOMEM ? "out of memory" : fs->err);
	if (ck.errors)
		fprintf(ck.out, "found %lu error%s\n", ck.errors, ck.errors == 1 ? "" : "s");
	else
		fprintf(ck.out, "no error found\n");
	return (long)ck.errors;
}
