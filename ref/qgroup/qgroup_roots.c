/*
 * qgroup_roots.c - which subvolumes reach an extent, found from its back
 * references upwards (the kernel's btrfs_find_all_roots), in one of two
 * views: the last commit's trees, or the running transaction's.
 *
 * A shared reference names the parent block: the extent is reached from
 * whatever reaches the parent.  A keyed reference names only a tree: the
 * parent is found by searching that tree for the block's first key one level
 * up (for a data extent, the leaves holding the file extent items that point
 * at it), and again the extent is reached from whatever reaches that parent,
 * which may be other subvolumes too when the parent is shared.  A tree's root
 * block is reached from the tree.  Parents are always one level up, so the
 * walk ends within BTRFS_MAX_TREE_LEVEL steps; the answer per tree block is
 * remembered for the rest of the view's life.
 *
 * A deleted subvolume still reaches what the cleaner has not dropped yet:
 * its children before drop_progress at drop_level are not searched.
 */
#include "ref/txn/extent.h"
#include "ref/qgroup/qgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct qg_vroot {
	uint64_t id;
	bool exists;
	struct ref_root root;
	int drop_level; /* -1 unless half dropped by the cleaner */
	struct ref_key drop_key;
};

struct qg_view {
	ref_fs *fs;
	bool old;
	struct ref_root tree_root, extent_root;
	struct qg_vroot *roots;
	size_t nroots, roots_cap;
	struct u64map memo; /* tree block -> 1 + its set's index */
	struct qg_roots *sets;
	size_t nsets, sets_cap;
};

bool qg_is_fstree(uint64_t id)
{
	return id == BTRFS_FS_TREE_OBJECTID ||
	       (id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID);
}

bool qg_roots_has(const struct qg_roots *r, uint64_t id)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->ids[mid] == id)
			return true;
		if (r->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int qg_roots_add(struct qg_roots *r, uint64_t id)
{
	size_t at = 0;
	while (at < r->n && r->ids[at] < id)
		at++;
	if (at < r->n && r->ids[at] == id)
		return 0;
	if (ref_grow((void **)&r->ids, r->n, &r->cap, sizeof(*r->ids)))
		return -ENOMEM;
	memmove(r->ids + at + 1, r->ids + at, (r->n - at) * sizeof(*r->ids));
	r->ids[at] = id;
	r->n++;
	return 0;
}

static int roots_union(struct qg_roots *dst, const struct qg_roots *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (qg_roots_add(dst, src->ids[i]))
			return -ENOMEM;
	return 0;
}

void qg_roots_free(struct qg_roots *r)
{
	free(r->ids);
	memset(r, 0, sizeof(*r));
}

/* The root item of tree id in the view's root tree: 0, 1 when absent. */
static int read_root_item(struct qg_view *v, uint64_t id, struct qg_vroot *out)
{
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	int r = ref_find_first(v->fs, &v->tree_root, id, BTRFS_ROOT_ITEM_KEY, &p, &k, &d, &size);
	if (r == -ENOENT)
		return 1;
	if (r)
		return r;
	struct btrfs_root_item ri;
	memset(&ri, 0, sizeof(ri));
	memcpy(&ri, d, size < sizeof(ri) ? size : sizeof(ri));
	ref_path_release(v->fs, &p);
	if (size < btrfs_legacy_root_item_size())
		return ref_fail(v->fs, EUCLEAN, "root item of tree %llu is %u bytes",
				(unsigned long long)id, size);
	out->root = (struct ref_root){ id, LE64(ri.bytenr), LE64(ri.generation), ri.level };
	out->drop_level = -1;
	if (ri.drop_progress.objectid) {
		out->drop_level = ri.drop_level;
		out->drop_key = (struct ref_key){ LE64(ri.drop_progress.objectid),
						  ri.drop_progress.type,
						  LE64(ri.drop_progress.offset) };
	}
	return 0;
}

static int view_root(struct qg_view *v, uint64_t id, const struct qg_vroot **out)
{
	for (size_t i = 0; i < v->nroots; i++)
		if (v->roots[i].id == id) {
			*out = &v->roots[i];
			return 0;
		}
	struct qg_vroot vr = { .id = id, .drop_level = -1 };
	int r = read_root_item(v, id, &vr);
	if (r < 0)
		return r;
	vr.exists = r == 0;
	/* The running transaction's trees are ahead of their root items. */
	struct rw_tree *t = v->old ? NULL : rw_tree_find(v->fs, id);
	if (vr.exists && t)
		vr.root = t->root;
	if (ref_grow((void **)&v->roots, v->nroots, &v->roots_cap, sizeof(*v->roots)))
		return ref_fail(v->fs, ENOMEM, "out of memory");
	v->roots[v->nroots] = vr;
	*out = &v->roots[v->nroots++];
	return 0;
}

int qg_view_open(ref_fs *fs, bool old, struct qg_view **out)
{
	struct qg_view *v = calloc(1, sizeof(*v));
	if (!v)
		return ref_fail(fs, ENOMEM, "out of memory");
	v->fs = fs;
	v->old = old;
	struct rw_tree *rt = old ? NULL : rw_tree_find(fs, BTRFS_ROOT_TREE_OBJECTID);
	v->tree_root = rt ? rt->root : fs->tree_root;
	const struct qg_vroot *er;
	int r = view_root(v, BTRFS_EXTENT_TREE_OBJECTID, &er);
	if (!r && !er->exists)
		r = ref_fail(fs, EUCLEAN, "no extent tree");
	if (r) {
		qg_view_close(v);
		return r;
	}
	v->extent_root = er->root;
	*out = v;
	return 0;
}

void qg_view_close(struct qg_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->nsets; i++)
		qg_roots_free(&v->sets[i]);
	free(v->sets);
	free(v->roots);
	u64map_free(&v->memo);
	free(v);
}

