/*
 * check_csum.c - csum coverage: every sector of every data extent that a
 * checksummed inode references (regular extents, not prealloc, not NODATASUM)
 * has exactly one checksum in the csum tree, and no checksum lies outside
 * such extents.  (The checksum values are verified by reads and scrub.)
 */
#include "ref/check/check.h"

#include <errno.h>
#include <stdlib.h>

struct range {
	uint64_t start, end;
};

struct sctx {
	struct check *ck;
	struct range *need; /* sectors that must have checksums */
	size_t nneed, need_cap;
	struct range *allow; /* disk extents where checksums may be */
	size_t nallow, allow_cap;
	struct range *have;
	size_t nhave, have_cap;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts and merges touching or overlapping ranges. */
static size_t merge(struct range *r, size_t n)
{
	if (!n)
		return 0;
	qsort(r, n, sizeof(*r), cmp_range);
	size_t m = 0;
	for (size_t i = 1; i < n; i++) {
		if (r[i].start <= r[m].end) {
			if (r[i].end > r[m].end)
				r[m].end = r[i].end;
		} else {
			r[++m] = r[i];
		}
	}
	return m + 1;
}

/* The checksummed data extents of one subvolume, in key order (an inode's
 * INODE_ITEM comes before its EXTENT_DATA items). */
static int collect_need(struct sctx *s, uint64_t subvol)
{
	ref_fs *fs = s->ck->fs;
	struct ref_root root;
	if (ref_find_root(fs, subvol, &root))
		return 0;
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	uint64_t cur_ino = 0, cur_flags = 0;
	int r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.type == BTRFS_INODE_ITEM_KEY && size >= sizeof(struct btrfs_inode_item)) {
			cur_ino = k.objectid;
			cur_flags = LE64(((const struct btrfs_inode_item *)data)->flags);
		} else if (k.type == BTRFS_EXTENT_DATA_KEY &&
			   size >= sizeof(struct btrfs_file_extent_item)) {
			const struct btrfs_file_extent_item *fe = (const void *)data;
			bool sum = !(k.objectid == cur_ino && (cur_flags & BTRFS_INODE_NODATASUM));
			uint64_t bytenr = LE64(fe->disk_bytenr), len = LE64(fe->disk_num_bytes);
			uint64_t off = LE64(fe->offset), num = LE64(fe->num_bytes);
			if (!bytenr || !len || bytenr + len < bytenr || fe->type == BTRFS_FILE_EXTENT_INLINE) {
				/* a hole, or malformed: the fs pass reports those */
			} else if (GROW(s->allow, s->nallow, s->allow_cap)) {
				r = -ENOMEM;
				break;
			} else {
				s->allow[s->nallow++] = (struct range){ bytenr, bytenr + len };
				if (fe->type == BTRFS_FILE_EXTENT_REG && sum) {
					struct range need = { bytenr, bytenr + len };
					if (!fe->compression && off < len && num <= len - off)
						need = (struct range){ bytenr + off, bytenr + off + num };
					if (GROW(s->need, s->nneed, s->need_cap)) {
						r = -ENOMEM;
						break;
					}
					s->need[s->nneed++] = need;
				}
			}
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		check_error(s->ck, "tree %llu: %s", (unsigned long long)subvol, ref_error(fs));
	return 0;
}

static int collect_have(struct sctx *s)
{
	ref_fs *fs = s->ck->fs;
	struct ref_root root;
	if (ref_find_root(fs, BTRFS_CSUM_TREE_OBJECTID, &root))
		return 0; /* no csum tree: every needed range is reported */
	struct ref_path path;
	struct ref_key key = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, 0 };
	char kb[64];
	uint64_t prev_end = 0;
	int r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		(void)data;
		if (k.objectid != BTRFS_EXTENT_CSUM_OBJECTID || k.type != BTRFS_EXTENT_CSUM_KEY) {
			check_error(s->ck, "csum tree key %s: not a csum item", check_key_str(&k, kb, sizeof(kb)));
		} else if (!size || size % fs->csum_size || k.offset % fs->sectorsize) {
			check_error(s->ck, "csum tree key %s: %u bytes, not a non-zero multiple of %u or unaligned",
				    check_key_str(&k, kb, sizeof(kb)), size, fs->csum_size);
		} else {
			uint64_t end = k.offset + (uint64_t)(size / fs->csum_size) * fs->sectorsize;
			if (k.offset < prev_end)
				check_error(s->ck, "csum tree key %s overlaps the item before it",
					    check_key_str(&k, kb, sizeof(kb)));
			prev_end = end;
			if (GROW(s->have, s->nhave, s->have_cap)) {
				r = -ENOMEM;
				break;
			}
			s->have[s->nhave++] = (struct range){ k.offset, end };
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		check_error(s->ck, "csum tree: %s", ref_error(fs));
	return 0;
}

/* Reports the parts of a (merged, sorted) that b does not cover. */
static void report_uncovered(struct sctx *s, const struct range *a, size_t na, const struct range *b,
			     size_t nb, const char *what)
{
	size_t j = 0;
	for (size_t i = 0; i < na; i++) {
		uint64_t pos = a[i].start;
		while (pos < a[i].end) {
			while (j < nb && b[j].end <= pos)
				j++;
			uint64_t gap_end = j < nb && b[j].start < a[i].end ? b[j].start : a[i].end;
			if (j < nb && b[j].start <= pos) {
				pos = b[j].end < a[i].end ? b[j].end : a[i].end;
				continue;
			}
			check_error(s->ck, "%s: logical %llu..%llu (%llu bytes)", what,
				    (unsigned long long)pos, (unsigned long long)gap_end,
				    (unsigned long long)(gap_end - pos));
			pos = gap_end;
		}
	}
}

int check_csums(struct check *ck)
{
	struct sctx s = { .ck = ck };
	const struct check_state *st = ck->st;
	int r = 0;
	for (size_t i = 0; !r && i < st->nsubvols; i++) {
		/* A deleted subvolume may be half freed by the cleaner: only the
		 * walk knows which of its file extents remain (below). */
		struct ref_subvol_info si;
		if (st->subvols[i] != BTRFS_DATA_RELOC_TREE_OBJECTID &&
		    !(ref_subvol_info(ck->fs, st->subvols[i], &si) == 0 && si.refs == 0))
			r = collect_need(&s, st->subvols[i]);
	}
	/* Every data extent the structure walk reached may have csums. */
	for (size_t i = 0; !r && i < st->ndrefs; i++) {
		const struct check_dref *d = &st->drefs[i];
		if (d->disk_bytenr + d->disk_num_bytes < d->disk_bytenr)
			continue;
		if (GROW(s.allow, s.nallow, s.allow_cap))
			r = -ENOMEM;
		else
			s.allow[s.nallow++] = (struct range){ d->disk_bytenr,
							      d->disk_bytenr + d->disk_num_bytes };
	}
	if (!r)
		r = collect_have(&s);
	if (!r) {
		s.nneed = merge(s.need, s.nneed);
		s.nallow = merge(s.allow, s.nallow);
		s.nhave = merge(s.have, s.nhave);
		report_uncovered(&s, s.need, s.nneed, s.have, s.nhave,
				 "checksummed data without csum items");
		report_uncovered(&s, s.have, s.nhave, s.allow, s.nallow,
				 "csum items outside every referenced data extent");
	}
	free(s.need);
	free(s.allow);
	free(s.have);
	return r;
}
