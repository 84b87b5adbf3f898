/*
 * request.c - read, write, FUA write, flush and discard: argument checks, the
 * faults that act on a request, the cache and the volatile writes, the clock
 * and the IO-log entry each request leaves.
 */
#include "internal.h"
#include "faults/points.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sim/hash.h"

static const char *const op_name[SIM_IO_KIND_COUNT] = {
	[SIM_IO_READ] = "read", [SIM_IO_WRITE] = "write", [SIM_IO_WRITE_FUA] = "write",
	[SIM_IO_FLUSH] = "flush", [SIM_IO_DISCARD] = "discard",
};

/* Validates disk, alignment and range; fills *d, *sector and *n. */
static int check_request(sim_volume *vol, unsigned disk, uint64_t offset, size_t len,
			 enum sim_io_kind kind, struct sim_disk **d, uint64_t *sector, uint32_t *n)
{
	const char *op = op_name[kind];
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "%s: no disk %u (the volume has %u)", op, disk,
				vol->ndisks);
	*d = &vol->disk[disk];
	uint32_t ss = (*d)->sector_size;
	if (len == 0)
		return sim_fail(vol, EINVAL, "%s: disk %u: zero length", op, disk);
	if (len > SIM_MAX_IO_BYTES)
		return sim_fail(vol, EINVAL, "%s: disk %u: length %zu exceeds %llu bytes", op, disk,
				len, (unsigned long long)SIM_MAX_IO_BYTES);
	if (offset % ss || len % ss)
		return sim_fail(vol, EINVAL,
				"%s: disk %u: offset %llu or length %zu not aligned to the %u-byte sector",
				op, disk, (unsigned long long)offset, len, ss);
	if (offset >= (*d)->size || len > (*d)->size - offset)
		return sim_fail(vol, EINVAL,
				"%s: disk %u: %zu bytes at %llu run past the end of the disk (%llu bytes)",
				op, disk, len, (unsigned long long)offset,
				(unsigned long long)(*d)->size);
	*sector = offset / ss;
	*n = (uint32_t)(len / ss);
	return 0;
}

/* seq and epoch come later, from io_gate. */
static struct sim_io io_begin(unsigned disk, enum sim_io_kind kind,
			      uint64_t sector, uint32_t n)
{
	struct sim_io io = {
		.sector = sector,
		.nsectors = n,
		.disk = (uint16_t)disk,
		.kind = (uint8_t)kind,
	};
	return io;
}

static void clock_advance(sim_volume *vol, uint64_t bytes, bool flush)
{
	vol->sim_time_ns += vol->lat.per_request_ns + bytes * vol->lat.per_byte_ps / 1000;
	if (flush)
		vol->sim_time_ns += vol->lat.per_flush_ns;
}

/* Completes a request: clock, statistics, log.  Returns status. */
static int io_end(sim_volume *vol, struct sim_io *io, int status, const void *payload, size_t len)
{
	struct sim_disk *d = &vol->disk[io->disk];
	io->status = status;
	clock_advance(vol, status ? 0 : len, io->kind == SIM_IO_FLUSH && !status);
	io->sim_time_ns = vol->sim_time_ns;
	if (status)
		d->st.errors++;
	if (io->fault)
		d->st.faults++;
	int r = log_append(vol, io, payload, len);
	return status ? status : r;
}

/* The libfiu fault points of each kind of request (faults/points.h): before
 * it is served, and at its completion. */
static const char *const fp_before[SIM_IO_KIND_COUNT] = {
	[SIM_IO_READ] = FP_SIM_READ,
	[SIM_IO_WRITE] = FP_SIM_WRITE,
	[SIM_IO_WRITE_FUA] = FP_SIM_WRITE,
	[SIM_IO_FLUSH] = FP_SIM_FLUSH,
	[SIM_IO_DISCARD] = FP_SIM_DISCARD,
};
static const char *const fp_done[SIM_IO_KIND_COUNT] = {
	[SIM_IO_READ] = FP_SIM_READ_DONE,
	[SIM_IO_WRITE] = FP_SIM_WRITE_DONE,
	[SIM_IO_WRITE_FUA] = FP_SIM_WRITE_DONE,
	[SIM_IO_FLUSH] = FP_SIM_FLUSH_DONE,
	[SIM_IO_DISCARD] = FP_SIM_DISCARD_DONE,
};

/* The checks every request passes after its argument checks: disk-level faults,
 * the device-vanish fault point, a lost disk, the request's fault point, a flaky
 * disk.  Returns 0 to go on, or the request's failed status (already logged).
 * Faults match sectors io->sector + span. */
