/*
 * leaf.c - items and key pointers inside one tree block: inserting, deleting,
 * resizing and moving them while keeping a leaf's data packed from the end of
 * the block in item order, as the format requires.  No I/O and no COW here.
 *
 * A leaf: header | item 0 | item 1 | ... | free | data n-1 | ... | data 0.
 * Item offsets count from the end of the header.
 */
#include "ref/rw.h"

static struct btrfs_header_disk *hdr(uint8_t *d)
{
	return (struct btrfs_header_disk *)d;
}

static struct btrfs_item_disk *item(uint8_t *d, int i)
{
	return (struct btrfs_item_disk *)(d + HDR_SIZE + (size_t)i * ITEM_SIZE);
}

static struct btrfs_key_ptr_disk *ptr(uint8_t *d, int i)
{
	return (struct btrfs_key_ptr_disk *)(d + HDR_SIZE + (size_t)i * PTR_SIZE);
}

uint32_t blk_nritems(const uint8_t *d)
{
	return le32(&((const struct btrfs_header_disk *)d)->nritems);
}

uint8_t blk_level(const uint8_t *d)
{
	return ((const struct btrfs_header_disk *)d)->level;
}

static void set_nritems(uint8_t *d, uint32_t n)
{
	hdr(d)->nritems = htole32(n);
}

static void disk_key(struct btrfs_disk_key *dk, const struct ref_key *k)
{
	dk->objectid = htole64(k->objectid);
	dk->type = k->type;
	dk->offset = htole64(k->offset);
}

void blk_key(const uint8_t *d, int slot, struct ref_key *k)
{
	const struct btrfs_disk_key *dk =
		blk_level(d) ? &ptr((uint8_t *)d, slot)->key : &item((uint8_t *)d, slot)->key;
	k->objectid = LE64(dk->objectid);
	k->type = dk->type;
	k->offset = LE64(dk->offset);
}

bool blk_reloc(const uint8_t *d)
{
	return le64(d + offsetof(struct btrfs_header_disk, flags)) & BTRFS_HEADER_FLAG_RELOC;
}

bool node_child_dropped(const uint8_t *d, int slot, const struct ref_key *drop_key)
{
	if ((uint32_t)slot + 1 >= blk_nritems(d))
		return false;
	struct ref_key next;
	blk_key(d, slot + 1, &next);
	return ref_key_cmp(&next, drop_key) <= 0;
}

void blk_set_key(uint8_t *d, int slot, const struct ref_key *k)
{
	disk_key(blk_level(d) ? &ptr(d, slot)->key : &item(d, slot)->key, k);
}

uint32_t leaf_space(uint32_t nodesize)
{
	return nodesize - (uint32_t)HDR_SIZE;
}

static uint32_t off_of(uint8_t *d, int i)
{
	return LE32(item(d, i)->offset);
}

static void set_off(uint8_t *d, int i, uint32_t v)
{
	item(d, i)->offset = htole32(v);
}

uint32_t leaf_item_size(const uint8_t *d, int slot)
{
	return LE32(item((uint8_t *)d, slot)->size);
}

/* Where the packed data begins (the lowest data offset). */
static uint32_t data_start(uint8_t *d, uint32_t nodesize)
{
	uint32_t n = blk_nritems(d);
	return n ? off_of(d, (int)n - 1) : leaf_space(nodesize);
}

uint32_t leaf_used(const uint8_t *d, uint32_t nodesize)
{
	uint32_t n = blk_nritems(d);
	return n * (uint32_t)ITEM_SIZE + leaf_space(nodesize) - data_start((uint8_t *)d, nodesize);
}

uint32_t leaf_free(const uint8_t *d, uint32_t nodesize)
{
	return leaf_space(nodesize) - leaf_used(d, nodesize);
}

uint8_t *leaf_data(uint8_t *d, int slot)
{
	return d + HDR_SIZE + off_of(d, slot);
}

/* Moves the data of items [from, n) by `delta` bytes (negative: towards the
 * header) and adjusts their offsets. */
static void shift_data(uint8_t *d, uint32_t nodesize, int from, int64_t delta)
{
	int n = (int)blk_nritems(d);
	if (from >= n || delta == 0)
		return;
	uint32_t lo = data_start(d, nodesize);
	uint32_t hi = off_of(d, from) + leaf_item_size(d, from);
	uint8_t *base = d + HDR_SIZE;
	memmove(base + (int64_t)lo + delta, base + lo, hi - lo);
	for (int i = from; i < n; i++)
		set_off(d, i, (uint32_t)((int64_t)off_of(d, i) + delta));
}

void leaf_insert(uint8_t *d, uint32_t nodesize, int slot, const struct ref_key *k, uint32_t size)
{
	int n = (int)blk_nritems(d);
	uint32_t end = slot == 0 ? leaf_space(nodesize) : off_of(d, slot - 1);
	shift_data(d, nodesize, slot, -(int64_t)size);
	memmove(item(d, slot + 1), item(d, slot), (size_t)(n - slot) * ITEM_SIZE);
	struct btrfs_item_disk *it = item(d, slot);
	disk_key(&it->key, k);
	it->offset = htole32(end - size);
	it->size = htole32(size);
	set_nritems(d, (uint32_t)n + 1);
	memset(d + HDR_SIZE + end - size, 0, size);
}

