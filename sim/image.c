/* image.c - the disks as a whole: save as a sparse image, compare, hash, identify. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#define RUN_SECTORS_MAX (UINT64_C(1) << 20) /* bytes per read: bounded by this many sectors' worth */

/* The run of sectors from s that may hold data, at most `cap` bytes long. */
static uint32_t data_run(struct sim_disk *d, uint64_t s, size_t cap)
{
	uint32_t max = (uint32_t)(cap / d->sector_size);
	uint32_t n = 1;
	while (n < max && s + n < d->nsectors && media_next_data(d, s + n) == s + n)
		n++;
	return n;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	return p[0] == 0 && !memcmp(p, p + 1, len - 1);
}

int sim_disk_save_image(sim_volume *vol, unsigned disk, const char *path)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "save: no disk %u", disk);
	struct sim_disk *d = &vol->disk[disk];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return sim_fail(vol, errno, "save: cannot create %s: %s", path, strerror(errno));
	uint8_t *buf = malloc(RUN_SECTORS_MAX);
	int r = buf ? 0 : sim_fail(vol, ENOMEM, "out of memory");
	if (!r && ftruncate(fd, (off_t)d->size))
		r = sim_fail(vol, errno, "save: cannot size %s to %llu bytes: %s", path,
			     (unsigned long long)d->size, strerror(errno));
	for (uint64_t s = media_next_data(d, 0); !r && s != UINT64_MAX;) {
		uint32_t n = data_run(d, s, RUN_SECTORS_MAX);
		r = media_read(vol, d, s, n, buf);
		for (uint32_t i = 0; !r && i < n; i++) {
			const uint8_t *p = buf + (size_t)i * d->sector_size;
			if (all_zero(p, d->sector_size))
				continue; /* leave a hole */
			if (pwrite(fd, p, d->sector_size, (off_t)((s + i) * d->sector_size)) !=
			    (ssize_t)d->sector_size)
				r = sim_fail(vol, errno ? errno : EIO, "save: writing %s: %s", path,
					     strerror(errno));
		}
		s = media_next_data(d, s + n);
	}
	free(buf);
	if (close(fd) && !r)
		r = sim_fail(vol, errno, "save: closing %s: %s", path, strerror(errno));
	return r;
}

int sim_disk_durable_hash(sim_volume *vol, unsigned disk, uint64_t *hash)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "hash: no disk %u", disk);
	struct sim_disk *d = &vol->disk[disk];
	XXH3_state_t *st = XXH3_createState();
	uint8_t *buf = malloc(RUN_SECTORS_MAX);
	int r = st && buf ? 0 : sim_fail(vol, ENOMEM, "out of memory");
	if (!r) {
		/* The size, then each non-zero sector's number and content: equal for equal
		 * media whatever the backing store. */
		XXH3_64bits_reset(st);
		XXH3_64bits_update(st, &d->size, sizeof(d->size));
	}
	for (uint64_t s = media_next_data(d, 0); !r && s != UINT64_MAX;) {
		uint32_t n = data_run(d, s, RUN_SECTORS_MAX);
		r = media_read(vol, d, s, n, buf);
		for (uint32_t i = 0; !r && i < n; i++) {
			const uint8_t *p = buf + (size_t)i * d->sector_size;
			if (all_zero(p, d->sector_size))
				continue;
			uint64_t num = s + i;
			XXH3_64bits_update(st, &num, sizeof(num));
			XXH3_64bits_update(st, p, d->sector_size);
		}
		s = media_next_data(d, s + n);
	}
	if (!r)
		*hash = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	free(buf);
	return r;
}

int sim_disk_durable_cmp(sim_volume *a, unsigned da, sim_volume *b, unsigned db)
{
	if (da >= a->ndisks || db >= b->ndisks)
		return sim_fail(a, EINVAL, "compare: no such disk");
	struct sim_disk *x = &a->disk[da], *y = &b->disk[db];
	if (x->size != y->size || x->sector_size != y->sector_size)
		return 1;
	uint8_t *bx = malloc(RUN_SECTORS_MAX), *by = malloc(RUN_SECTORS_MAX);
	int r = bx && by ? 0 : sim_fail(a, ENOMEM, "out of memory");
	/* Walk the union of both disks' data sectors. */
	uint64_t s = 0;
	while (!r) {
		uint64_t nx = media_next_data(x, s), ny = media_next_data(y, s);
		s = nx < ny ? nx : ny;
		if (s == UINT64_MAX)
			break;
		uint32_t n = (uint32_t)(RUN_SECTORS_MAX / x->sector_size);
		if (n > x->nsectors - s)
			n = (uint32_t)(x->nsectors - s);
		if ((r = media_read(a, x, s, n, bx)) || (r = media_read(b, y, s, n, by)))
			break;
		if (memcmp(bx, by, (size_t)n * x->sector_size))
			r = 1;
		s += n;
	}
	free(bx);
	free(by);
	return r;
}

int sim_volume_track_content(sim_volume *vol, bool on)
{
	for (unsigned i = 0; i < vol->ndisks; i++) {
		struct sim_disk *d = &vol->disk[i];
		if (!on) {
			d->media.digested = d->cache.digested = false;
			continue;
		}
		if (d->fd >= 0)
			return -ENOTSUP;
		bm_digest_start(&d->media);
		bm_digest_start(&d->cache);
	}
	return 0;
}

int sim_volume_content_id(sim_volume *vol, uint64_t id[2])
{
	if (vol->nfaults)
		return -ENOTSUP;
	XXH3_state_t *st = XXH3_createState();
	if (!st)
		return sim_fail(vol, ENOMEM, "out of memory");
	XXH3_128bits_reset(st);
	int r = 0;
	for (unsigned i = 0; i < vol->ndisks && !r; i++) {
		struct sim_disk *d = &vol->disk[i];
		if (d->fd >= 0 || !d->media.digested || !d->cache.digested) {
			r = -ENOTSUP;
			break;
		}
		uint64_t rec[10] = { i, d->size, d->sector_size, d->lost, d->read_only, d->nlatent,
				     d->media.digest[0], d->media.digest[1], d->cache.digest[0],
				     d->cache.digest[1] };
		XXH3_128bits_update(st, rec, sizeof(rec));
		XXH3_128bits_update(st, d->latent, d->nlatent * sizeof(*d->latent));
	}
	if (!r) {
		XXH128_hash_t h = XXH3_128bits_digest(st);
		id[0] = h.low64;
		id[1] = h.high64;
	}
	XXH3_freeState(st);
	return r;
}
