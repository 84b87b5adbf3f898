/*
 * check_fs_link.c - the pending names of the subvolume pass: a hash table of
 * (dir, ino, name) that holds each name until its INODE_REF (or EXTREF),
 * DIR_ITEM and DIR_INDEX have all been seen, then compares them (index, file
 * type) and drops it.  Only names still waiting for a part are held, so a tree
 * walked in key order keeps few of them; what is left at the end is reported.
 * A complete name is forgotten: a later duplicate of one of its parts shows as
 * a name missing its other parts.
 */
#include "ref/check/check_fs.h"

#include <stdlib.h>

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

static uint64_t link_hash(uint64_t dir, uint64_t ino, const char *name, uint16_t len)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a over the name */
	for (uint16_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= UINT64_C(0x100000001b3);
	}
	return mix(h ^ mix(dir) ^ mix(ino + UINT64_C(0x9e3779b97f4a7c15)));
}

static bool link_is(const struct fs_link *l, uint64_t dir, uint64_t ino, const char *name,
		    uint16_t len)
{
	return l->dir == dir && l->ino == ino && l->name_len == len && !memcmp(l->name, name, len);
}

static int grow(struct fs_links *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	struct fs_link **slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		struct fs_link *l = t->slot[i];
		if (!l)
			continue;
		size_t s = (size_t)l->hash & (cap - 1);
		while (slot[s])
			s = (s + 1) & (cap - 1);
		slot[s] = l;
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return 0;
}

struct fs_link *fs_links_get(struct fs_links *t, uint64_t dir, uint64_t ino, const char *name,
			     uint16_t len)
{
	uint64_t h = link_hash(dir, ino, name, len);
	if (t->cap) {
		for (size_t s = (size_t)h & (t->cap - 1); t->slot[s]; s = (s + 1) & (t->cap - 1))
			if (t->slot[s]->hash == h && link_is(t->slot[s], dir, ino, name, len))
				return t->slot[s];
	}
	if ((t->n + 1) * 2 > t->cap && grow(t))
		return NULL;
	struct fs_link *l = calloc(1, sizeof(*l) + len);
	if (!l)
		return NULL;
	l->dir = dir;
	l->ino = ino;
	l->hash = h;
	l->name_len = len;
	memcpy(l->name, name, len);
	size_t s = (size_t)h & (t->cap - 1);
	while (t->slot[s])
		s = (s + 1) & (t->cap - 1);
	t->slot[s] = l;
	t->n++;
	return l;
}

void fs_links_remove(struct fs_links *t, struct fs_link *l)
{
	size_t mask = t->cap - 1, i = (size_t)l->hash & mask;
	while (t->slot[i] != l)
		i = (i + 1) & mask;
	/* Backward shift: pull later members of the probe run into the hole. */
	for (size_t j = (i + 1) & mask; t->slot[j]; j = (j + 1) & mask) {
		size_t home = (size_t)t->slot[j]->hash & mask;
		/* The entry at j may move to i when its home is not in (i, j]. */
		bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			t->slot[i] = t->slot[j];
			i = j;
		}
	}
	t->slot[i] = NULL;
	t->n--;
	free(l);
}

static int link_cmp(const void *a, const void *b)
{
	const struct fs_link *x = *(struct fs_link *const *)a, *y = *(struct fs_link *const *)b;
	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	uint16_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

struct fs_link **fs_links_drain(struct fs_links *t, size_t *n)
{
	*n = t->n;
	if (!t->n)
		return NULL;
	struct fs_link **all = malloc(t->n * sizeof(*all));
	if (!all)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i])
			all[k++] = t->slot[i];
	qsort(all, k, sizeof(*all), link_cmp);
	free(t->slot);
	*t = (struct fs_links){ 0 };
	return all;
}

void fs_links_free(struct fs_links *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slot[i]);
	free(t->slot);
	*t = (struct fs_links){ 0 };
}

/* ---- Pairing the parts, and the reports ---- */

static const char *part_name(unsigned part)
{
	return part == FS_LINK_ITEM ? "DIR_ITEM" : part == FS_LINK_INDEX ? "DIR_INDEX" : "INODE_REF";
}

/* The key of one part of l, for reports. */
static struct ref_key part_key(const struct fs_link *l, unsigned part)
{
	if (part == FS_LINK_INDEX)
		return (struct ref_key){ l->dir, BTRFS_DIR_INDEX_KEY, l->index };
	if (part == FS_LINK_ITEM)
		return (struct ref_key){ l->dir, BTRFS_DIR_ITEM_KEY, l->item_key_off };
	return (struct ref_key){ l->ino, l->ref_key_type, l->ref_key_off };
}

