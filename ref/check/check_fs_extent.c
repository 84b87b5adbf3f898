/*
 * check_fs_extent.c - the EXTENT_DATA items of one inode, as btrfs check
 * (check/main.c process_file_extent, check/mode-lowmem.c check_file_extent)
 * and the kernel's tree-checker (check_extent_data_item) see them:
 *  - the item: type, compression, size (inline: 21-byte header + data, only at
 *    file offset 0, uncompressed data as long as ram_bytes, at most a sector;
 *    regular and prealloc: exactly 53 bytes, sector-aligned fields, num_bytes
 *    > 0, the referenced range inside ram_bytes, and for plain extents inside
 *    disk_num_bytes; prealloc never compressed), generation;
 *  - extents in file-offset order do not overlap;
 *  - without NO_HOLES, no gap between extents below i_size (linked files);
 *  - nbytes is the sum of num_bytes over extents that have disk space, plus
 *    the ram_bytes of an inline extent (not checked for orphans);
 *  - a symlink's target is one uncompressed inline extent as long as i_size
 *    (or one byte longer ending in NUL, as mkfs.btrfs --rootdir writes it).
 * Extents past i_size are allowed (prealloc with KEEP_SIZE, and btrfs check
 * has no rule against the others).
 */
#include "ref/check/check_fs.h"
#include "ref/compress.h"

#include <sys/stat.h>

#define FE_HEADER offsetof(struct btrfs_file_extent_item, disk_bytenr) /* 21 bytes */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static uint64_t round_up_sat(uint64_t v, uint32_t align)
{
	uint64_t r = v % align;
	return r ? add_sat(v, align - r) : v;
}

/* Whether gaps below i_size are errors for the current inode. */
static bool gaps_matter(const struct fs_check *c)
{
	const struct fs_inode *in = &c->cur;
	return !c->no_holes && in->have_item && in->nlink > 0 &&
	       (S_ISREG(in->mode) || S_ISLNK(in->mode));
}

static void report_gap(struct fs_check *c, uint64_t from, uint64_t to)
{
	const struct fs_inode *in = &c->cur;
	if (!gaps_matter(c) || from >= in->size)
		return;
	uint64_t end = round_up_sat(in->size, c->sectorsize);
	if (to > end)
		to = end;
	fs_report(c, NULL, in->ino,
		  "no file extent for [%llu, %llu) below i_size %llu, and NO_HOLES is off",
		  (unsigned long long)from, (unsigned long long)to, (unsigned long long)in->size);
}

static const char *type_name(uint8_t type)
{
	return type == BTRFS_FILE_EXTENT_PREALLOC ? "prealloc" : "regular";
}

/* Regular and prealloc items; returns the file range they cover (0: unusable). */
static uint64_t disk_extent(struct fs_check *c, const struct ref_key *k,
			    const struct btrfs_file_extent_item *fe, uint32_t size)
{
	struct fs_inode *in = &c->cur;
	uint32_t ss = c->sectorsize;
	if (size != sizeof(*fe)) {
		fs_report(c, k, 0, "%s file extent item is %u bytes, expected %zu",
			  type_name(fe->type), size, sizeof(*fe));
		if (size < sizeof(*fe)) {
			in->ext_bad = true;
			return 0;
		}
	}
	uint64_t bytenr = LE64(fe->disk_bytenr), disk_num = LE64(fe->disk_num_bytes);
	uint64_t off = LE64(fe->offset), num = LE64(fe->num_bytes), ram = LE64(fe->ram_bytes);
	bool hole = bytenr == 0;
	char bad[96] = "";
	size_t bl = 0;
	const char *names[] = { "file offset", "disk_bytenr", "disk_num_bytes", "offset",
				"num_bytes", "ram_bytes" };
	const uint64_t vals[] = { k->offset, bytenr, disk_num, off, num, ram };
	for (int i = 0; i < 6; i++)
		if (vals[i] % ss && bl < sizeof(bad))
			bl += (size_t)snprintf(bad + bl, sizeof(bad) - bl, "%s%s", bl ? ", " : "",
					       names[i]);
	if (bl)
		fs_report(c, k, 0, "%s not aligned to the sector size %u", bad, ss);
	if (!num)
		fs_report(c, k, 0, "file extent num_bytes is 0");
	if (off > ram || num > ram - off)
		fs_report(c, k, 0, "file extent covers [%llu, %llu) of an extent of ram_bytes %llu",
			  (unsigned long long)off, (unsigned long long)add_sat(off, num),
			  (unsigned long long)ram);
	if (!hole && !disk_num)
		fs_report(c, k, 0, "file extent at disk_bytenr %llu has disk_num_bytes 0",
			  (unsigned long long)bytenr);
	else if (!hole && !fe->compression && (off > disk_num || num > disk_num - off))
		fs_report(c, k, 0,
			  "uncompressed file extent covers [%llu, %llu) of a disk extent of %llu bytes",
			  (unsigned long long)off, (unsigned long long)add_sat(off, num),
			  (unsigned long long)disk_num);
	if (fe->type == BTRFS_FILE_EXTENT_PREALLOC && fe->compression)
		fs_report(c, k, 0, "prealloc file extent is compressed (%u)", fe->compression);
	/* Older kernels compressed NODATASUM files (their extents written
	 * without checksums); the kernel still reads them, unverified, but
	 * btrfs check calls each a bad file extent (with or without checksum
	 * items): decompressing damaged data that nothing verifies crashed
	 * kernels. */
	else if (fe->compression && in->have_item && (in->flags & BTRFS_INODE_NODATASUM))
		fs_report(c, k, 0, "compressed file extent in a NODATASUM file: reads do not verify its data (btrfs check: bad file extent)");
	if (add_sat(k->offset, num) == UINT64_MAX)
		fs_report(c, k, 0, "file extent of %llu bytes runs past the largest file offset",
			  (unsigned long long)num);
	if (!hole)
		in->ext_bytes = add_sat(in->ext_bytes, num);
	return num;
}

