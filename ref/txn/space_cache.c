/*
 * space_cache.c - reading the v1 space cache (space_cache.h).  A cache file
 * is pages of 4 KiB (the kernel's PAGE_SIZE on the machines that write
 * them): the first begins with one crc32c per page, then the 64-bit
 * generation; entries of 17 bytes (offset, bytes, type) follow, packed, none
 * across a page end; after the last entry's page, one page per bitmap (a bit
 * per sector of the 128 MiB at its entry's offset, set where free).  Each
 * page's crc32c covers the page (the first from after the crc array).
 */
#include "ref/txn/space_cache.h"
#include "ref/csum.h"
#include "ref/grow.h"
#include "ref/internal.h"

#include <errno.h>
#include <linux/btrfs_tree.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SC_PAGE = 4096, SC_MAX_FILE = 64 << 20 };

int space_cache_files(ref_fs *fs, struct sc_file **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	size_t cap = 0;
	r = ref_find_first(fs, &root, BTRFS_FREE_SPACE_OBJECTID, 0, &path, &k, &d, &size);
	while (r == 0 && k.objectid == BTRFS_FREE_SPACE_OBJECTID && k.type == 0) {
		if (size < sizeof(struct btrfs_free_space_header)) {
			r = ref_fail(fs, EUCLEAN, "root tree: FREE_SPACE item of block group %llu is %u bytes",
				     (unsigned long long)k.offset, size);
			break;
		}
		const struct btrfs_free_space_header *h = (const void *)d;
		if (GROW(*out, *n, cap)) {
			r = -ENOMEM;
			break;
		}
		(*out)[(*n)++] = (struct sc_file){ k.offset, LE64(h->location.objectid),
						   LE64(h->generation), LE64(h->num_entries),
						   LE64(h->num_bitmaps) };
		if ((r = ref_next(fs, &path)) == 0)
			ref_path_item(&path, &k, &d, &size);
	}
	if (r == 0)
		ref_path_release(fs, &path);
	if (r == -ENOENT || r == 1)
		r = 0;
	if (r < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return r;
}

static int not_loaded(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return 0;
}

/* The inode's data, i_size bytes (prealloc and holes read as zeros): 1, 0
 * with why (not something the kernel loads), or -errno. */
static int read_file(ref_fs *fs, uint64_t ino, uint64_t *gen, uint8_t **buf, size_t *len,
		     char *why, size_t whylen)
{
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	r = ref_find_first(fs, &root, ino, BTRFS_INODE_ITEM_KEY, &path, &k, &d, &size);
	if (r == -ENOENT)
		return not_loaded(why, whylen, "its inode %llu is missing", (unsigned long long)ino);
	if (r)
		return r;
	const struct btrfs_inode_item *ii = (const void *)d;
	uint64_t isize = size >= sizeof(*ii) ? LE64(ii->size) : 0;
	*gen = size >= sizeof(*ii) ? LE64(ii->generation) : 0;
	ref_path_release(fs, &path);
	if (isize > SC_MAX_FILE || isize % SC_PAGE || !isize)
		return not_loaded(why, whylen, "inode %llu is %llu bytes", (unsigned long long)ino,
				  (unsigned long long)isize);
	uint8_t *b = calloc(1, isize);
	if (!b)
		return -ENOMEM;
	r = ref_find_first(fs, &root, ino, BTRFS_EXTENT_DATA_KEY, &path, &k, &d, &size);
	int loaded = 1;
	while (r == 0 && loaded == 1 && k.objectid == ino && k.type == BTRFS_EXTENT_DATA_KEY) {
		const struct btrfs_file_extent_item *fe = (const void *)d;
		if (size < offsetof(struct btrfs_file_extent_item, disk_bytenr) || fe->compression ||
		    fe->encryption || (fe->type != BTRFS_FILE_EXTENT_INLINE && size < sizeof(*fe))) {
			loaded = not_loaded(why, whylen, "inode %llu has a file extent it cannot read",
					    (unsigned long long)ino);
			break;
		}
		if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
			size_t il = size - offsetof(struct btrfs_file_extent_item, disk_bytenr);
			if (k.offset < isize)
				memcpy(b + k.offset, &fe->disk_bytenr, il < isize - k.offset ? il : isize - k.offset);
		} else if (fe->type == BTRFS_FILE_EXTENT_REG && LE64(fe->disk_bytenr) && k.offset < isize) {
			uint64_t l = LE64(fe->num_bytes);
			if (l > isize - k.offset)
				l = isize - k.offset;
			if ((r = ref_read_logical(fs, LE64(fe->disk_bytenr) + LE64(fe->offset), b + k.offset,
						  (size_t)l, 0)) < 0)
				break;
		}
		if ((r = ref_next(fs, &path)) == 0)
			ref_path_item(&path, &k, &d, &size);
	}
	if (r == 0)
		ref_path_release(fs, &path);
	if (r < 0 && r != -ENOENT) {
		free(b);
		return r;
	}
	if (loaded != 1) {
		free(b);
		return loaded;
	}
	*buf = b;
	*len = (size_t)isize;
	return 1;
}

struct ranges {
	struct sc_range *v;
	size_t n, cap;
};

