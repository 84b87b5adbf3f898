/*
 * chunk.c - the chunk map: logical addresses to (device, physical) stripes,
 * bootstrapped from the superblock's sys_chunk_array and completed from the
 * chunk tree.
 */
#include "ref/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

const char *ref_profile_name(uint64_t type)
{
	switch (type & BTRFS_BLOCK_GROUP_PROFILE_MASK) {
	case 0: return "single";
	case BTRFS_BLOCK_GROUP_DUP: return "DUP";
	case BTRFS_BLOCK_GROUP_RAID0: return "RAID0";
	case BTRFS_BLOCK_GROUP_RAID1: return "RAID1";
	case BTRFS_BLOCK_GROUP_RAID1C3: return "RAID1C3";
	case BTRFS_BLOCK_GROUP_RAID1C4: return "RAID1C4";
	case BTRFS_BLOCK_GROUP_RAID10: return "RAID10";
	case BTRFS_BLOCK_GROUP_RAID5: return "RAID5";
	case BTRFS_BLOCK_GROUP_RAID6: return "RAID6";
	default: return "mixed-profile";
	}
}

const char *ref_profile_lower(uint64_t type, char buf[16])
{
	const char *n = ref_profile_name(type);
	size_t i = 0;
	for (; n[i] && i < 15; i++)
		buf[i] = (char)tolower((unsigned char)n[i]);
	buf[i] = '\0';
	return buf;
}

int ref_profile_parse(const char *name, uint64_t *bit)
{
	static const uint64_t all[] = { 0,
					BTRFS_BLOCK_GROUP_DUP,
					BTRFS_BLOCK_GROUP_RAID0,
					BTRFS_BLOCK_GROUP_RAID1,
					BTRFS_BLOCK_GROUP_RAID1C3,
					BTRFS_BLOCK_GROUP_RAID1C4,
					BTRFS_BLOCK_GROUP_RAID10,
					BTRFS_BLOCK_GROUP_RAID5,
					BTRFS_BLOCK_GROUP_RAID6 };
	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcasecmp(name, ref_profile_name(all[i]))) {
			*bit = all[i];
			return 0;
		}
	return -EINVAL;
}

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

const char *chunk_item_invalid(const ref_fs *fs, uint64_t logical, const struct btrfs_chunk *c,
			       uint32_t item_size)
{
	if (item_size < sizeof(*c) - sizeof(c->stripe))
		return "chunk item too small";
	uint16_t n = LE16(c->num_stripes), sub = LE16(c->sub_stripes);
	uint64_t len = LE64(c->length), slen = LE64(c->stripe_len), type = LE64(c->type);
	if (n == 0)
		return "chunk has no stripes";
	if (item_size != sizeof(*c) + (uint32_t)(n - 1) * sizeof(c->stripe))
		return "chunk item size does not match its stripe count";
	if (!len || len % fs->sectorsize || logical % fs->sectorsize)
		return "chunk logical start or length not aligned to the sectorsize";
	if (logical + len < logical)
		return "chunk overflows the address space";
	if (!pow2(slen) || slen > UINT32_MAX)
		return "chunk stripe_len is not a power of two";
	if (!(type & BTRFS_BLOCK_GROUP_TYPE_MASK))
		return "chunk has no type";
	uint64_t prof = type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	if (prof & (prof - 1))
		return "chunk has more than one profile";
	if (type & ~(BTRFS_BLOCK_GROUP_TYPE_MASK | BTRFS_BLOCK_GROUP_PROFILE_MASK))
		return "chunk type has unknown bits";
	unsigned min = 1;
	switch (prof) {
	case BTRFS_BLOCK_GROUP_DUP: min = 2; if (n != 2) return "DUP chunk needs 2 stripes"; break;
	case BTRFS_BLOCK_GROUP_RAID1: min = 2; break;
	case BTRFS_BLOCK_GROUP_RAID1C3: min = 3; break;
	case BTRFS_BLOCK_GROUP_RAID1C4: min = 4; break;
	case BTRFS_BLOCK_GROUP_RAID10:
		min = 2;
		if (sub != 2 || n % 2) return "RAID10 chunk needs sub_stripes 2 and an even stripe count";
		break;
	case BTRFS_BLOCK_GROUP_RAID5: min = 2; break;
	case BTRFS_BLOCK_GROUP_RAID6: min = 3; break;
	case 0: if (n != 1) return "single chunk with more than one stripe"; break;
	}
	if (n < min)
		return "too few stripes for the chunk's profile";
	if ((prof == BTRFS_BLOCK_GROUP_RAID1 && n != 2) || (prof == BTRFS_BLOCK_GROUP_RAID1C3 && n != 3) ||
	    (prof == BTRFS_BLOCK_GROUP_RAID1C4 && n != 4))
		return "wrong stripe count for the chunk's RAID1 profile";
	return NULL;
}