static int io_gate(sim_volume *vol, struct sim_io *io, uint64_t span,
		   const struct sim_fault **rf)
{
	*rf = NULL;
	int r = fault_before_request(vol, io->disk, io->sector, span);
	if (r)
		return r;
	struct sim_disk *d = &vol->disk[io->disk];
	if (!d->lost && FP_FAIL(FP_SIM_DEVICE_VANISH) && (r = sim_disk_lose(vol, io->disk)))
		return r;
	/* The faults above may have logged entries: the request follows them. */
	io->seq = vol->next_seq++;
	io->epoch = d->epoch;
	if (d->lost) {
		sim_fail(vol, EIO, "%s: disk %u is lost", op_name[io->kind], io->disk);
		return io_end(vol, io, -EIO, NULL, 0);
	}
	int e = FP_FAIL(fp_before[io->kind]);
	if (e) { /* as a flaky disk's failure: nothing done */
		io->fault = SIM_FAULT_FLAKY;
		sim_fail(vol, e, "%s: disk %u: request %llu failed (fault point %s)",
			 op_name[io->kind], io->disk, (unsigned long long)io->seq,
			 fp_before[io->kind]);
		return io_end(vol, io, -e, NULL, 0);
	}
	*rf = fault_on_request(vol, io->disk, io->seq, io->sector, span,
			       (enum sim_io_kind)io->kind);
	if (*rf && (*rf)->kind == SIM_FAULT_FLAKY) {
		io->fault = SIM_FAULT_FLAKY;
		sim_fail(vol, EIO, "%s: disk %u: request %llu failed (flaky disk)",
			 op_name[io->kind], io->disk, (unsigned long long)io->seq);
		return io_end(vol, io, -EIO, NULL, 0);
	}
	return 0;
}

/* Completes a request that was served: io_end, then the completion's fault
 * point, which reports an error for a request the disk did.  Its entry stays as
 * the disk acted (status 0); a SIM_IO_FAULT entry after it (flaky, status the
 * error, fault_arg the request's seq) records the failed completion. */
static int io_done(sim_volume *vol, struct sim_io *io, const void *payload, size_t len)
{
	int r = io_end(vol, io, 0, payload, len);
	int e = r ? 0 : FP_FAIL(fp_done[io->kind]);
	if (!e)
		return r;
	struct sim_disk *d = &vol->disk[io->disk];
	struct sim_io f = {
		.seq = vol->next_seq++,
		.epoch = d->epoch,
		.sector = io->sector,
		.nsectors = io->nsectors,
		.disk = io->disk,
		.kind = SIM_IO_FAULT,
		.fault = SIM_FAULT_FLAKY,
		.fault_arg = io->seq,
		.status = -e,
		.sim_time_ns = vol->sim_time_ns,
	};
	d->st.errors++;
	d->st.faults++;
	if ((r = log_append(vol, &f, NULL, 0)))
		return r;
	return sim_fail(
		vol, e,
		"%s: disk %u: request %llu done, but its completion failed (fault point %s)",
		op_name[io->kind], io->disk, (unsigned long long)io->seq, fp_done[io->kind]);
}

/* The latest acknowledged content: the cache over the media. */
static int read_current(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n,
			uint8_t *buf)
{
	uint32_t ss = d->sector_size;
	if (d->fd >= 0) {
		int r = media_read(vol, d, sector, n, buf);
		if (r || !d->cache.nset)
			return r;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *dst = buf + (size_t)i * ss;
		struct sim_block *b = d->cache.nset ? bm_get(&d->cache, sector + i) : NULL;
		if (!b && d->fd >= 0)
			continue; /* already read from the file */
		if (!b)
			b = bm_get(&d->media, sector + i);
		if (b && b != SIM_BLOCK_ZERO)
			memcpy(dst, b->data, ss);
		else
			memset(dst, 0, ss);
	}
	return 0;
}

