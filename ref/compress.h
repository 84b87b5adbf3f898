/*
 * compress.h - Btrfs's compressed extent encodings, as the Linux kernel's
 * fs/btrfs/zlib.c, lzo.c and zstd.c write and read them, on Debian's zlib,
 * liblzo2 (lzo1x) and libzstd.
 *
 * The three layouts (all integers little-endian):
 *
 *   zlib  One zlib stream (RFC 1950: 2-byte header, deflate data, adler32).
 *         The kernel writes windowBits 15, memLevel 8, level 1..9 (default 3),
 *         and flushes with Z_SYNC_FLUSH after every page (folio) of input, then
 *         Z_FINISH.  It reads the stream as raw deflate after checking the
 *         2-byte header itself: the adler32 trailer is never verified.
 *
 *   lzo   le32 total length (this header included, trailing pad included),
 *         then segments: le32 payload length, then that many bytes of one
 *         lzo1x stream holding at most one sector of input.  A segment header
 *         never straddles a sector boundary: when fewer than 4 bytes remain in
 *         the sector after a segment, they are zeros and the next header starts
 *         at the next sector (the writer pads after the last segment too, and
 *         counts that pad in the total).  Payloads do cross sector boundaries.
 *         Inline extents hold exactly one segment and total == item size.
 *
 *   zstd  One zstd frame, written with ZSTD_getParams(level, len), windowLog
 *         clipped to 17 (128 KiB), content size recorded, no checksum; level
 *         -15..15 (default 3).  The reader accepts any frame whose window is at
 *         most 128 KiB, with or without content size or checksum, and ignores
 *         bytes after the frame.
 *
 * A regular extent's on-disk bytes are the encoding padded with zeros to a
 * whole number of sectors (disk_num_bytes); an inline extent's item data is
 * the encoding itself.
 */
#ifndef BTRSIM_REF_COMPRESS_H
#define BTRSIM_REF_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Values of btrfs_file_extent_item.compression. */
enum ref_compress_type {
	REF_COMPRESS_NONE = 0,
	REF_COMPRESS_ZLIB = 1,
	REF_COMPRESS_LZO = 2,
	REF_COMPRESS_ZSTD = 3,
};

/* Largest uncompressed extent the kernel compresses (BTRFS_MAX_UNCOMPRESSED),
 * and the largest lzo total length it accepts (BTRFS_MAX_COMPRESSED). */
#define REF_COMPRESS_MAX_RAM (128u * 1024)
#define REF_COMPRESS_MAX_DISK (128u * 1024)

/* "none", "zlib", "lzo", "zstd", or "unknown". */
const char *ref_compress_name(unsigned type);

/*
 * The value of the kernel's compress= / compress-force= mount option, as
 * Linux 6.18 reads it: "zlib", "lzo" or "zstd", each optionally ":LEVEL"
 * (a decimal integer; zlib's clamped to 1..9, zstd's to -15..15, lzo's
 * ignored; 0 is the default level, stored as 0), "no" or "none" (type 0), or
 * an empty string or NULL (-o compress: zlib).  Returns 0, or -EINVAL with
 * the reason in err ("zlib+x", "zstd:abc", "zstd:" are refused, as 6.18 does).
 */
int ref_compress_parse(const char *s, uint8_t *type, int8_t *level, char *err, size_t errlen);
/* "compress=zstd:3", "compress-force=lzo", "compress=no" for the same values. */
void ref_compress_format(uint8_t type, int8_t level, bool force, char *buf, size_t len);