static int add(struct ranges *rs, uint64_t start, uint64_t end)
{
	if (GROW(rs->v, rs->n, rs->cap))
		return -ENOMEM;
	rs->v[rs->n++] = (struct sc_range){ start, end };
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct sc_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts and merges; 0 when two ranges overlap (a cache the kernel would
 * refuse: "Duplicate entries in free space cache"). */
static int normalize(struct ranges *rs)
{
	qsort(rs->v, rs->n, sizeof(*rs->v), cmp_range);
	size_t o = 0;
	for (size_t i = 0; i < rs->n; i++) {
		if (o && rs->v[i].start < rs->v[o - 1].end)
			return 0;
		if (o && rs->v[i].start == rs->v[o - 1].end)
			rs->v[o - 1].end = rs->v[i].end;
		else
			rs->v[o++] = rs->v[i];
	}
	rs->n = o;
	return 1;
}

int space_cache_load(ref_fs *fs, const struct sc_file *f, struct sc_range **out, size_t *n,
		     char *why, size_t whylen)
{
	*out = NULL;
	*n = 0;
	if (!f->num_entries)
		return not_loaded(why, whylen, "it has no entries");
	uint8_t *b = NULL;
	size_t len = 0;
	uint64_t igen = 0;
	int r = read_file(fs, f->ino, &igen, &b, &len, why, whylen);
	if (r <= 0)
		return r;
	size_t pages = len / SC_PAGE, crcs = pages * sizeof(uint32_t);
	struct ranges rs = { 0 };
	int loaded = 1;
	if (igen != f->generation)
		loaded = not_loaded(why, whylen, "free space inode generation (%llu) did not match free space cache generation (%llu)",
				    (unsigned long long)igen, (unsigned long long)f->generation);
	else if (crcs + sizeof(uint64_t) > SC_PAGE)
		loaded = not_loaded(why, whylen, "%zu pages: too many for the crc array", pages);
	/* Every page's crc32c, as io_ctl_check_crc checks each before use. */
	for (size_t p = 0; loaded == 1 && p < pages; p++) {
		size_t off = p ? 0 : crcs;
		uint32_t want, got = ~ref_crc32c_raw(~(uint32_t)0, b + p * SC_PAGE + off, SC_PAGE - off);
		memcpy(&want, b + p * sizeof(uint32_t), sizeof(want));
		if (le32toh(want) != got)
			loaded = not_loaded(why, whylen, "csum mismatch on free space cache page %zu", p);
	}
	uint64_t pgen = 0;
	if (loaded == 1) {
		memcpy(&pgen, b + crcs, sizeof(pgen));
		if (le64toh(pgen) != f->generation)
			loaded = not_loaded(why, whylen, "space cache generation (%llu) does not match inode (%llu)",
					    (unsigned long long)le64toh(pgen), (unsigned long long)f->generation);
	}
	/* Entries: packed from after the generation, none across a page. */
	size_t page = 0, pos = crcs + sizeof(uint64_t);
	uint64_t nbitmaps = 0;
	struct sc_range *bitmaps = NULL;
	size_t bm_cap = 0, nbm = 0;
	uint32_t unit = fs->sectorsize;
	for (uint64_t e = 0; loaded == 1 && e < f->num_entries; e++) {
		if (SC_PAGE - pos < sizeof(struct btrfs_free_space_entry)) {
			page++;
			pos = 0;
		}
		if (page >= pages) {
			loaded = not_loaded(why, whylen, "entry %llu is past the file's end", (unsigned long long)e);
			break;
		}
		struct btrfs_free_space_entry en;
		memcpy(&en, b + page * SC_PAGE + pos, sizeof(en));
		pos += sizeof(en);
		uint64_t off = LE64(en.offset), bytes = LE64(en.bytes);
		if (!bytes || off + bytes < off) {
			loaded = not_loaded(why, whylen, "entry %llu has %llu bytes at %llu", (unsigned long long)e,
					    (unsigned long long)bytes, (unsigned long long)off);
		} else if (en.type == BTRFS_FREE_SPACE_EXTENT) {
			if (add(&rs, off, off + bytes))
				loaded = -ENOMEM;
		} else if (en.type == BTRFS_FREE_SPACE_BITMAP) {
			nbitmaps++;
			if (GROW(bitmaps, nbm, bm_cap))
				loaded = -ENOMEM;
			else
				bitmaps[nbm++] = (struct sc_range){ off, off + bytes };
		} else {
			loaded = not_loaded(why, whylen, "entry %llu has type %u", (unsigned long long)e, en.type);
		}
	}
	if (loaded == 1 && nbitmaps != f->num_bitmaps)
		loaded = not_loaded(why, whylen, "%llu bitmap entries, the header says %llu",
				    (unsigned long long)nbitmaps, (unsigned long long)f->num_bitmaps);
	/* Bitmaps: one page each after the entries' last page. */
	for (size_t i = 0; loaded == 1 && i < nbm; i++) {
		const uint8_t *bits = b + (page + 1 + i) * SC_PAGE;
		if (page + 1 + i >= pages) {
			loaded = not_loaded(why, whylen, "bitmap %zu is past the file's end", i);
			break;
		}
		uint64_t start = bitmaps[i].start, run = 0, found = 0;
		for (uint64_t bit = 0; loaded == 1 && bit <= SC_PAGE * 8; bit++) {
			bool set = bit < SC_PAGE * 8 && (bits[bit / 8] >> (bit % 8) & 1);
			if (set) {
				run++;
				continue;
			}
			if (run && add(&rs, start + (bit - run) * unit, start + bit * unit))
				loaded = -ENOMEM;
			found += run * unit;
			run = 0;
		}
		if (loaded == 1 && found != bitmaps[i].end - bitmaps[i].start)
			loaded = not_loaded(why, whylen, "bitmap %zu holds %llu free bytes, its entry says %llu", i,
					    (unsigned long long)found,
					    (unsigned long long)(bitmaps[i].end - bitmaps[i].start));
	}
	free(bitmaps);
	free(b);
	if (loaded == 1 && !normalize(&rs))
		loaded = not_loaded(why, whylen, "%s", "duplicate entries in the free space cache");
	if (loaded != 1) {
		free(rs.v);
		return loaded;
	}
	*out = rs.v;
	*n = rs.n;
	return 1;
}