/* Bytes a chunk of `len` logical bytes occupies on each of its n stripes. */
unsigned chunk_tolerated_failures(uint64_t type)
{
	switch (type & BTRFS_BLOCK_GROUP_PROFILE_MASK) {
	case BTRFS_BLOCK_GROUP_RAID1:
	case BTRFS_BLOCK_GROUP_RAID10:
	case BTRFS_BLOCK_GROUP_RAID5: return 1;
	case BTRFS_BLOCK_GROUP_RAID1C3:
	case BTRFS_BLOCK_GROUP_RAID6: return 2;
	case BTRFS_BLOCK_GROUP_RAID1C4: return 3;
	default: return 0; /* single, DUP, RAID0 */
	}
}

uint64_t chunk_stripe_bytes(uint64_t type, uint64_t len, unsigned n)
{
	switch (type & BTRFS_BLOCK_GROUP_PROFILE_MASK) {
	case BTRFS_BLOCK_GROUP_RAID0: return len / n;
	case BTRFS_BLOCK_GROUP_RAID10: return len / (n / 2);
	case BTRFS_BLOCK_GROUP_RAID5: return len / (n - 1);
	case BTRFS_BLOCK_GROUP_RAID6: return len / (n - 2);
	default: return len;
	}
}

int chunk_super_units(const struct ref_chunk *c, int (*fn)(void *ctx, uint64_t start, uint64_t len),
		      void *ctx)
{
	unsigned n = c->num_stripes;
	uint64_t per = chunk_stripe_bytes(c->type, c->length, n);
	uint64_t prof = c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	uint64_t sl = c->stripe_len ? c->stripe_len : BTRFS_STRIPE_LEN_DEFAULT;
	uint64_t end = c->logical + c->length;
	for (unsigned s = 0; s < n; s++) {
		for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
			uint64_t so = btrfs_super_offset(m);
			const struct ref_stripe *st = &c->stripes[s];
			if (so + BTRFS_SUPER_SIZE <= st->physical || so >= st->physical + per)
				continue;
			uint64_t unit = (so > st->physical ? so - st->physical : 0) / sl;
			uint64_t logical;
			if (prof == BTRFS_BLOCK_GROUP_RAID0)
				logical = c->logical + (unit * n + s) * sl;
			else if (prof == BTRFS_BLOCK_GROUP_RAID10)
				logical = c->logical + (unit * (n / c->sub_stripes) + s / c->sub_stripes) * sl;
			else
				logical = c->logical + unit * sl;
			int r = logical < end ? fn(ctx, logical, end - logical < sl ? end - logical : sl) : 0;
			if (r)
				return r;
		}
	}
	return 0;
}

/* Where `logical` (inside chunk c) lives: up to REF_MAX_COPIES physical copies
 * of the same bytes, and how many bytes from there stay in this stripe unit. */