/*
 * Decode one regular extent's on-disk bytes (in, in_len = disk_num_bytes) as
 * the kernel's *_decompress_bio does, into out, producing at most out_len bytes
 * (the extent's ram_bytes; callers may ask for fewer, and decoding stops once
 * out is full, without looking at the rest of the input).  Also decodes an
 * inline item's data (see ref_decompress_inline for the kernel's stricter
 * inline rules).  sectorsize: a power of two, 512..65536.
 *
 * Returns the number of bytes produced: out_len, or fewer when the encoded
 * data ends first (a well-formed but short extent; the caller compares with
 * ram_bytes).  Or a negative errno: -EIO for corrupt or truncated input (the
 * reason in err, when err is not NULL), -EINVAL for an unknown type or a bad
 * sectorsize, -ENOMEM.  REF_COMPRESS_NONE copies min(in_len, out_len) bytes.
 *
 * Beyond the kernel, -EIO also for: a zlib stream or zstd frame that stops
 * before its end (the kernel's zstd reader returns the short data without an
 * error), an lzo total length under 8, an lzo segment header or payload that
 * runs past the total length (the kernel reads on into the sector).  Like the
 * kernel: an lzo segment may decode to up to lzo1x_worst_compress(sectorsize)
 * bytes; the lzo pad bytes are not checked; the zlib adler32 is not checked.
 * Unlike the kernel's lzo1x_decompress_safe, liblzo2 does not take a segment
 * starting 0x11 <version> as an lzo-rle stream (btrfs never writes one).
 *
 * Never reads past in_len, never writes past out_len, allocates O(sectorsize)
 * plus the codec's fixed state (at most a 128 KiB zstd window), never loops
 * forever.
 */
ssize_t ref_decompress(unsigned type, const uint8_t *in, size_t in_len, uint8_t *out,
		       size_t out_len, uint32_t sectorsize, char *err, size_t errlen);

/*
 * Decode an inline extent's item data with the kernel's inline rules
 * (*_decompress): the output must fit in one sector; out_len (ram_bytes, at
 * most sectorsize) bytes must all be produced, else -EIO; lzo must be exactly
 * one segment with total == in_len and segment length == in_len - 8; a zlib
 * stream must end within the sector.  Returns out_len or a negative errno as
 * ref_decompress.
 */
ssize_t ref_decompress_inline(unsigned type, const uint8_t *in, size_t in_len, uint8_t *out,
			      size_t out_len, uint32_t sectorsize, char *err, size_t errlen);

/*
 * Encode one regular extent of in_len bytes (1..128 KiB) as the kernel would
 * (same layout, same flush points, same give-up rules; the bytes may differ
 * from the kernel's where its zlib/lzo/zstd differ from Debian's).  level 0 is
 * the type's default; others are clamped to its range (zlib 1..9, zstd
 * -15..15; lzo has none).
 *
 * Returns the encoded size (before padding to sectorsize; the caller writes
 * zeros up to disk_num_bytes = round_up(size, sectorsize)), or -E2BIG when the
 * kernel would store the data uncompressed: the encoder gave up on growing
 * output, or round_up(size, sectorsize) >= round_up(in_len, sectorsize)
 * (compression must save at least one sector).  Or -ENOSPC when a result that
 * is a win does not fit in out_cap, -EINVAL for a bad type (NONE included),
 * length or sectorsize, -ENOMEM, -EIO on a library failure.
 */
ssize_t ref_compress(unsigned type, int level, const uint8_t *in, size_t in_len, uint8_t *out,
		     size_t out_cap, uint32_t sectorsize);

/*
 * Encode the data of an inline extent candidate (1..sectorsize bytes): the
 * same encodings (lzo: one segment), without the one-sector-saving rule, which
 * the kernel applies only after trying an inline extent.  Returns the encoded
 * size, or -E2BIG when the codec itself gives up as the kernel's does: zlib
 * and zstd when the output is not smaller than the input, lzo never for one
 * segment (the kernel stores 1000 random bytes as a 1016-byte lzo inline
 * extent).  The caller checks the size against the sector, max_inline and
 * the leaf's room.  Other errors as ref_compress.
 */
ssize_t ref_compress_inline(unsigned type, int level, const uint8_t *in, size_t in_len,
			    uint8_t *out, size_t out_cap, uint32_t sectorsize);

#endif