void leaf_delete(uint8_t *d, uint32_t nodesize, int slot, int nr)
{
	int n = (int)blk_nritems(d);
	uint32_t bytes = 0;
	for (int i = slot; i < slot + nr; i++)
		bytes += leaf_item_size(d, i);
	if (slot + nr < n) {
		uint32_t lo = data_start(d, nodesize);
		uint32_t hi = off_of(d, slot + nr - 1); /* end of the data that stays below */
		uint8_t *base = d + HDR_SIZE;
		memmove(base + lo + bytes, base + lo, hi - lo);
		for (int i = slot + nr; i < n; i++)
			set_off(d, i, off_of(d, i) + bytes);
		memmove(item(d, slot), item(d, slot + nr), (size_t)(n - slot - nr) * ITEM_SIZE);
	}
	set_nritems(d, (uint32_t)(n - nr));
}

void leaf_resize(uint8_t *d, uint32_t nodesize, int slot, uint32_t size)
{
	uint32_t old = leaf_item_size(d, slot);
	if (size == old)
		return;
	int n = (int)blk_nritems(d);
	uint32_t lo = data_start(d, nodesize);
	uint32_t keep_end = off_of(d, slot) + (size < old ? size : old);
	int64_t delta = (int64_t)old - (int64_t)size; /* > 0: data moves away from the header */
	uint8_t *base = d + HDR_SIZE;
	memmove(base + (int64_t)lo + delta, base + lo, keep_end - lo);
	for (int i = slot; i < n; i++)
		set_off(d, i, (uint32_t)((int64_t)off_of(d, i) + delta));
	item(d, slot)->size = htole32(size);
	if (size > old)
		memset(base + off_of(d, slot) + old, 0, size - old);
}

void leaf_chop_front(uint8_t *d, uint32_t nodesize, int slot, uint32_t drop)
{
	int n = (int)blk_nritems(d);
	uint32_t lo = data_start(d, nodesize);
	uint32_t at = off_of(d, slot);
	uint8_t *base = d + HDR_SIZE;
	memmove(base + lo + drop, base + lo, at - lo);
	for (int i = slot + 1; i < n; i++)
		set_off(d, i, off_of(d, i) + drop);
	set_off(d, slot, at + drop);
	item(d, slot)->size = htole32(leaf_item_size(d, slot) - drop);
}

void leaf_append(uint8_t *dst, const uint8_t *src, uint32_t nodesize, int slot, int nr)
{
	for (int i = slot; i < slot + nr; i++) {
		struct ref_key k;
		blk_key(src, i, &k);
		uint32_t sz = leaf_item_size(src, i);
		int at = (int)blk_nritems(dst);
		leaf_insert(dst, nodesize, at, &k, sz);
		memcpy(leaf_data(dst, at), leaf_data((uint8_t *)src, i), sz);
	}
}

uint32_t node_max_ptrs(uint32_t nodesize)
{
	return (nodesize - (uint32_t)HDR_SIZE) / (uint32_t)PTR_SIZE;
}

uint64_t node_ptr(const uint8_t *d, int slot, uint64_t *gen)
{
	const struct btrfs_key_ptr_disk *p = ptr((uint8_t *)d, slot);
	if (gen)
		*gen = LE64(p->generation);
	return LE64(p->blockptr);
}

void node_set_ptr(uint8_t *d, int slot, uint64_t bytenr, uint64_t gen)
{
	ptr(d, slot)->blockptr = htole64(bytenr);
	ptr(d, slot)->generation = htole64(gen);
}

void node_insert(uint8_t *d, int slot, const struct ref_key *k, uint64_t bytenr, uint64_t gen)
{
	int n = (int)blk_nritems(d);
	memmove(ptr(d, slot + 1), ptr(d, slot), (size_t)(n - slot) * PTR_SIZE);
	disk_key(&ptr(d, slot)->key, k);
	node_set_ptr(d, slot, bytenr, gen);
	set_nritems(d, (uint32_t)n + 1);
}

void node_delete(uint8_t *d, int slot, int nr)
{
	int n = (int)blk_nritems(d);
	memmove(ptr(d, slot), ptr(d, slot + nr), (size_t)(n - slot - nr) * PTR_SIZE);
	set_nritems(d, (uint32_t)(n - nr));
}

void node_append(uint8_t *dst, const uint8_t *src, int slot, int nr)
{
	int n = (int)blk_nritems(dst);
	memcpy(ptr(dst, n), ptr((uint8_t *)src, slot), (size_t)nr * PTR_SIZE);
	set_nritems(dst, (uint32_t)(n + nr));
}