/* Index and types of the parts present. */
static void link_compare(struct fs_check *c, const struct fs_link *l)
{
	char nb[FS_QNAME_LEN];
	fs_qname(nb, sizeof(nb), l->name, l->name_len);
	if ((l->seen & (FS_LINK_REF | FS_LINK_INDEX)) == (FS_LINK_REF | FS_LINK_INDEX) &&
	    l->ref_index != l->index) {
		struct ref_key k = part_key(l, FS_LINK_REF);
		fs_report(c, &k, 0, "name %s in dir %llu has index %llu, but its DIR_INDEX is %llu",
			  nb, (unsigned long long)l->dir, (unsigned long long)l->ref_index,
			  (unsigned long long)l->index);
	}
	static const unsigned parts[] = { FS_LINK_ITEM, FS_LINK_INDEX };
	for (int i = 0; i < 2; i++) {
		if (!(l->seen & parts[i]))
			continue;
		uint8_t t = parts[i] == FS_LINK_ITEM ? l->item_type : l->index_type;
		struct ref_key k = part_key(l, parts[i]);
		if ((l->seen & FS_LINK_REF) && l->ref_type && t != l->ref_type)
			fs_report(c, &k, 0, "name %s has type %s but inode %llu is %s", nb,
				  fs_ft_name(t), (unsigned long long)l->ino, fs_ft_name(l->ref_type));
		else if (parts[i] == FS_LINK_INDEX && (l->seen & FS_LINK_ITEM) &&
			 !((l->seen & FS_LINK_REF) && l->ref_type) && t != l->item_type)
			fs_report(c, &k, 0, "name %s has type %s but its DIR_ITEM says %s", nb,
				  fs_ft_name(t), fs_ft_name(l->item_type));
	}
}

/* Whether the tree has an INODE_ITEM for ino (1), not (0), or -errno. */
static int inode_exists(struct fs_check *c, uint64_t ino)
{
	struct ref_path path;
	struct ref_key key = { ino, BTRFS_INODE_ITEM_KEY, 0 }, k;
	int r = ref_search(c->fs, &c->root, &key, &path);
	if (r < 0)
		return r;
	if (r == 1)
		return 0;
	const uint8_t *data;
	uint32_t size;
	ref_path_item(&path, &k, &data, &size);
	ref_path_release(c->fs, &path);
	return k.objectid == ino && k.type == BTRFS_INODE_ITEM_KEY;
}

/* A name left with parts missing at the end of the walk. */
static void link_incomplete(struct fs_check *c, const struct fs_link *l)
{
	char nb[FS_QNAME_LEN], miss[64] = "";
	fs_qname(nb, sizeof(nb), l->name, l->name_len);
	unsigned have = l->seen;
	unsigned at = have & FS_LINK_INDEX ? FS_LINK_INDEX : have & FS_LINK_ITEM ? FS_LINK_ITEM
										 : FS_LINK_REF;
	struct ref_key k = part_key(l, at);
	if (!(have & FS_LINK_REF)) {
		int r = inode_exists(c, l->ino);
		if (r == 0) {
			fs_report(c, &k, 0, "name %s points to inode %llu, which has no INODE_ITEM",
				  nb, (unsigned long long)l->ino);
			have |= FS_LINK_REF; /* said */
		} else if (r < 0) {
			fs_report(c, &k, 0, "cannot look up inode %llu: %s",
				  (unsigned long long)l->ino, ref_error(c->fs));
		}
	}
	static const unsigned parts[] = { FS_LINK_ITEM, FS_LINK_INDEX, FS_LINK_REF };
	for (int i = 0; i < 3; i++)
		if (!(have & parts[i]))
			snprintf(miss + strlen(miss), sizeof(miss) - strlen(miss), "%s%s",
				 miss[0] ? ", " : "", part_name(parts[i]));
	if (miss[0]) {
		if (at == FS_LINK_REF)
			fs_report(c, &k, 0, "name %s in dir %llu has no matching %s", nb,
				  (unsigned long long)l->dir, miss);
		else
			fs_report(c, &k, 0, "name %s for inode %llu has no matching %s", nb,
				  (unsigned long long)l->ino, miss);
	}
	link_compare(c, l);
}

void fs_add_link(struct fs_check *c, unsigned part, const struct ref_key *k, uint64_t dir,
		 uint64_t ino, const char *name, uint16_t len, uint64_t index, uint8_t type)
{
	struct fs_link *l = fs_links_get(&c->links, dir, ino, name, len);
	if (!l) {
		c->oom = true;
		return;
	}
	if (l->seen & part) {
		char nb[FS_QNAME_LEN];
		fs_report(c, k, 0, "name %s (dir %llu, inode %llu) has a second %s",
			  fs_qname(nb, sizeof(nb), name, len), (unsigned long long)dir,
			  (unsigned long long)ino, part_name(part));
		return;
	}
	l->seen |= (uint8_t)part;
	if (part == FS_LINK_REF) {
		l->ref_index = index;
		l->ref_type = type;
		l->ref_key_type = k->type;
		l->ref_key_off = k->offset;
	} else if (part == FS_LINK_ITEM) {
		l->item_type = type;
		l->item_key_off = k->offset;
	} else {
		l->index = index;
		l->index_type = type;
	}
	if (l->seen == FS_LINK_ALL) {
		link_compare(c, l);
		fs_links_remove(&c->links, l);
		c->names++;
	}
}

void fs_report_links(struct fs_check *c)
{
	size_t n;
	struct fs_link **all = fs_links_drain(&c->links, &n);
	if (!all) {
		if (n)
			c->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		link_incomplete(c, all[i]);
		free(all[i]);
	}
	free(all);
}
