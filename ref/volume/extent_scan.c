/*
 * extent_scan.c - what a chunk holds, for the passes that read every copy
 * of it (scrub, replace): its tree blocks and data extents from the extent
 * tree, and the verdict on one copy of a piece of them (a tree block by its
 * checksum, header and the generation its extent item records; data sector
 * by sector by the csum tree).
 */
#include "ref/internal.h"

#include <errno.h>
#include <stdlib.h>

/* (internal.h) */
int chunk_extents(ref_fs *fs, const struct ref_chunk *c, struct ref_extent **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_EXTENT_TREE_OBJECTID, &root);
	if (r)
		return r;
	struct ref_key k = { c->logical, 0, 0 };
	struct ref_path p;
	r = ref_search(fs, &root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid >= c->logical + c->length)
			break;
		if (k.type == BTRFS_EXTENT_ITEM_KEY || k.type == BTRFS_METADATA_ITEM_KEY) {
			if (size < sizeof(struct btrfs_extent_item)) {
				r = ref_fail(fs, EUCLEAN, "extent item %llu is %u bytes",
					     (unsigned long long)k.objectid, size);
				break;
			}
			const struct btrfs_extent_item *ei = (const void *)d;
			uint64_t len = k.type == BTRFS_METADATA_ITEM_KEY ? fs->nodesize : k.offset;
			if (!len || k.objectid + len > c->logical + c->length) {
				r = ref_fail(fs, EUCLEAN, "extent %llu (%llu bytes) runs past its chunk",
					     (unsigned long long)k.objectid, (unsigned long long)len);
				break;
			}
			if (*n == cap) {
				cap = cap ? cap * 2 : 256;
				void *np = realloc(*out, cap * sizeof(**out));
				if (!np) {
					r = ref_fail(fs, ENOMEM, "out of memory");
					break;
				}
				*out = np;
			}
			(*out)[(*n)++] = (struct ref_extent){ k.objectid, len, LE64(ei->generation),
							  !!(LE64(ei->flags) & BTRFS_EXTENT_FLAG_TREE_BLOCK) };
		}
		r = ref_next(fs, &p);
	}
	ref_path_release(fs, &p);
	if (r < 0) {
		free(*out);
		*out = NULL;
		return r;
	}
	return 0;
}

/* (internal.h) */
void extent_verify(ref_fs *fs, const struct ref_extent *e, uint64_t at, const uint8_t *buf,
		   size_t len, const uint8_t *csums, const bool *have, uint8_t *verdict)
{
	uint32_t ss = fs->sectorsize;
	size_t nsec = len / ss;
	if (e->tree) { /* a whole block: one verdict for all its sectors */
		/* (The kernel's scrub counts every flaw of a tree block - its
		 * checksum included - as a verify error.) */
		uint8_t v = EXT_OK;
		for (size_t i = 0; i < nsec && !v; i++)
			v = verdict[i];
		if (!v && (!block_csum_ok(fs, buf) || block_invalid(fs, buf, at) ||
			   LE64(((const struct btrfs_header_disk *)buf)->generation) != e->gen))
			v = EXT_BAD_VERIFY;
		memset(verdict, v, nsec);
		return;
	}
	for (size_t i = 0; i < nsec; i++) {
		size_t idx = (size_t)((at - e->start) / ss) + i;
		if (!verdict[i] && have[idx] &&
		    !data_sector_ok(fs, buf + i * ss, csums + idx * fs->csum_size))
			verdict[i] = EXT_BAD_CSUM;
	}
}

/* (internal.h) */
void extent_read_copy(ref_fs *fs, int disk, uint64_t physical, uint8_t *buf, size_t len,
		      uint8_t *verdict)
{
	uint32_t ss = fs->sectorsize;
	if (sim_read(fs->vol, (unsigned)disk, physical, buf, len) == 0)
		return;
	for (size_t o = 0; o < len; o += ss)
		if (sim_read(fs->vol, (unsigned)disk, physical + o, buf + o, ss))
			verdict[o / ss] = EXT_BAD_READ;
}

/* (internal.h) */
int chunk_rows(ref_fs *fs, const struct ref_chunk *c, const struct ref_extent *ex, size_t nex,
	       uint64_t **rows, size_t *nrows)
{
	int np = c->type & BTRFS_BLOCK_GROUP_RAID6 ? 2 : 1;
	uint64_t rowbytes = (uint64_t)(c->num_stripes - np) * c->stripe_len;
	size_t cap = 0;
	*rows = NULL;
	*nrows = 0;
	for (size_t i = 0; i < nex; i++) {
		uint64_t first = (ex[i].start - c->logical) / rowbytes;
		uint64_t last = (ex[i].start + ex[i].len - 1 - c->logical) / rowbytes;
		if (*nrows && first <= (*rows)[*nrows - 1])
			first = (*rows)[*nrows - 1] + 1; /* (extents in order: rows too) */
		for (uint64_t row = first; row <= last; row++) {
			if (*nrows == cap) {
				cap = cap ? 2 * cap : 64;
				void *p = realloc(*rows, cap * sizeof(**rows));
				if (!p) {
					free(*rows);
					*rows = NULL;
					return ref_fail(fs, ENOMEM, "out of memory");
				}
				*rows = p;
			}
			(*rows)[(*nrows)++] = row;
		}
	}
	return 0;
}
