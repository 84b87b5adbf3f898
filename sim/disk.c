/*
 * disk.c - one simulated disk: its durable media (a block map in memory or a
 * sparse image file), its volatile cache and pending writes, latent sectors.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Image-file IO goes through a bounce buffer of at most this many bytes. */
#define FILE_CHUNK (UINT64_C(1) << 20)

static int file_err(sim_volume *vol, struct sim_disk *d, const char *what, int e)
{
	return sim_fail(vol, e, "image %s: %s: %s", d->path, what, strerror(e));
}

static int pread_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t r = pread(fd, buf, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) { /* past the end of a short image: zeros */
			memset(buf, 0, len);
			return 0;
		}
		buf += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int pwrite_full(int fd, const uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t r = pwrite(fd, buf, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		buf += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int media_read(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n, uint8_t *buf)
{
	uint32_t ss = d->sector_size;
	if (d->fd >= 0) {
		int r = pread_full(d->fd, buf, (size_t)n * ss, sector * ss);
		if (r)
			return file_err(vol, d, "read", -r);
		if (!d->overlay || !d->media.nset)
			return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct sim_block *b = bm_get(&d->media, sector + i);
		if (!b && d->overlay)
			continue; /* the file's sector, read above */
		if (b && b != SIM_BLOCK_ZERO)
			memcpy(buf + (size_t)i * ss, b->data, ss);
		else
			memset(buf + (size_t)i * ss, 0, ss);
	}
	return 0;
}

static int scratch_reserve(sim_volume *vol, size_t len)
{
	if (vol->scratch_len >= len)
		return 0;
	uint8_t *p = realloc(vol->scratch, len);
	if (!p)
		return sim_fail(vol, ENOMEM, "out of memory for a %zu-byte buffer", len);
	vol->scratch = p;
	vol->scratch_len = len;
	return 0;
}

int media_store(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n,
		struct sim_block *const *blk)
{
	uint32_t ss = d->sector_size;
	if (d->fd < 0 || d->overlay) {
		for (uint32_t i = 0; i < n; i++) {
			if (!blk[i])
				continue;
			struct sim_block *b = blk[i] == SIM_BLOCK_ZERO ? NULL : sim_block_get(blk[i]);
			if (bm_set(&d->media, sector + i, b)) {
				sim_block_put(b);
				return sim_fail(vol, ENOMEM, "out of memory storing a sector");
			}
		}
		return 0;
	}
	/* Image file: write each run of stored sectors with one pwrite. */
	uint32_t chunk = (uint32_t)(FILE_CHUNK / ss);
	int r = scratch_reserve(vol, FILE_CHUNK);
	if (r)
		return r;
	for (uint32_t i = 0; i < n;) {
		if (!blk[i]) {
			i++;
			continue;
		}
		uint32_t j = i;
		while (j < n && blk[j] && j - i < chunk) {
			uint8_t *dst = vol->scratch + (size_t)(j - i) * ss;
			if (blk[j] == SIM_BLOCK_ZERO)
				memset(dst, 0, ss);
			else
				memcpy(dst, blk[j]->data, ss);
			j++;
		}
		r = pwrite_full(d->fd, vol->scratch, (size_t)(j - i) * ss, (sector + i) * ss);
		if (r)
			return file_err(vol, d, "write", -r);
		i = j;
	}
	return 0;
}

int media_write_buf(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n,
		    const uint8_t *buf)
{
	uint32_t ss = d->sector_size;
	if (d->fd >= 0 && !d->overlay) {
		int r = pwrite_full(d->fd, buf, (size_t)n * ss, sector * ss);
		return r ? file_err(vol, d, "write", -r) : 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct sim_block *b = sim_block_new(buf + (size_t)i * ss, ss);
		if (!b || bm_set(&d->media, sector + i, b)) {
			sim_block_put(b);
			return sim_fail(vol, ENOMEM, "out of memory storing a sector");
		}
	}
	return 0;
}

uint64_t media_next_data(struct sim_disk *d, uint64_t sector)
{
	if (sector >= d->nsectors)
		return UINT64_MAX;
	if (d->fd < 0)
		return bm_next(&d->media, sector);
	uint64_t over = d->overlay ? bm_next(&d->media, sector) : UINT64_MAX;
	off_t off = lseek(d->fd, (off_t)(sector * d->sector_size), SEEK_DATA);
	if (off < 0)
		return errno == ENXIO ? over : sector; /* no SEEK_DATA: assume data */
	uint64_t s = (uint64_t)off / d->sector_size;
	s = s < d->nsectors ? s : UINT64_MAX;
	return s < over ? s : over;
}

static int open_image(sim_volume *vol, struct sim_disk *d, const struct sim_disk_config *c,
		      unsigned idx)
{
	bool ro = c->read_only || c->overlay;
	if (c->overlay && c->create)
		return sim_fail(vol, EINVAL, "disk %u: an overlay cannot create its image", idx);
	int flags = ro ? O_RDONLY : O_RDWR | O_CREAT | (c->create ? O_TRUNC : 0);
	d->fd = open(c->image_path, flags | O_CLOEXEC, 0644);
	if (d->fd < 0)
		return sim_fail(vol, errno, "disk %u: cannot open image %s: %s", idx, c->image_path,
				strerror(errno));
	/* Readers of images mostly go forward: a larger readahead window. */
	posix_fadvise(d->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	struct stat sb;
	if (fstat(d->fd, &sb))
		return file_err(vol, d, "stat", errno);
	if (!S_ISREG(sb.st_mode))
		return sim_fail(vol, EINVAL, "disk %u: image %s is not a regular file", idx,
				c->image_path);
	uint64_t fsize = (uint64_t)sb.st_size;
	if (!d->size) {
		if (!fsize || fsize % d->sector_size)
			return sim_fail(vol, EINVAL,
					"disk %u: image %s is %llu bytes, not a non-zero multiple of the %u-byte sector",
					idx, c->image_path, (unsigned long long)fsize,
					d->sector_size);
		d->size = fsize;
	} else if (fsize > d->size) {
		return sim_fail(vol, EINVAL,
				"disk %u: image %s is %llu bytes, larger than the disk size %llu", idx,
				c->image_path, (unsigned long long)fsize,
				(unsigned long long)d->size);
	}
	if (fsize < d->size) {
		if (ro)
			return sim_fail(vol, EINVAL,
					"disk %u: read-only image %s is %llu bytes, smaller than the disk size %llu",
					idx, c->image_path, (unsigned long long)fsize,
					(unsigned long long)d->size);
		struct statvfs vfs;
		if (fstatvfs(d->fd, &vfs) == 0 && vfs.f_blocks &&
		    d->size / vfs.f_frsize > vfs.f_blocks)
			return sim_fail(vol, EFBIG,
					"disk %u: size %llu does not fit in the file system holding %s (%llu bytes)",
					idx, (unsigned long long)d->size, c->image_path,
					(unsigned long long)vfs.f_blocks * vfs.f_frsize);
		if (ftruncate(d->fd, (off_t)d->size))
			return sim_fail(vol, errno, "disk %u: cannot size image %s to %llu bytes: %s",
					idx, c->image_path, (unsigned long long)d->size,
					strerror(errno));
	}
	return 0;
}

static int check_size(sim_volume *vol, const struct sim_disk *d, unsigned idx)
{
	if (!d->size || d->size % d->sector_size)
		return sim_fail(vol, EINVAL, "disk %u: size %llu is not a non-zero multiple of %u", idx,
				(unsigned long long)d->size, d->sector_size);
	if (d->size > SIM_MAX_DISK_BYTES)
		return sim_fail(vol, EINVAL, "disk %u: size %llu exceeds the limit of %llu bytes", idx,
				(unsigned long long)d->size,
				(unsigned long long)SIM_MAX_DISK_BYTES);
	return 0;
}

int disk_init(sim_volume *vol, struct sim_disk *d, unsigned idx, const struct sim_disk_config *c,
	      uint64_t seed)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->sector_size = c->sector_size ? c->sector_size : 4096;
	d->size = c->size;
	d->read_only = c->read_only;
	d->overlay = c->overlay && !c->read_only;
	sim_rng_seed(&d->rng, sim_mix64(seed ^ (UINT64_C(0x5d15c0) + idx)));
	if (d->sector_size != 512 && d->sector_size != 4096)
		return sim_fail(vol, EINVAL, "disk %u: sector size %u is not 512 or 4096", idx,
				d->sector_size);
	/* A size given is checked before an image file is created or resized. */
	int r = d->size ? check_size(vol, d, idx) : 0;
	if (r)
		return r;
	if (c->image_path) {
		d->path = strdup(c->image_path);
		if (!d->path)
			return sim_fail(vol, ENOMEM, "out of memory");
		r = open_image(vol, d, c, idx);
		if (r)
			return r;
	} else if (c->read_only || c->overlay) {
		return sim_fail(vol, EINVAL, "disk %u: a memory disk cannot be read-only or an overlay",
				idx);
	}
	r = check_size(vol, d, idx);
	if (r)
		return r;
	d->nsectors = d->size / d->sector_size;
	bm_init(&d->media, d->nsectors);
	bm_init(&d->cache, d->nsectors);
	return 0;
}

void disk_drop_volatile(struct sim_disk *d)
{
	for (size_t k = 0; k < d->npend; k++) {
		for (uint32_t i = 0; i < d->pend[k].nsectors; i++)
			sim_block_put(d->pend_blk[k].blk[i]);
		free(d->pend_blk[k].blk);
	}
	d->npend = 0;
	bm_reset(&d->cache);
}

void disk_free(struct sim_disk *d)
{
	disk_drop_volatile(d);
	free(d->pend);
	free(d->pend_blk);
	free(d->latent);
	bm_free(&d->media);
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}

struct persist_ctx {
	sim_volume *vol;
	struct sim_disk *d;
};

static int persist_run(void *ctx, uint64_t first, struct sim_block *const *blk, uint32_t n)
{
	struct persist_ctx *pc = ctx;
	return media_store(pc->vol, pc->d, first, n, blk);
}

/*
 * The cache holds, for every sector, the newest volatile content (sectors a FUA
 * write made durable were taken out of it), which is what applying the
 * volatile writes in submission order would leave: so a flush stores the cache.
 */
int disk_persist_all(sim_volume *vol, struct sim_disk *d)
{
	struct persist_ctx pc = { vol, d };
	int r = bm_foreach_run(&d->cache, persist_run, &pc);
	if (r)
		return r;
	disk_drop_volatile(d);
	return 0;
}

/* A file-backed disk's clone is memory-backed: load the image's data, skipping holes
 * and all-zero sectors. */
static int clone_load_file(sim_volume *vol, struct sim_disk *dst, struct sim_disk *src)
{
	uint32_t ss = src->sector_size;
	uint8_t *buf = malloc(FILE_CHUNK);
	if (!buf)
		return sim_fail(vol, ENOMEM, "out of memory");
	int r = 0;
	uint64_t s = media_next_data(src, 0);
	while (s < src->nsectors) {
		uint32_t n = (uint32_t)(FILE_CHUNK / ss);
		if (s + n > src->nsectors)
			n = (uint32_t)(src->nsectors - s);
		r = media_read(vol, src, s, n, buf);
		if (r)
			break;
		for (uint32_t i = 0; i < n && !r; i++) {
			const uint8_t *p = buf + (size_t)i * ss;
			if (p[0] == 0 && !memcmp(p, p + 1, ss - 1))
				continue;
			struct sim_block *b = sim_block_new(p, ss);
			if (!b || bm_set(&dst->media, s + i, b)) {
				sim_block_put(b);
				r = sim_fail(vol, ENOMEM, "out of memory cloning an image");
			}
		}
		if (r)
			break;
		s = media_next_data(src, s + n);
	}
	free(buf);
	return r;
}

int disk_clone(sim_volume *vol, struct sim_disk *dst, struct sim_disk *src)
{
	*dst = *src;
	dst->fd = -1;
	dst->path = NULL;
	dst->read_only = false;
	dst->overlay = false;
	dst->pend = NULL;
	dst->pend_blk = NULL;
	dst->npend = dst->pend_cap = 0;
	dst->latent = NULL;
	dst->nlatent = dst->latent_cap = 0;
	bm_clone(&dst->cache, &src->cache);
	int r = 0;
	if (src->fd >= 0) {
		bm_init(&dst->media, src->nsectors);
		r = clone_load_file(vol, dst, src);
	} else {
		bm_clone(&dst->media, &src->media);
	}
	if (!r && src->npend) {
		if (sim_grow(&dst->pend, &dst->pend_cap, src->npend, sizeof(*dst->pend)) ||
		    !(dst->pend_blk = calloc(dst->pend_cap, sizeof(*dst->pend_blk))))
			r = sim_fail(vol, ENOMEM, "out of memory");
	}
	for (size_t k = 0; !r && k < src->npend; k++) {
		uint32_t n = src->pend[k].nsectors;
		struct sim_block **blk = malloc(n * sizeof(*blk));
		if (!blk) {
			r = sim_fail(vol, ENOMEM, "out of memory");
			break;
		}
		for (uint32_t i = 0; i < n; i++)
			blk[i] = sim_block_get(src->pend_blk[k].blk[i]);
		dst->pend[k] = src->pend[k];
		dst->pend_blk[k].blk = blk;
		dst->npend++;
	}
	if (!r && src->nlatent) {
		if (sim_grow(&dst->latent, &dst->latent_cap, src->nlatent, sizeof(*dst->latent)))
			r = sim_fail(vol, ENOMEM, "out of memory");
		else {
			memcpy(dst->latent, src->latent, src->nlatent * sizeof(*src->latent));
			dst->nlatent = src->nlatent;
		}
	}
	return r;
}

int disk_add_latent(struct sim_disk *d, uint64_t sector, uint64_t count)
{
	if (sim_grow(&d->latent, &d->latent_cap, d->nlatent + 1, sizeof(*d->latent)))
		return -ENOMEM;
	d->latent[d->nlatent++] = (struct latent_range){ sector, count };
	return 0;
}

void disk_clear_latent(struct sim_disk *d, uint64_t sector, uint64_t count)
{
	uint64_t end = sector + count;
	for (size_t i = 0; i < d->nlatent;) {
		struct latent_range *l = &d->latent[i];
		uint64_t lend = l->sector + l->count;
		if (lend <= sector || l->sector >= end) {
			i++;
			continue;
		}
		/* Keep what lies before and after the rewritten range. */
		struct latent_range before = { l->sector, sector > l->sector ? sector - l->sector : 0 };
		struct latent_range after = { end, lend > end ? lend - end : 0 };
		if (before.count && after.count) {
			*l = before;
			if (disk_add_latent(d, after.sector, after.count) == 0)
				i++;
			else
				return; /* no memory: the tail stays unmarked */
		} else if (before.count || after.count) {
			*l = before.count ? before : after;
			i++;
		} else {
			d->latent[i] = d->latent[--d->nlatent];
		}
	}
}

bool disk_is_latent(const struct sim_disk *d, uint64_t sector, uint64_t count)
{
	for (size_t i = 0; i < d->nlatent; i++)
		if (d->latent[i].sector < sector + count && sector < d->latent[i].sector + d->latent[i].count)
			return true;
	return false;
}

int disk_flip_bit(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t bit)
{
	int r = scratch_reserve(vol, d->sector_size);
	if (r)
		return r;
	r = media_read(vol, d, sector, 1, vol->scratch);
	if (r)
		return r;
	vol->scratch[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	return media_write_buf(vol, d, sector, 1, vol->scratch);
}