int sim_read(sim_volume *vol, unsigned disk, uint64_t offset, void *buf, size_t len)
{
	struct sim_disk *d;
	uint64_t sector;
	uint32_t n;
	int r = check_request(vol, disk, offset, len, SIM_IO_READ, &d, &sector, &n);
	if (r)
		return r;
	if (!buf)
		return sim_fail(vol, EINVAL, "read: disk %u: no buffer", disk);
	struct sim_io io = io_begin(disk, SIM_IO_READ, sector, n);
	const struct sim_fault *rf;
	if ((r = io_gate(vol, &io, n, &rf)))
		return r;
	if (disk_is_latent(d, sector, n)) {
		io.fault = SIM_FAULT_LATENT;
		sim_fail(vol, EIO, "read: disk %u: latent sector error in sectors %llu+%u", disk,
			 (unsigned long long)sector, n);
		return io_end(vol, &io, -EIO, NULL, 0);
	}
	r = read_current(vol, d, sector, n, buf);
	if (r)
		return io_end(vol, &io, r, NULL, 0);
	if (rf && rf->kind == SIM_FAULT_FLIP_ON_READ) {
		io.fault = SIM_FAULT_FLIP_ON_READ;
		io.fault_arg = fault_flip(&d->rng, buf, len, d->sector_size,
					  rf->sector >= 0 ? rf->sector - (int64_t)sector : -1,
					  rf->bits);
	}
	if (!vol->nolog) /* (the checksum is the log's) */
		io.csum = XXH3_64bits(buf, len);
	d->st.reads++;
	d->st.bytes_read += len;
	return io_done(vol, &io, NULL, len);
}

/* Earlier volatile writes lose the sectors a FUA write made durable. */
static void supersede_pending(struct sim_disk *d, uint64_t sector, uint32_t n)
{
	for (size_t k = 0; k < d->npend; k++) {
		const struct sim_pending *p = &d->pend[k];
		if (p->sector >= sector + n || sector >= p->sector + p->nsectors)
			continue;
		uint64_t lo = p->sector > sector ? p->sector : sector;
		uint64_t hi = p->sector + p->nsectors < sector + n ? p->sector + p->nsectors : sector + n;
		for (uint64_t s = lo; s < hi; s++) {
			struct sim_block **slot = &d->pend_blk[k].blk[s - p->sector];
			sim_block_put(*slot);
			*slot = NULL;
		}
	}
}

static int store_durable(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n,
			 const uint8_t *src)
{
	int r = media_write_buf(vol, d, sector, n, src);
	if (r)
		return r;
	/* Clearing can still allocate: a cache shared with a clone is copied first. */
	for (uint32_t i = 0; d->cache.nset && i < n; i++)
		if (bm_set(&d->cache, sector + i, NULL))
			return sim_fail(vol, ENOMEM, "out of memory dropping cached sectors");
	supersede_pending(d, sector, n);
	return 0;
}

/* A volatile write: blocks into the cache and a pending entry.  src NULL: zeros. */
static int store_volatile(sim_volume *vol, struct sim_disk *d, uint64_t seq, uint64_t sector,
			  uint32_t n, const uint8_t *src)
{
	uint32_t ss = d->sector_size;
	size_t cap = d->pend_cap;
	if (sim_grow(&d->pend, &d->pend_cap, d->npend + 1, sizeof(*d->pend)))
		return sim_fail(vol, ENOMEM, "out of memory for a volatile write");
	if (d->pend_cap != cap || !d->pend_blk) {
		struct pend_blocks *pb = realloc(d->pend_blk, d->pend_cap * sizeof(*pb));
		if (!pb) {
			d->pend_cap = cap; /* pend grew, pend_blk did not: keep them in step */
			return sim_fail(vol, ENOMEM, "out of memory for a volatile write");
		}
		d->pend_blk = pb;
	}
	struct sim_block **blk = malloc(n * sizeof(*blk));
	if (!blk)
		return sim_fail(vol, ENOMEM, "out of memory for a volatile write");
	for (uint32_t i = 0; i < n; i++) {
		struct sim_block *b = src ? sim_block_new(src + (size_t)i * ss, ss) : SIM_BLOCK_ZERO;
		if (!b || bm_set(&d->cache, sector + i, sim_block_get(b))) {
			if (b) {
				sim_block_put(b);
				sim_block_put(b);
			}
			while (i--)
				sim_block_put(blk[i]);
			free(blk);
			return sim_fail(vol, ENOMEM, "out of memory for a volatile write");
		}
		blk[i] = b;
	}
	d->pend[d->npend] = (struct sim_pending){ seq, sector, n, src == NULL };
	d->pend_blk[d->npend].blk = blk;
	d->npend++;
	return 0;
}

