/* volume.c - a volume of disks: open, close, clone, accessors and error reporting. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int sim_fail(sim_volume *vol, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(vol->err, sizeof(vol->err), fmt, ap);
	va_end(ap);
	return -errnum;
}

int sim_grow(void *arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*(void **)arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*(void **)arr = p;
	*cap = ncap;
	return 0;
}

void sim_config_init(struct sim_volume_config *cfg, unsigned ndisks, uint64_t disk_size,
		     uint64_t seed)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = seed;
	cfg->ndisks = ndisks;
	for (unsigned i = 0; i < ndisks && i < SIM_MAX_DISKS; i++) {
		cfg->disk[i].size = disk_size;
		cfg->disk[i].sector_size = 4096;
	}
	/* Roughly a SATA SSD: 20 us a request, 500 MB/s, 1 ms a cache flush. */
	cfg->latency.per_request_ns = 20000;
	cfg->latency.per_byte_ps = 2000;
	cfg->latency.per_flush_ns = 1000000;
}

static sim_volume *volume_alloc(void)
{
	sim_volume *vol = calloc(1, sizeof(*vol));
	if (!vol)
		return NULL;
	for (unsigned i = 0; i < SIM_MAX_DISKS; i++)
		vol->disk[i].fd = -1;
	vol->next_seq = 1;
	return vol;
}

int sim_volume_open(const struct sim_volume_config *cfg, sim_volume **out, char *err,
		    size_t errlen)
{
	*out = NULL;
	sim_volume *vol = volume_alloc();
	if (!vol) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int r = 0;
	if (cfg->ndisks < 1 || cfg->ndisks > SIM_MAX_DISKS)
		r = sim_fail(vol, EINVAL, "a volume has 1 to %d disks, not %u", SIM_MAX_DISKS,
			     cfg->ndisks);
	vol->seed = cfg->seed;
	vol->lat = cfg->latency;
	vol->recording = cfg->record_payloads;
	for (unsigned i = 0; !r && i < cfg->ndisks; i++) {
		vol->ndisks = i + 1;
		r = disk_init(vol, &vol->disk[i], i, &cfg->disk[i], cfg->seed);
	}
	if (r) {
		if (err)
			snprintf(err, errlen, "%s", vol->err);
		sim_volume_close(vol);
		return r;
	}
	*out = vol;
	return 0;
}

void sim_volume_close(sim_volume *vol)
{
	if (!vol)
		return;
	for (unsigned i = 0; i < vol->ndisks; i++)
		disk_free(&vol->disk[i]);
	log_free(vol);
	free(vol->faults);
	free(vol->scratch);
	free(vol);
}

int sim_volume_clone(sim_volume *vol, sim_volume **out)
{
	*out = NULL;
	sim_volume *c = volume_alloc();
	if (!c)
		return sim_fail(vol, ENOMEM, "out of memory cloning a volume");
	c->seed = vol->seed;
	c->lat = vol->lat;
	c->sim_time_ns = vol->sim_time_ns;
	c->next_seq = vol->next_seq;
	c->recording = vol->recording;
	c->nolog = vol->nolog;
	int r = 0;
	if (vol->nfaults) {
		if (sim_grow(&c->faults, &c->faults_cap, vol->nfaults, sizeof(*c->faults)))
			r = sim_fail(vol, ENOMEM, "out of memory cloning a volume");
		else {
			memcpy(c->faults, vol->faults, vol->nfaults * sizeof(*c->faults));
			c->nfaults = vol->nfaults;
		}
	}
	for (unsigned i = 0; !r && i < vol->ndisks; i++) {
		c->ndisks = i + 1;
		r = disk_clone(vol, &c->disk[i], &vol->disk[i]);
	}
	if (r) {
		sim_volume_close(c);
		return r;
	}
	*out = c;
	return 0;
}

const char *sim_volume_error(const sim_volume *vol)
{
	return vol->err;
}

unsigned sim_volume_ndisks(const sim_volume *vol)
{
	return vol->ndisks;
}

uint64_t sim_volume_seed(const sim_volume *vol)
{
	return vol->seed;
}

uint64_t sim_volume_sim_time_ns(const sim_volume *vol)
{
	return vol->sim_time_ns;
}

uint64_t sim_volume_next_seq(const sim_volume *vol)
{
	return vol->next_seq;
}

/* Accessors answer 0 (false) for a disk index out of range. */
#define DISK_OR(vol, i, dflt) \
	do { \
		if ((i) >= (vol)->ndisks) \
			return dflt; \
	} while (0)

uint64_t sim_disk_size(const sim_volume *vol, unsigned disk)
{
	DISK_OR(vol, disk, 0);
	return vol->disk[disk].size;
}

uint32_t sim_disk_sector_size(const sim_volume *vol, unsigned disk)
{
	DISK_OR(vol, disk, 0);
	return vol->disk[disk].sector_size;
}

uint64_t sim_disk_epoch(const sim_volume *vol, unsigned disk)
{
	DISK_OR(vol, disk, 0);
	return vol->disk[disk].epoch;
}

bool sim_disk_is_lost(const sim_volume *vol, unsigned disk)
{
	DISK_OR(vol, disk, false);
	return vol->disk[disk].lost;
}

bool sim_disk_is_read_only(const sim_volume *vol, unsigned disk)
{
	DISK_OR(vol, disk, false);
	return vol->disk[disk].read_only;
}

int sim_disk_overlay(sim_volume *vol, unsigned disk)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "no disk %u", disk);
	struct sim_disk *d = &vol->disk[disk];
	if (!d->read_only)
		return 0; /* it takes writes already */
	d->read_only = false;
	d->overlay = true; /* (read-only disks are always image files) */
	return 0;
}

const struct sim_pending *sim_disk_pending(const sim_volume *vol, unsigned disk, size_t *n)
{
	*n = 0;
	DISK_OR(vol, disk, NULL);
	*n = vol->disk[disk].npend;
	return *n ? vol->disk[disk].pend : NULL;
}

int sim_disk_stats(const sim_volume *vol, unsigned disk, struct sim_disk_stats *st)
{
	if (disk >= vol->ndisks)
		return -EINVAL;
	const struct sim_disk *d = &vol->disk[disk];
	*st = d->st;
	st->pending_writes = d->npend;
	st->durable_bytes = d->media.nset * d->sector_size;
	struct stat sb;
	if (d->fd >= 0 && fstat(d->fd, &sb) == 0) /* allocated bytes of the sparse image */
		st->durable_bytes = (uint64_t)sb.st_blocks * 512;
	return 0;
}