int chunk_map(const struct ref_chunk *c, uint64_t logical, uint64_t len, struct ref_copy *copies,
	      uint64_t *run)
{
	uint64_t off = logical - c->logical;
	uint64_t prof = c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
	uint64_t sl = c->stripe_len;
	uint64_t in_unit = sl - off % sl; /* bytes left in this stripe unit */
	uint64_t stripe_nr = off / sl;
	int n = 0;
	*run = len < c->length - off ? len : c->length - off;
	switch (prof) {
	case 0:
	case BTRFS_BLOCK_GROUP_DUP:
	case BTRFS_BLOCK_GROUP_RAID1:
	case BTRFS_BLOCK_GROUP_RAID1C3:
	case BTRFS_BLOCK_GROUP_RAID1C4:
		for (unsigned i = 0; i < c->num_stripes && n < REF_MAX_COPIES; i++)
			copies[n++] = (struct ref_copy){ c->stripes[i].disk, c->stripes[i].devid,
							  c->stripes[i].physical + off };
		return n;
	case BTRFS_BLOCK_GROUP_RAID0: {
		unsigned idx = (unsigned)(stripe_nr % c->num_stripes);
		uint64_t phys = (stripe_nr / c->num_stripes) * sl + off % sl;
		copies[n++] = (struct ref_copy){ c->stripes[idx].disk, c->stripes[idx].devid,
						  c->stripes[idx].physical + phys };
		break;
	}
	case BTRFS_BLOCK_GROUP_RAID10: {
		unsigned factor = c->num_stripes / c->sub_stripes;
		unsigned idx = (unsigned)(stripe_nr % factor) * c->sub_stripes;
		uint64_t phys = (stripe_nr / factor) * sl + off % sl;
		for (unsigned i = 0; i < c->sub_stripes && n < REF_MAX_COPIES; i++)
			copies[n++] = (struct ref_copy){ c->stripes[idx + i].disk,
							  c->stripes[idx + i].devid,
							  c->stripes[idx + i].physical + phys };
		break;
	}
	case BTRFS_BLOCK_GROUP_RAID5:
	case BTRFS_BLOCK_GROUP_RAID6: {
		unsigned nparity = prof == BTRFS_BLOCK_GROUP_RAID5 ? 1 : 2;
		unsigned data = c->num_stripes - nparity;
		uint64_t row = stripe_nr / data;
		unsigned idx = (unsigned)((stripe_nr % data + row) % c->num_stripes);
		uint64_t phys = row * sl + off % sl;
		copies[n++] = (struct ref_copy){ c->stripes[idx].disk, c->stripes[idx].devid,
						  c->stripes[idx].physical + phys };
		/* Rebuilt copies: from P, and for RAID6 from Q (disk -2: see raid56.c). */
		for (unsigned i = 0; i < nparity; i++)
			copies[n++] = (struct ref_copy){ REF_COPY_REBUILT, c->stripes[idx].devid, 0 };
		break;
	}
	default:
		return 0;
	}
	if (*run > in_unit)
		*run = in_unit;
	return n;
}

static struct ref_dev *dev_find(ref_fs *fs, uint64_t devid)
{
	for (size_t i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].devid == devid)
			return &fs->devs[i];
	return NULL;
}

int chunk_add(ref_fs *fs, uint64_t logical, const struct btrfs_chunk *c, uint32_t item_size)
{
	const char *why = chunk_item_invalid(fs, logical, c, item_size);
	if (why)
		return ref_fail(fs, EUCLEAN, "chunk at logical %llu: %s", (unsigned long long)logical,
				why);
	uint64_t len = LE64(c->length);
	/* Keep the map sorted; a chunk seen twice (array and tree) is kept once. */
	size_t lo = 0, hi = fs->nchunks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (fs->chunks[mid].logical < logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < fs->nchunks && fs->chunks[lo].logical == logical)
		return 0;
	if ((lo < fs->nchunks && logical + len > fs->chunks[lo].logical) ||
	    (lo > 0 && fs->chunks[lo - 1].logical + fs->chunks[lo - 1].length > logical))
		return ref_fail(fs, EUCLEAN, "chunk at logical %llu overlaps another",
				(unsigned long long)logical);
	uint16_t n = LE16(c->num_stripes);
	struct ref_stripe *st = calloc(n, sizeof(*st));
	if (!st)
		return ref_fail(fs, ENOMEM, "out of memory");
	const struct btrfs_stripe *ds = &c->stripe;
	for (uint16_t i = 0; i < n; i++) {
		st[i].devid = LE64(ds[i].devid);
		st[i].physical = LE64(ds[i].offset);
		struct ref_dev *d = dev_find(fs, st[i].devid);
		st[i].disk = d ? d->disk : -1;
		uint64_t per = chunk_stripe_bytes(LE64(c->type), len, n);
		if (st[i].disk >= 0 &&
		    (st[i].physical + per < st[i].physical ||
		     st[i].physical + per > sim_disk_size(fs->vol, (unsigned)st[i].disk))) {
			int r = ref_fail(fs, EUCLEAN,
					 "chunk at logical %llu: stripe %u (%llu bytes at %llu) maps outside device %llu",
					 (unsigned long long)logical, i, (unsigned long long)per,
					 (unsigned long long)st[i].physical, (unsigned long long)st[i].devid);
			free(st);
			return r;
		}
	}
	if (fs->nchunks == fs->chunks_cap) {
		size_t cap = fs->chunks_cap ? fs->chunks_cap * 2 : 64;
		struct ref_chunk *p = realloc(fs->chunks, cap * sizeof(*p));
		if (!p) {
			free(st);
			return ref_fail(fs, ENOMEM, "out of memory");
		}
		fs->chunks = p;
		fs->chunks_cap = cap;
	}
	memmove(&fs->chunks[lo + 1], &fs->chunks[lo], (fs->nchunks - lo) * sizeof(*fs->chunks));
	fs->chunks[lo] = (struct ref_chunk){ logical, len, LE64(c->stripe_len), LE64(c->type), n,
					     LE16(c->sub_stripes), st };
	fs->nchunks++;
	return 0;
}