int sim_write(sim_volume *vol, unsigned disk, uint64_t offset, const void *buf, size_t len,
	      unsigned flags)
{
	struct sim_disk *d;
	uint64_t sector;
	uint32_t n;
	bool fua = flags & SIM_FUA;
	enum sim_io_kind kind = fua ? SIM_IO_WRITE_FUA : SIM_IO_WRITE;
	int r = check_request(vol, disk, offset, len, kind, &d, &sector, &n);
	if (r)
		return r;
	if (!buf)
		return sim_fail(vol, EINVAL, "write: disk %u: no buffer", disk);
	if (flags & ~SIM_FUA)
		return sim_fail(vol, EINVAL, "write: disk %u: unknown flags %#x", disk, flags);
	if (d->read_only)
		return sim_fail(vol, EROFS, "write: disk %u is read-only", disk);
	struct sim_io io = io_begin(disk, kind, sector, n);
	const struct sim_fault *rf;
	if ((r = io_gate(vol, &io, n, &rf)))
		return r;
	if (!vol->nolog) /* (the checksum is the log's) */
		io.csum = XXH3_64bits(buf, len);
	const uint8_t *src = buf;
	uint64_t at = sector;
	if (rf) {
		io.fault = (uint8_t)rf->kind;
		if (rf->kind == SIM_FAULT_LOST_WRITE) {
			d->st.writes++;
			return io_end(vol, &io, 0, buf, len); /* acknowledged, gone */
		}
		if (rf->kind == SIM_FAULT_MISDIRECT) {
			uint64_t room = d->nsectors - n + 1; /* possible first sectors */
			if (rf->shift) {
				/* Reduce the shift first: sector + shift may overflow. */
				int64_t m = (int64_t)room;
				int64_t t = ((int64_t)sector + rf->shift % m) % m;
				at = (uint64_t)(t < 0 ? t + (int64_t)room : t);
			} else {
				at = sim_rng_below(&d->rng, room);
			}
			if (at == sector)
				at = (at + 1) % room;
			io.fault_arg = at;
		}
		if (rf->kind == SIM_FAULT_FLIP_ON_WRITE) {
			uint8_t *copy = malloc(len);
			if (!copy)
				return sim_fail(vol, ENOMEM, "out of memory");
			memcpy(copy, buf, len);
			io.fault_arg = fault_flip(&d->rng, copy, len, d->sector_size,
						  rf->sector >= 0 ? rf->sector - (int64_t)sector : -1,
						  rf->bits);
			r = fua ? store_durable(vol, d, at, n, copy)
				: store_volatile(vol, d, io.seq, at, n, copy);
			free(copy);
			src = NULL;
		}
	}
	if (src)
		r = fua ? store_durable(vol, d, at, n, src) : store_volatile(vol, d, io.seq, at, n, src);
	if (r)
		return io_end(vol, &io, r, NULL, 0);
	disk_clear_latent(d, at, n);
	d->st.writes++;
	d->st.fua_writes += fua;
	d->st.bytes_written += len;
	return io_done(vol, &io, buf, len);
}

int sim_flush(sim_volume *vol, unsigned disk)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "flush: no disk %u (the volume has %u)", disk,
				vol->ndisks);
	struct sim_disk *d = &vol->disk[disk];
	struct sim_io io = io_begin(disk, SIM_IO_FLUSH, 0, 0);
	const struct sim_fault *rf;
	/* A flush covers the whole disk for fault matching. */
	int r = io_gate(vol, &io, d->nsectors, &rf);
	if (r)
		return r;
	r = disk_persist_all(vol, d);
	if (r)
		return io_end(vol, &io, r, NULL, 0);
	d->epoch++;
	d->st.flushes++;
	return io_done(vol, &io, NULL, 0);
}

int sim_discard(sim_volume *vol, unsigned disk, uint64_t offset, size_t len)
{
	struct sim_disk *d;
	uint64_t sector;
	uint32_t n;
	int r = check_request(vol, disk, offset, len, SIM_IO_DISCARD, &d, &sector, &n);
	if (r)
		return r;
	if (d->read_only)
		return sim_fail(vol, EROFS, "discard: disk %u is read-only", disk);
	struct sim_io io = io_begin(disk, SIM_IO_DISCARD, sector, n);
	const struct sim_fault *rf;
	if ((r = io_gate(vol, &io, n, &rf)))
		return r;
	/* Only flaky-disk faults act on a discard; the others are for data. */
	r = store_volatile(vol, d, io.seq, sector, n, NULL);
	if (r)
		return io_end(vol, &io, r, NULL, 0);
	disk_clear_latent(d, sector, n);
	d->st.discards++;
	return io_done(vol, &io, NULL, 0);
}

int sim_read_durable(sim_volume *vol, unsigned disk, uint64_t offset, void *buf, size_t len)
{
	struct sim_disk *d;
	uint64_t sector;
	uint32_t n;
	int r = check_request(vol, disk, offset, len, SIM_IO_READ, &d, &sector, &n);
	if (!r && !buf)
		r = sim_fail(vol, EINVAL, "read: disk %u: no buffer", disk);
	return r ? r : media_read(vol, d, sector, n, buf);
}
