/*
 * image_format.c - the compact image format of the `image` harness
 * (fuzz.h; fuzz/README.md, "The compact image format"): a 12-byte header,
 * then records that each put bytes at one place of one disk, their runs of
 * zeros left out.  Decoding never fails on a record: whatever bytes follow
 * the header decode to some records, so that every mutation AFL++ makes is
 * an image to try.
 */
#include "fuzz/fuzz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int fzi_decode_header(const uint8_t *data, size_t len, struct fzi_header *h, char *err,
		      size_t errlen)
{
	if (len < FZI_HEADER_BYTES) {
		snprintf(err, errlen, "%zu bytes: shorter than the %d-byte header", len,
			 FZI_HEADER_BYTES);
		return -EINVAL;
	}
	if (memcmp(data, FZI_MAGIC, 4)) {
		snprintf(err, errlen, "not a compact image (magic is not \"%s\")", FZI_MAGIC);
		return -EINVAL;
	}
	if (data[4] != FZI_VERSION) {
		snprintf(err, errlen, "compact image version %u, not %d", data[4], FZI_VERSION);
		return -EINVAL;
	}
	h->ndisks = (unsigned)data[5] + 1;
	h->disk_mib = get16(data + 6);
	h->flags = data[8];
	if (h->ndisks > FZI_MAX_DISKS) {
		snprintf(err, errlen, "%u disks: at most %d", h->ndisks, FZI_MAX_DISKS);
		return -EINVAL;
	}
	if (h->disk_mib < 1 || h->disk_mib > FZI_MAX_DISK_MIB) {
		snprintf(err, errlen, "disk size %u MiB: 1 to %u MiB", h->disk_mib, FZI_MAX_DISK_MIB);
		return -EINVAL;
	}
	return 0;
}

int fzi_next_record(const uint8_t *data, size_t len, size_t *pos, const struct fzi_header *h,
		    struct fzi_record *rec, uint8_t *buf)
{
	size_t p = *pos < FZI_HEADER_BYTES ? FZI_HEADER_BYTES : *pos;
	if (p + FZI_RECORD_HEADER_BYTES > len) {
		*pos = len;
		return 0;
	}
	const uint8_t *r = data + p;
	rec->kind = r[0] <= FZI_RAW ? (enum fzi_kind)r[0] : FZI_RAW;
	rec->disk = r[1] % h->ndisks;
	rec->offset = (uint64_t)get32(r + 2) * FZI_UNIT;
	uint32_t units = get16(r + 6);
	if (units > FZI_MAX_RECORD_UNITS)
		units = FZI_MAX_RECORD_UNITS;
	rec->len = units * FZI_UNIT;
	p += FZI_RECORD_HEADER_BYTES;
	memset(buf, 0, rec->len);
	/* Segments: skip zeros, then count bytes, until the record is full.
	 * Every segment consumes input, so this ends with the input. */
	uint32_t filled = 0;
	while (filled < rec->len && p + 4 <= len) {
		uint32_t skip = get16(data + p), count = get16(data + p + 2);
		p += 4;
		filled += skip < rec->len - filled ? skip : rec->len - filled;
		size_t avail = len - p < count ? len - p : count;
		size_t fits = avail < rec->len - filled ? avail : rec->len - filled;
		memcpy(buf + filled, data + p, fits);
		filled += (uint32_t)fits;
		p += avail;
	}
	*pos = p;
	return 1;
}

static int reserve(struct fzi_out *o, size_t more)
{
	if (o->len + more <= o->cap)
		return 0;
	size_t cap = o->cap ? o->cap : 4096;
	while (cap < o->len + more)
		cap *= 2;
	uint8_t *p = realloc(o->p, cap);
	if (!p)
		return -ENOMEM;
	o->p = p;
	o->cap = cap;
	return 0;
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

int fzi_put_header(struct fzi_out *o, const struct fzi_header *h)
{
	if (h->ndisks < 1 || h->ndisks > FZI_MAX_DISKS || h->disk_mib < 1 ||
	    h->disk_mib > FZI_MAX_DISK_MIB)
		return -EINVAL;
	if (reserve(o, FZI_HEADER_BYTES))
		return -ENOMEM;
	uint8_t *p = o->p + o->len;
	memcpy(p, FZI_MAGIC, 4);
	p[4] = FZI_VERSION;
	p[5] = (uint8_t)(h->ndisks - 1);
	put16(p + 6, h->disk_mib);
	p[8] = h->flags;
	p[9] = p[10] = p[11] = 0;
	o->len += FZI_HEADER_BYTES;
	return 0;
}

/* Zero runs shorter than this stay inside a segment: a segment header costs 4 bytes. */
#define MIN_SKIP 16

static int put_segment(struct fzi_out *o, uint32_t skip, const uint8_t *bytes, uint32_t count)
{
	if (reserve(o, 4 + (size_t)count))
		return -ENOMEM;
	put16(o->p + o->len, skip);
	put16(o->p + o->len + 2, count);
	if (count)
		memcpy(o->p + o->len + 4, bytes, count);
	o->len += 4 + (size_t)count;
	return 0;
}

int fzi_put_record(struct fzi_out *o, enum fzi_kind kind, unsigned disk, uint64_t offset,
		   const uint8_t *bytes, uint32_t len)
{
	if (len == 0 || len % FZI_UNIT || len / FZI_UNIT > FZI_MAX_RECORD_UNITS ||
	    offset % FZI_UNIT || offset / FZI_UNIT > UINT32_MAX || disk >= FZI_MAX_DISKS)
		return -EINVAL;
	if (reserve(o, FZI_RECORD_HEADER_BYTES))
		return -ENOMEM;
	uint8_t *p = o->p + o->len;
	p[0] = (uint8_t)kind;
	p[1] = (uint8_t)disk;
	put32(p + 2, (uint32_t)(offset / FZI_UNIT));
	put16(p + 6, len / FZI_UNIT);
	o->len += FZI_RECORD_HEADER_BYTES;
	uint32_t i = 0;
	while (i < len) {
		uint32_t z = i;
		while (z < len && !bytes[z])
			z++;
		uint32_t skip = z - i;
		while (skip > 0xffff) { /* a long run of zeros: empty segments */
			if (put_segment(o, 0xffff, NULL, 0))
				return -ENOMEM;
			skip -= 0xffff;
		}
		/* The bytes up to the next run of MIN_SKIP zeros (or the end). */
		uint32_t e = z, zeros = 0;
		while (e < len && zeros < MIN_SKIP && e - z < 0xffff) {
			zeros = bytes[e] ? 0 : zeros + 1;
			e++;
		}
		if (zeros == MIN_SKIP)
			e -= MIN_SKIP;
		while (e > z && !bytes[e - 1]) /* no trailing zeros in a segment */
			e--;
		if (put_segment(o, skip, bytes + z, e - z))
			return -ENOMEM;
		i = e > z ? e : z; /* z < len means bytes[z] != 0, so e > z: progress */
	}
	return 0;
}
