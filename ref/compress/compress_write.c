/*
 * compress_write.c - what a write compresses, as Linux 6.18's writeback of a
 * dirty range does (fs/btrfs/inode.c):
 *
 *   - inode_need_compress, in its order: an inode with NODATACOW or
 *     NODATASUM never compresses (nor, outside a defragmentation, one with
 *     PREALLOC: should_nocow sends it to run_delalloc_nocow); a
 *     defragmentation with -c compresses; so does compress-force; an inode
 *     marked NOCOMPRESS does not; compress=, the COMPRESS flag or the
 *     property ask btrfs_compress_heuristic (compress_heuristic.c).  The
 *     first answer, over the range's first 128 KiB, decides for the whole
 *     range (up to 128 MiB, one delalloc range).
 *   - compress_file_range, chunk by chunk of 512 KiB: pieces of up to
 *     128 KiB (only the bytes below the file's size go to the compressor),
 *     each asking inode_need_compress again; a piece of one sector or less
 *     is not compressed unless it is the whole file; a piece whose encoding
 *     does not save a whole sector ends compression for the rest of its
 *     chunk, which is written plain, and marks the inode NOCOMPRESS unless
 *     the mount forces compression or the inode has a property.
 *   - A compressed extent: disk_num_bytes the encoding rounded up to a
 *     sector (zeros after it), ram_bytes = num_bytes the piece rounded up to
 *     a sector, checksums over the bytes on disk.
 *   - A file of one sector at most, written from offset 0: a compressed
 *     inline extent when the encoding is shorter than a sector and at most
 *     max_inline (2048) bytes; else plain, without marking the inode unless
 *     the compressor itself gave up (the 6.18 stable kernels' "start == 0
 *     && end <= blocksize" bail-out, seen on this machine's 6.18.44).
 *
 * ref has no page cache: each write call is its own dirty range, so a file
 * written in many small calls gets the extents the kernel would give a file
 * synced after each call (tests and the size comparison write whole files).
 */
#include "ref/compress/compress_int.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANGE (UINT64_C(128) << 20) /* a delalloc range: fs_info->max_extent_size */
#define INLINE_HEAD 21 /* a file extent item up to disk_bytenr */
#define ITEM_AND_HEADER (101 + 25)

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return v + (a - v % a) % a;
}

int cw_plan_for(ref_fs *fs, const struct ref_ino *ino, const struct btrfs_inode_item *ii,
		struct cw_plan *p)
{
	memset(p, 0, sizeof(*p));
	uint64_t flags = LE64(ii->flags);
	const struct rw_state *rw = fs->rw;
	if (flags & (BTRFS_INODE_NODATACOW | BTRFS_INODE_NODATASUM)) /* btrfs_inode_can_compress */
		return 0;
	uint8_t prop = 0;
	int r = cw_prop_type(fs, ino, &prop);
	if (r)
		return r;
	p->prop = prop != 0;
	p->level = rw->compress_level;
	if (rw->defrag_compress) {
		if (rw->defrag_compress != REF_DEFRAG_NOCOMP) {
			p->type = rw->defrag_compress;
			p->level = rw->defrag_level;
			p->defrag = true;
		}
		return 0;
	}
	if (flags & BTRFS_INODE_PREALLOC && !rw->defragging)
		return 0;
	p->force = rw->compress_force;
	if (rw->compress || flags & BTRFS_INODE_COMPRESS || prop)
		p->type = prop ? prop : rw->compress ? rw->compress : REF_COMPRESS_ZLIB;
	return 0;
}

/* inode_need_compress for a range whose data starts at data (len bytes). */
static bool need(const struct cw_plan *p, const struct btrfs_inode_item *ii, const uint8_t *data,
		 uint64_t len)
{
	if (!p->type)
		return false;
	if (p->defrag || p->force)
		return true;
	if (LE64(ii->flags) & BTRFS_INODE_NOCOMPRESS)
		return false;
	return cw_heuristic(data, len);
}

/* compress_file_range's mark_incompressible. */
static void incompressible(const struct cw_plan *p, struct btrfs_inode_item *ii)
{
	if (!p->force && !p->prop)
		ii->flags = htole64(LE64(ii->flags) | BTRFS_INODE_NOCOMPRESS);
}

static int codec_error(ref_fs *fs, const struct cw_plan *p, ssize_t n)
{
	return ref_fail(fs, (int)-n, "%s compression failed: %s", ref_compress_name(p->type),
			strerror((int)-n));
}