static uint64_t inline_extent(struct fs_check *c, const struct ref_key *k,
			      const struct btrfs_file_extent_item *fe, uint32_t size)
{
	struct fs_inode *in = &c->cur;
	uint32_t ss = c->sectorsize, len = size - (uint32_t)FE_HEADER;
	uint64_t ram = LE64(fe->ram_bytes);
	in->has_inline = true;
	in->inline_comp = fe->compression;
	in->inline_ram = ram;
	in->inline_len = len;
	in->inline_last = len ? ((const uint8_t *)fe)[size - 1] : 0;
	if (k->offset)
		fs_report(c, k, 0, "inline file extent at file offset %llu, not 0",
			  (unsigned long long)k->offset);
	if (!ram)
		fs_report(c, k, 0, "empty inline file extent");
	if (ram > ss)
		fs_report(c, k, 0, "inline file extent of %llu bytes, more than the sector size %u",
			  (unsigned long long)ram, ss);
	if (!fe->compression && ram != len)
		fs_report(c, k, 0, "inline file extent ram_bytes %llu but %u bytes of data",
			  (unsigned long long)ram, len);
	else if (fe->compression && len > ss)
		fs_report(c, k, 0, "compressed inline file extent of %u bytes, more than the sector size %u",
			  len, ss);
	in->ext_bytes = add_sat(in->ext_bytes, ram);
	return ss; /* it stands for the first sector */
}

void fs_file_extent(struct fs_check *c, const struct ref_key *k, const uint8_t *data,
		    uint32_t size)
{
	struct fs_inode *in = &c->cur;
	const struct btrfs_file_extent_item *fe = (const void *)data;
	in->n_extents++;
	c->extents++;
	if (size < FE_HEADER) {
		fs_report(c, k, 0, "file extent item is %u bytes, less than its %zu-byte header", size,
			  FE_HEADER);
		in->ext_bad = true;
		return;
	}
	uint64_t gen = LE64(fe->generation);
	if (gen > c->gen_limit)
		fs_report(c, k, 0, "file extent generation %llu is past %llu",
			  (unsigned long long)gen, (unsigned long long)c->gen_limit);
	if (fe->compression > REF_COMPRESS_ZSTD)
		fs_report(c, k, 0, "unknown file extent compression %u", fe->compression);
	if (fe->encryption || LE16(fe->other_encoding))
		fs_report(c, k, 0, "file extent encryption %u, other_encoding %u: both must be 0",
			  fe->encryption, LE16(fe->other_encoding));
	uint64_t len;
	if (fe->type == BTRFS_FILE_EXTENT_INLINE) {
		len = inline_extent(c, k, fe, size);
	} else if (fe->type == BTRFS_FILE_EXTENT_REG || fe->type == BTRFS_FILE_EXTENT_PREALLOC) {
		len = disk_extent(c, k, fe, size);
		if (!len)
			return;
	} else {
		fs_report(c, k, 0, "unknown file extent type %u", fe->type);
		in->ext_bad = true;
		return;
	}
	if (k->offset < in->ext_end)
		fs_report(c, k, 0, "file extent overlaps the one before, which ends at %llu",
			  (unsigned long long)in->ext_end);
	else if (k->offset > in->ext_end)
		report_gap(c, in->ext_end, k->offset);
	uint64_t end = add_sat(k->offset, len);
	if (end > in->ext_end)
		in->ext_end = end;
}

void fs_extents_done(struct fs_check *c, bool orphan)
{
	struct fs_inode *in = &c->cur;
	if (!S_ISREG(in->mode) && !S_ISLNK(in->mode))
		return;
	if (!orphan && !in->ext_bad && in->nbytes != in->ext_bytes)
		fs_report(c, NULL, in->ino, "nbytes %llu but its file extents hold %llu",
			  (unsigned long long)in->nbytes, (unsigned long long)in->ext_bytes);
	if (in->ext_end < in->size)
		report_gap(c, in->ext_end, round_up_sat(in->size, c->sectorsize));
	if (!S_ISLNK(in->mode))
		return;
	if (in->n_extents != 1 || !in->has_inline)
		fs_report(c, NULL, in->ino,
			  "symlink has %llu file extents%s; its target must be one inline extent",
			  (unsigned long long)in->n_extents,
			  in->has_inline ? "" : ", none inline");
	else if (in->inline_comp)
		fs_report(c, NULL, in->ino, "symlink target is compressed (%u)", in->inline_comp);
	else if (in->inline_ram != in->size &&
		 /* mkfs --rootdir stores the target with its NUL */
		 !(in->inline_ram && in->inline_ram - 1 == in->size && in->inline_len == in->inline_ram &&
		   in->inline_last == 0))
		fs_report(c, NULL, in->ino, "symlink target is %llu bytes but i_size is %llu",
			  (unsigned long long)in->inline_ram, (unsigned long long)in->size);
}