/* The extent item and its references in the view: 0, 1 when there is none. */
static int load_refs(struct qg_view *v, const struct ref_key *key, struct extent_refs *x)
{
	struct ref_key got;
	memset(x, 0, sizeof(*x));
	int r = bt_peek(v->fs, &v->extent_root, key, false, &got, NULL);
	if (r < 0)
		return r;
	if (r == 1 || ref_key_cmp(&got, key))
		return 1;
	struct rw_tree et = { .root = v->extent_root };
	return extent_load(v->fs, &et, key, x);
}

/* Position of the last key <= k in a block (-1 when every key is greater). */
static int slot_le(const uint8_t *d, const struct ref_key *k)
{
	int lo = 0, hi = (int)blk_nritems(d);
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		struct ref_key mk;
		blk_key(d, mid, &mk);
		if (ref_key_cmp(&mk, k) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* The block one level up that points at block `bytenr` (first key k, level
 * `level`) in tree vr: *parent = its address; 0 with *parent 0 when the block
 * is the tree's root; 1 when the tree does not hold the block. */
static int keyed_parent(struct qg_view *v, const struct qg_vroot *vr, uint64_t bytenr,
			int level, const struct ref_key *k, uint64_t *parent)
{
	*parent = 0;
	if (vr->root.bytenr == bytenr)
		return 0;
	if (!k || vr->root.level <= level)
		return 1;
	struct ref_block *b;
	int r = ref_read_block(v->fs, vr->root.bytenr, vr->root.gen, vr->root.level, 0, &b);
	while (!r) {
		int l = b->level, slot = slot_le(b->data, k);
		if (slot < 0 || (vr->drop_level >= 0 && node_child_dropped(b->data, slot, &vr->drop_key))) {
			r = 1; /* not in the tree, or in a part the cleaner dropped */
			break;
		}
		uint64_t gen, child = node_ptr(b->data, slot, &gen);
		if (l == level + 1) {
			if (child == bytenr)
				*parent = b->bytenr;
			else
				r = 1;
			break;
		}
		struct ref_block *c;
		r = ref_read_block(v->fs, child, gen, l - 1, 0, &c);
		ref_block_put(v->fs, b);
		b = r ? NULL : c;
	}
	if (b)
		ref_block_put(v->fs, b);
	return r;
}

static int tree_roots(struct qg_view *v, uint64_t bytenr, int level, int depth, size_t *set);

/* Adds to acc what reaches the parent block at `parent`. */
static int add_parent(struct qg_view *v, uint64_t parent, int level, int depth, struct qg_roots *acc)
{
	size_t ps;
	int r = tree_roots(v, parent, level, depth, &ps);
	return r ? r : roots_union(acc, &v->sets[ps]) ? ref_fail(v->fs, ENOMEM, "out of memory") : 0;
}

/* Adds to acc what reaches tree block `bytenr` through tree `root`'s keyed
 * reference. */
static int add_keyed_tree(struct qg_view *v, uint64_t root, uint64_t bytenr, int level, int depth,
			  struct qg_roots *acc)
{
	const struct qg_vroot *vr;
	int r;
	if (!qg_is_fstree(root))
		return 0;
	if ((r = view_root(v, root, &vr)) < 0 || !vr->exists)
		return r < 0 ? r : 0;
	struct qg_vroot copy = *vr; /* (the recursion below may move the array) */
	struct ref_block *b;
	if ((r = ref_read_block(v->fs, bytenr, 0, level, 0, &b)))
		return r;
	struct ref_key first;
	bool has = blk_nritems(b->data) > 0;
	if (has)
		blk_key(b->data, 0, &first);
	ref_block_put(v->fs, b);
	uint64_t parent;
	if ((r = keyed_parent(v, &copy, bytenr, level, has ? &first : NULL, &parent)))
		return r < 0 ? r : 0;
	if (!parent)
		return qg_roots_add(acc, root) ? ref_fail(v->fs, ENOMEM, "out of memory") : 0;
	return add_parent(v, parent, level + 1, depth + 1, acc);
}

static int tree_roots(struct qg_view *v, uint64_t bytenr, int level, int depth, size_t *set)
{
	if (depth > BTRFS_MAX_TREE_LEVEL || level >= BTRFS_MAX_TREE_LEVEL)
		return ref_fail(v->fs, EUCLEAN, "back references of block %llu climb past level %d",
				(unsigned long long)bytenr, BTRFS_MAX_TREE_LEVEL);
	uint64_t *m = u64map_get(&v->memo, bytenr, true);
	if (!m)
		return ref_fail(v->fs, ENOMEM, "out of memory");
	if (*m) {
		*set = *m - 1;
		return 0;
	}
	struct ref_key key = extent_tree_key(v->fs, bytenr, level);
	struct extent_refs x;
	struct qg_roots acc = { 0 };
	int r = load_refs(v, &key, &x);
	for (size_t i = 0; r == 0 && i < x.n; i++) {
		const struct xref *e = &x.refs[i];
		if (e->type == BTRFS_SHARED_BLOCK_REF_KEY)
			r = add_parent(v, e->parent, level + 1, depth + 1, &acc);
		else if (e->type == BTRFS_TREE_BLOCK_REF_KEY)
			r = add_keyed_tree(v, e->root, bytenr, level, depth, &acc);
	}
	extent_refs_free(&x);
	if (r < 0 || ref_grow((void **)&v->sets, v->nsets, &v->sets_cap, sizeof(*v->sets))) {
		qg_roots_free(&acc);
		return r < 0 ? r : ref_fail(v->fs, ENOMEM, "out of memory");
	}
	/* (The map may have grown during the recursion: look the entry up again.) */
	v->sets[v->nsets] = acc;
	*set = v->nsets++;
	*u64map_get(&v->memo, bytenr, true) = *set + 1;
	return 0;
}

/* Adds to acc what reaches the leaves of tree `root` whose file extent items
 * make up a keyed data reference (ino, offset, count) to extent `bytenr`. */
static int add_keyed_data(struct qg_view *v, const struct xref *e, uint64_t bytenr,
			  struct qg_roots *acc)
{
	const struct qg_vroot *vr;
	int r;
	if (!qg_is_fstree(e->root))
		return 0;
	if ((r = view_root(v, e->root, &vr)) < 0 || !vr->exists)
		return r < 0 ? r : 0;
	struct ref_root root = vr->root;
	/* The reference's offset is the item's key offset less its offset into
	 * the extent, modulo 2^64: a clone placing a range before where it sits
	 * in the extent makes it wrap, and then the items lie from offset 0 on
	 * (as the kernel's backref walk searches them). */
	struct ref_key k = { e->ino, BTRFS_EXTENT_DATA_KEY, e->offset > INT64_MAX ? 0 : e->offset };
	if (vr->drop_level >= 0 && ref_key_cmp(&k, &vr->drop_key) < 0)
		k = vr->drop_key; /* (what lies before is dropped) */
	struct ref_path p;
	r = ref_search(v->fs, &root, &k, &p);
	uint64_t found = 0, last_leaf = 0;
	while (r == 0 && found < e->count) {
		struct ref_key ik;
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &ik, &d, &size);
		if (ik.objectid != e->ino || ik.type != BTRFS_EXTENT_DATA_KEY)
			break;
		const struct btrfs_file_extent_item *fi = (const void *)d;
		if (size >= sizeof(*fi) && fi->type != BTRFS_FILE_EXTENT_INLINE &&
		    LE64(fi->disk_bytenr) == bytenr && ik.offset - LE64(fi->offset) == e->offset) {
			found++;
			uint64_t leaf = p.blk[0]->bytenr;
			if (leaf != last_leaf && (r = add_parent(v, leaf, 0, 1, acc)))
				break;
			last_leaf = leaf;
		}
		r = ref_next(v->fs, &p);
	}
	ref_path_release(v->fs, &p);
	return r < 0 ? r : 0;
}

int qg_view_roots(struct qg_view *v, const struct qg_extent *e, struct qg_roots *out)
{
	out->n = 0;
	if (e->tree) {
		size_t s;
		int r = tree_roots(v, e->bytenr, e->level, 0, &s);
		return r ? r : roots_union(out, &v->sets[s]) ? ref_fail(v->fs, ENOMEM, "out of memory") : 0;
	}
	struct ref_key key = { e->bytenr, BTRFS_EXTENT_ITEM_KEY, e->num_bytes };
	struct extent_refs x;
	int r = load_refs(v, &key, &x);
	for (size_t i = 0; r == 0 && i < x.n; i++) {
		const struct xref *xr = &x.refs[i];
		if (xr->type == BTRFS_SHARED_DATA_REF_KEY)
			r = add_parent(v, xr->parent, 0, 1, out);
		else if (xr->type == BTRFS_EXTENT_DATA_REF_KEY)
			r = add_keyed_data(v, xr, e->bytenr, out);
	}
	extent_refs_free(&x);
	return r < 0 ? r : 0;
}