const struct ref_chunk *chunk_find(const ref_fs *fs, uint64_t logical)
{
	size_t lo = 0, hi = fs->nchunks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct ref_chunk *c = &fs->chunks[mid];
		if (logical < c->logical)
			hi = mid;
		else if (logical >= c->logical + c->length)
			lo = mid + 1;
		else
			return c;
	}
	return NULL;
}

int chunk_load_sys_array(ref_fs *fs)
{
	const uint8_t *p = fs->sb.sys_chunk_array;
	uint32_t size = LE32(fs->sb.sys_chunk_array_size), pos = 0;
	while (pos < size) {
		if (size - pos < sizeof(struct btrfs_disk_key) + sizeof(struct btrfs_chunk))
			return ref_fail(fs, EUCLEAN, "sys_chunk_array: truncated entry at byte %u", pos);
		const struct btrfs_disk_key *k = (const void *)(p + pos);
		if (k->type != BTRFS_CHUNK_ITEM_KEY)
			return ref_fail(fs, EUCLEAN, "sys_chunk_array: key type %u at byte %u is not CHUNK_ITEM",
					k->type, pos);
		pos += sizeof(*k);
		const struct btrfs_chunk *c = (const void *)(p + pos);
		uint16_t n = LE16(c->num_stripes);
		uint32_t isz = (uint32_t)sizeof(*c) + (n ? n - 1u : 0u) * (uint32_t)sizeof(c->stripe);
		if (n == 0 || isz > size - pos)
			return ref_fail(fs, EUCLEAN, "sys_chunk_array: chunk at byte %u runs past the array",
					pos);
		int r = chunk_add(fs, LE64(k->offset), c, isz);
		if (r)
			return r;
		pos += isz;
	}
	if (!fs->nchunks)
		return ref_fail(fs, EUCLEAN, "sys_chunk_array holds no chunk");
	return 0;
}

/* The kernel's read_one_dev: a present device smaller than its DEV_ITEM says
 * (an image truncated after mkfs) fails the mount with EINVAL, before anything
 * could be read from or written past its end. */
static int check_dev_sizes(ref_fs *fs)
{
	struct ref_path path;
	struct ref_key key = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, 0 };
	int r = ref_search(fs, &fs->chunk_root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid != BTRFS_DEV_ITEMS_OBJECTID || k.type != BTRFS_DEV_ITEM_KEY)
			break;
		if (size >= sizeof(struct btrfs_dev_item)) {
			const struct btrfs_dev_item *di = (const void *)data;
			struct ref_dev *d = dev_find(fs, LE64(di->devid));
			uint64_t want = LE64(di->total_bytes);
			if (d && d->disk >= 0) {
				uint64_t have = sim_disk_size(fs->vol, (unsigned)d->disk);
				if (want > have) {
					r = ref_fail(fs, EINVAL,
						     "device %llu (disk %d): device total_bytes should be at most %llu but found %llu (the image is shorter than the file system on it)",
						     (unsigned long long)d->devid, d->disk,
						     (unsigned long long)have,
						     (unsigned long long)want);
					break;
				}
			}
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	return r < 0 ? r : 0;
}

int chunk_load_tree(ref_fs *fs)
{
	int r = check_dev_sizes(fs);
	if (r)
		return r;
	struct ref_path path;
	struct ref_key key = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, BTRFS_CHUNK_ITEM_KEY, 0 };
	r = ref_search(fs, &fs->chunk_root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.type == BTRFS_CHUNK_ITEM_KEY) {
			r = chunk_add(fs, k.offset, (const struct btrfs_chunk *)data, size);
			if (r)
				break;
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	return r < 0 ? r : 0;
}

void chunk_free_all(ref_fs *fs)
{
	for (size_t i = 0; i < fs->nchunks; i++)
		free(fs->chunks[i].stripes);
	free(fs->chunks);
	fs->chunks = NULL;
	fs->nchunks = fs->chunks_cap = 0;
}

void chunk_remove(ref_fs *fs, uint64_t logical)
{
	const struct ref_chunk *c = chunk_find(fs, logical);
	if (!c || c->logical != logical)
		return;
	size_t i = (size_t)(c - fs->chunks);
	free(fs->chunks[i].stripes);
	memmove(&fs->chunks[i], &fs->chunks[i + 1], (fs->nchunks - i - 1) * sizeof(*fs->chunks));
	fs->nchunks--;
}