/* One chunk of up to 512 KiB at file offset start. */
static int chunk(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
		 const struct cw_plan *p, uint64_t start, const uint8_t *data, uint64_t clen,
		 uint64_t isize, uint64_t disk_isize, uint8_t *enc)
{
	uint64_t ss = fs->sectorsize, pos = 0, chunk_end = start + clen;
	int r = 0;
	while (pos < clen) {
		uint64_t at = start + pos, actual_end = isize < chunk_end ? isize : chunk_end;
		if (actual_end <= at)
			break;
		uint64_t total = actual_end - at;
		if (total <= ss && (at > 0 || chunk_end < disk_isize))
			break; /* one sector, not the whole file: nothing to save */
		if (total > REF_COMPRESS_MAX_RAM)
			total = REF_COMPRESS_MAX_RAM;
		if (!need(p, ii, data + pos, clen - pos))
			break;
		if (at == 0 && chunk_end <= ss + 1) {
			/* (a file of one sector with extents past its end): the
			 * codec's verdict only, as the 6.18 stable bail-out */
			ssize_t n = ref_compress_inline(p->type, p->level, data, total, enc,
							REF_COMPRESS_MAX_DISK + ss, (uint32_t)ss);
			if (n == -E2BIG)
				incompressible(p, ii);
			else if (n < 0)
				return codec_error(fs, p, n);
			break;
		}
		ssize_t n = ref_compress(p->type, p->level, data + pos, total, enc,
					 REF_COMPRESS_MAX_DISK, (uint32_t)ss);
		if (n == -E2BIG) {
			incompressible(p, ii);
			break;
		}
		if (n < 0)
			return codec_error(fs, p, n);
		uint64_t disk = round_up((uint64_t)n, ss), ram = round_up(total, ss);
		memset(enc + n, 0, disk - (uint64_t)n);
		if ((r = file_put_compressed(fs, ino, ii, at, enc, disk, ram, p->type)))
			return r;
		pos += ram;
	}
	return pos < clen ? file_put_plain(fs, ino, ii, start + pos, data + pos, clen - pos) : 0;
}

int cw_write(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii,
	     const struct cw_plan *p, uint64_t at, const uint8_t *data, uint64_t len,
	     uint64_t isize, uint64_t disk_isize)
{
	uint8_t *enc = malloc(REF_COMPRESS_MAX_DISK + fs->sectorsize);
	if (!enc)
		return ref_fail(fs, ENOMEM, "out of memory for a compression buffer");
	int r = 0;
	for (uint64_t rs = 0; rs < len && !r;) {
		uint64_t rlen = len - rs < MAX_RANGE ? len - rs : MAX_RANGE;
		if (!need(p, ii, data + rs, rlen))
			r = file_put_plain(fs, ino, ii, at + rs, data + rs, rlen);
		else
			for (uint64_t cs = rs; cs < rs + rlen && !r;) {
				uint64_t clen = rs + rlen - cs < CW_CHUNK ? rs + rlen - cs : CW_CHUNK;
				r = chunk(fs, ino, ii, p, at + cs, data + cs, clen, isize, disk_isize,
					  enc);
				cs += clen;
			}
		rs += rlen;
	}
	free(enc);
	return r;
}

ssize_t cw_small(ref_fs *fs, struct btrfs_inode_item *ii, const struct cw_plan *p,
		 const uint8_t *data, uint64_t newsize, uint64_t disk_isize, uint8_t *enc,
		 size_t cap)
{
	(void)disk_isize; /* at most a sector here: the one-sector rule cannot apply */
	uint64_t ss = fs->sectorsize;
	if (!need(p, ii, data, ss))
		return 0;
	uint8_t *buf = malloc(REF_COMPRESS_MAX_DISK + ss);
	if (!buf)
		return ref_fail(fs, ENOMEM, "out of memory for a compression buffer");
	ssize_t n = ref_compress_inline(p->type, p->level, data, newsize, buf,
					REF_COMPRESS_MAX_DISK + ss, (uint32_t)ss);
	ssize_t out = 0;
	uint64_t max_inline = fs->nodesize - ITEM_AND_HEADER - INLINE_HEAD;
	if (max_inline > VFS_MAX_INLINE)
		max_inline = VFS_MAX_INLINE;
	if (n == -E2BIG)
		incompressible(p, ii);
	else if (n < 0)
		out = codec_error(fs, p, n);
	else if ((uint64_t)n < ss && (uint64_t)n <= max_inline && (size_t)n <= cap) {
		memcpy(enc, buf, (size_t)n);
		out = n;
	}
	free(buf);
	return out;
}
