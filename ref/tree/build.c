/* build.c - bulk-building B-trees from sorted items (see build.h). */
#include "ref/tree/build.h"
#include "ref/csum.h"

#include <errno.h>
#include <stdlib.h>

#define HDR sizeof(struct btrfs_header_disk)
#define ITEM sizeof(struct btrfs_item_disk)
#define PTR sizeof(struct btrfs_key_ptr_disk)

/* Number of leaves, and where each starts (starts may be NULL). */
static size_t pack_leaves(uint32_t nodesize, const struct build_item *items, size_t n,
			  size_t *starts)
{
	size_t leaves = 0, used = 0, room = nodesize - HDR;
	for (size_t i = 0; i < n; i++) {
		size_t need = ITEM + items[i].size;
		if (i == 0 || used + need > room) {
			if (starts)
				starts[leaves] = i;
			leaves++;
			used = 0;
		}
		used += need;
	}
	if (!leaves && starts)
		starts[0] = 0;
	return leaves ? leaves : 1;
}

size_t build_leaves(uint32_t nodesize, const struct build_item *items, size_t n)
{
	return pack_leaves(nodesize, items, n, NULL);
}

int build_level(uint32_t nodesize, size_t leaves, size_t b)
{
	size_t per_node = (nodesize - HDR) / PTR, start = 0, count = leaves;
	int level = 0;
	while (b >= start + count && count > 1) {
		start += count;
		count = (count + per_node - 1) / per_node;
		level++;
	}
	return level;
}

size_t build_count(uint32_t nodesize, const struct build_item *items, size_t n)
{
	size_t per_node = (nodesize - HDR) / PTR, level = pack_leaves(nodesize, items, n, NULL);
	size_t total = level;
	while (level > 1) {
		level = (level + per_node - 1) / per_node;
		total += level;
	}
	return total;
}

static void set_disk_key(struct btrfs_disk_key *d, const struct ref_key *k)
{
	d->objectid = htole64(k->objectid);
	d->type = k->type;
	d->offset = htole64(k->offset);
}

static void finish_block(const struct build_header *h, uint8_t *b, uint64_t bytenr, uint32_t nritems,
			 uint8_t level)
{
	struct btrfs_header_disk *hd = (void *)b;
	memcpy(hd->fsid, h->fsid, sizeof(hd->fsid));
	hd->bytenr = htole64(bytenr);
	hd->flags = htole64(BTRFS_HEADER_FLAG_WRITTEN | ((uint64_t)1 << 56)); /* MIXED_BACKREF */
	memcpy(hd->chunk_tree_uuid, h->chunk_tree_uuid, sizeof(hd->chunk_tree_uuid));
	hd->generation = htole64(h->generation);
	hd->owner = htole64(h->owner);
	hd->nritems = htole32(nritems);
	hd->level = level;
	ref_csum(h->csum_type, b + BTRFS_CSUM_BYTES, h->nodesize - BTRFS_CSUM_BYTES, hd->csum);
}

int build_emit(const struct build_header *h, const struct build_item *items, size_t n,
	       const uint64_t *addr, size_t count, uint8_t *out)
{
	uint32_t ns = h->nodesize;
	for (size_t i = 0; i < n; i++)
		if (ITEM + items[i].size > ns - HDR)
			return -EINVAL;
	if (count != build_count(ns, items, n))
		return -EINVAL;
	memset(out, 0, count * ns);
	size_t *starts = malloc((n + 1) * sizeof(*starts));
	struct ref_key *first = malloc(count * sizeof(*first));
	if (!starts || !first) {
		free(starts);
		free(first);
		return -ENOMEM;
	}
	size_t leaves = pack_leaves(ns, items, n, starts), blk = 0;
	for (; blk < leaves; blk++) {
		uint8_t *b = out + blk * ns;
		size_t from = starts[blk], to = blk + 1 < leaves ? starts[blk + 1] : n;
		uint32_t end = ns - (uint32_t)HDR; /* data is packed from the end */
		for (size_t i = from; i < to; i++) {
			struct btrfs_item_disk *it = (void *)(b + HDR + (i - from) * ITEM);
			end -= items[i].size;
			set_disk_key(&it->key, &items[i].key);
			it->offset = htole32(end);
			it->size = htole32(items[i].size);
			if (items[i].size)
				memcpy(b + HDR + end, items[i].data, items[i].size);
		}
		first[blk] = from < n ? items[from].key : (struct ref_key){ 0, 0, 0 };
		finish_block(h, b, addr[blk], (uint32_t)(to - from), 0);
	}
	/* Node levels: each points to up to per_node blocks of the level below. */
	size_t per_node = (ns - HDR) / PTR, below = 0, nbelow = leaves;
	int level = 0;
	while (nbelow > 1) {
		level++;
		size_t nodes = (nbelow + per_node - 1) / per_node;
		for (size_t k = 0; k < nodes; k++, blk++) {
			uint8_t *b = out + blk * ns;
			size_t from = below + k * per_node;
			size_t to = from + per_node < below + nbelow ? from + per_node : below + nbelow;
			for (size_t c = from; c < to; c++) {
				struct btrfs_key_ptr_disk *p = (void *)(b + HDR + (c - from) * PTR);
				set_disk_key(&p->key, &first[c]);
				p->blockptr = htole64(addr[c]);
				p->generation = htole64(h->generation);
			}
			first[blk] = first[from];
			finish_block(h, b, addr[blk], (uint32_t)(to - from), (uint8_t)level);
		}
		below += nbelow;
		nbelow = nodes;
	}
	free(starts);
	free(first);
	return level;
}

static int cmp_item(const void *a, const void *b)
{
	return ref_key_cmp(&((const struct build_item *)a)->key, &((const struct build_item *)b)->key);
}

void build_sort(struct build_item *items, size_t n)
{
	if (n)
		qsort(items, n, sizeof(*items), cmp_item);
}
