/*
 * fault.c - the fault schedule: adding, parsing and matching faults, and the
 * faults that act on a disk itself (bit rot at rest, latent sectors, loss).
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* sim_fault_add's limit on `bits`. */
#define MAX_FLIP_BITS 4096

static const char *const kind_names[SIM_FAULT_KIND_COUNT] = {
	[SIM_FAULT_NONE] = "none",
	[SIM_FAULT_FLIP_AT_REST] = "flip-at-rest",
	[SIM_FAULT_FLIP_ON_WRITE] = "flip-on-write",
	[SIM_FAULT_FLIP_ON_READ] = "flip-on-read",
	[SIM_FAULT_LATENT] = "latent",
	[SIM_FAULT_LOST_WRITE] = "lost-write",
	[SIM_FAULT_MISDIRECT] = "misdirect",
	[SIM_FAULT_DEVICE_LOSS] = "device-loss",
	[SIM_FAULT_FLAKY] = "flaky",
};

const char *sim_fault_kind_name(enum sim_fault_kind kind)
{
	return (unsigned)kind < SIM_FAULT_KIND_COUNT ? kind_names[kind] : "?";
}

static bool acts_on_disk(enum sim_fault_kind k)
{
	return k == SIM_FAULT_FLIP_AT_REST || k == SIM_FAULT_LATENT || k == SIM_FAULT_DEVICE_LOSS;
}

int sim_fault_add(sim_volume *vol, const struct sim_fault *fault)
{
	struct sim_fault f = *fault;
	if (f.kind <= SIM_FAULT_NONE || f.kind >= SIM_FAULT_KIND_COUNT)
		return sim_fail(vol, EINVAL, "fault: unknown kind %d", (int)f.kind);
	if (f.disk != SIM_ANY_DISK && (f.disk < 0 || (unsigned)f.disk >= vol->ndisks))
		return sim_fail(vol, EINVAL, "fault %s: no disk %d (the volume has %u)",
				kind_names[f.kind], f.disk, vol->ndisks);
	if (f.sector < SIM_ANY_SECTOR)
		return sim_fail(vol, EINVAL, "fault %s: negative sector %lld", kind_names[f.kind],
				(long long)f.sector);
	for (unsigned i = 0; i < vol->ndisks && f.sector >= 0; i++) {
		if (f.disk != SIM_ANY_DISK && (unsigned)f.disk != i)
			continue;
		if ((uint64_t)f.sector >= vol->disk[i].nsectors)
			return sim_fail(vol, EINVAL, "fault %s: sector %lld is past the end of disk %u",
					kind_names[f.kind], (long long)f.sector, i);
	}
	if (!(f.probability >= 0.0 && f.probability <= 1.0))
		return sim_fail(vol, EINVAL, "fault %s: probability %g is not in [0, 1]",
				kind_names[f.kind], f.probability);
	if (f.probability == 0.0)
		f.probability = 1.0;
	if (f.bits == 0)
		f.bits = 1;
	if (f.bits > 4096)
		return sim_fail(vol, EINVAL, "fault %s: %u bits is more than 4096",
				kind_names[f.kind], f.bits);
	if (f.nsectors == 0)
		f.nsectors = 1;
	if (sim_grow(&vol->faults, &vol->faults_cap, vol->nfaults + 1, sizeof(*vol->faults)))
		return sim_fail(vol, ENOMEM, "out of memory");
	vol->faults[vol->nfaults++] = (struct fault_slot){ f, 0, 0 };
	return 0;
}

void sim_fault_clear(sim_volume *vol)
{
	vol->nfaults = 0;
}

static bool matches(const struct fault_slot *s, uint64_t seq, unsigned disk, uint64_t sector,
		    uint64_t n)
{
	const struct sim_fault *f = &s->f;
	if (f->count && s->fired >= f->count)
		return false;
	if (seq < f->after_seq)
		return false;
	if (f->disk != SIM_ANY_DISK && (unsigned)f->disk != disk)
		return false;
	if (f->sector >= 0 && ((uint64_t)f->sector < sector || (uint64_t)f->sector >= sector + n))
		return false;
	return true;
}

/* Whether a fault that would fire lets this request pass (sim_fault.skip). */
static bool lets_pass(struct fault_slot *s)
{
	if (s->passed >= s->f.skip)
		return false;
	s->passed++;
	return true;
}

/* Logs a fault that acted on the disk outside any request. */
static int log_disk_fault(sim_volume *vol, unsigned disk, enum sim_fault_kind kind,
			  uint64_t sector, uint32_t n, uint64_t arg)
{
	struct sim_disk *d = &vol->disk[disk];
	struct sim_io io = {
		.seq = vol->next_seq++,
		.epoch = d->epoch,
		.sector = sector,
		.nsectors = n,
		.disk = (uint16_t)disk,
		.kind = SIM_IO_FAULT,
		.fault = (uint8_t)kind,
		.fault_arg = arg,
		.sim_time_ns = vol->sim_time_ns,
	};
	d->st.faults++;
	return log_append(vol, &io, NULL, 0);
}

/* Draws min(bits, span, MAX_FLIP_BITS) distinct bit positions in [0, span) into
 * pos, one draw each (Floyd's sampling): flipping a bit twice would undo it. */
static uint32_t pick_bits(struct sim_rng *r, uint64_t span, uint32_t bits, uint64_t *pos)
{
	if (bits > MAX_FLIP_BITS)
		bits = MAX_FLIP_BITS;
	if (bits > span)
		bits = (uint32_t)span;
	uint32_t m = 0;
	for (uint64_t j = span - bits; j < span; j++) {
		uint64_t t = sim_rng_below(r, j + 1);
		for (uint32_t k = 0; k < m; k++)
			if (pos[k] == t) {
				t = j;
				break;
			}
		pos[m++] = t;
	}
	return m;
}

static int fire_on_disk(sim_volume *vol, unsigned disk, const struct sim_fault *f)
{
	struct sim_disk *d = &vol->disk[disk];
	switch (f->kind) {
	case SIM_FAULT_DEVICE_LOSS:
		if (d->lost)
			return 0;
		disk_drop_volatile(d);
		d->lost = true;
		return log_disk_fault(vol, disk, f->kind, 0, 0, 0);
	case SIM_FAULT_FLIP_AT_REST: {
		if (d->lost || d->read_only) /* a read-only image is never written */
			return 0;
		uint64_t s = f->sector >= 0 ? (uint64_t)f->sector : sim_rng_below(&d->rng, d->nsectors);
		uint64_t bit[MAX_FLIP_BITS];
		uint32_t m = pick_bits(&d->rng, (uint64_t)d->sector_size * 8, f->bits, bit);
		for (uint32_t b = 0; b < m; b++) {
			int r = disk_flip_bit(vol, d, s, (uint32_t)bit[b]);
			if (r)
				return r;
		}
		return log_disk_fault(vol, disk, f->kind, s, 1, m ? bit[0] : 0);
	}
	case SIM_FAULT_LATENT: {
		uint64_t s = f->sector >= 0 ? (uint64_t)f->sector : sim_rng_below(&d->rng, d->nsectors);
		uint64_t cnt = f->nsectors;
		if (cnt > d->nsectors - s)
			cnt = d->nsectors - s;
		if (disk_add_latent(d, s, cnt))
			return sim_fail(vol, ENOMEM, "out of memory");
		return log_disk_fault(vol, disk, f->kind, s, (uint32_t)cnt, 0);
	}
	default:
		return 0;
	}
}

int fault_before_request(sim_volume *vol, unsigned disk, uint64_t sector, uint64_t n)
{
	struct sim_disk *d = &vol->disk[disk];
	for (size_t i = 0; i < vol->nfaults; i++) {
		struct fault_slot *s = &vol->faults[i];
		if (!acts_on_disk(s->f.kind) || !matches(s, vol->next_seq, disk, sector, n))
			continue;
		if (!sim_rng_chance(&d->rng, s->f.probability) || lets_pass(s))
			continue;
		s->fired++;
		int r = fire_on_disk(vol, disk, &s->f);
		if (r)
			return r;
	}
	return 0;
}

static bool applies_to(enum sim_fault_kind k, enum sim_io_kind io)
{
	switch (k) {
	case SIM_FAULT_FLAKY:
		return true;
	case SIM_FAULT_FLIP_ON_READ:
		return io == SIM_IO_READ;
	case SIM_FAULT_LOST_WRITE:
	case SIM_FAULT_MISDIRECT:
	case SIM_FAULT_FLIP_ON_WRITE:
		return io == SIM_IO_WRITE || io == SIM_IO_WRITE_FUA;
	default:
		return false;
	}
}

const struct sim_fault *fault_on_request(sim_volume *vol, unsigned disk, uint64_t seq,
					 uint64_t sector, uint64_t n, enum sim_io_kind kind)
{
	struct sim_disk *d = &vol->disk[disk];
	for (size_t i = 0; i < vol->nfaults; i++) {
		struct fault_slot *s = &vol->faults[i];
		if (!applies_to(s->f.kind, kind) || !matches(s, seq, disk, sector, n))
			continue;
		if (!sim_rng_chance(&d->rng, s->f.probability) || lets_pass(s))
			continue;
		s->fired++;
		return &s->f;
	}
	return NULL;
}

uint64_t fault_flip(struct sim_rng *r, uint8_t *buf, size_t len, uint32_t sector_size,
		    int64_t sector_in, uint32_t bits)
{
	uint64_t base = 0, span = (uint64_t)len * 8, first = 0;
	if (sector_in >= 0 && (uint64_t)sector_in * sector_size < len) {
		base = (uint64_t)sector_in * sector_size * 8;
		span = (uint64_t)sector_size * 8;
	}
	uint64_t pos[MAX_FLIP_BITS];
	uint32_t m = pick_bits(r, span, bits, pos);
	for (uint32_t b = 0; b < m; b++) {
		uint64_t bit = base + pos[b];
		if (b == 0)
			first = bit;
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	return first;
}

int sim_disk_flip_bit(sim_volume *vol, unsigned disk, uint64_t sector, uint32_t bit)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "flip: no disk %u", disk);
	struct sim_disk *d = &vol->disk[disk];
	if (sector >= d->nsectors || bit >= d->sector_size * 8)
		return sim_fail(vol, EINVAL, "flip: disk %u: sector %llu bit %u is out of range",
				disk, (unsigned long long)sector, bit);
	if (d->read_only)
		return sim_fail(vol, EROFS, "flip: disk %u is read-only", disk);
	int r = disk_flip_bit(vol, d, sector, bit);
	return r ? r : log_disk_fault(vol, disk, SIM_FAULT_FLIP_AT_REST, sector, 1, bit);
}

int sim_disk_add_latent(sim_volume *vol, unsigned disk, uint64_t sector, uint32_t nsectors)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "latent: no disk %u", disk);
	struct sim_disk *d = &vol->disk[disk];
	if (!nsectors || sector >= d->nsectors || nsectors > d->nsectors - sector)
		return sim_fail(vol, EINVAL, "latent: disk %u: sectors %llu+%u are out of range",
				disk, (unsigned long long)sector, nsectors);
	if (disk_add_latent(d, sector, nsectors))
		return sim_fail(vol, ENOMEM, "out of memory");
	return log_disk_fault(vol, disk, SIM_FAULT_LATENT, sector, nsectors, 0);
}

int sim_disk_lose(sim_volume *vol, unsigned disk)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "lose: no disk %u", disk);
	const struct sim_fault f = { .kind = SIM_FAULT_DEVICE_LOSS };
	return fire_on_disk(vol, disk, &f);
}

int sim_disk_replace(sim_volume *vol, unsigned disk)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "replace: no disk %u", disk);
	struct sim_disk *d = &vol->disk[disk];
	if (d->read_only)
		return sim_fail(vol, EROFS, "replace: disk %u is read-only", disk);
	if (d->overlay)
		return sim_fail(vol, EROFS, "replace: disk %u is an overlay over a read-only image",
				disk);
	disk_drop_volatile(d);
	d->nlatent = 0;
	d->lost = false;
	if (d->fd >= 0) {
		/* A blank image of the same size: truncate to zero and back. */
		if (ftruncate(d->fd, 0) || ftruncate(d->fd, (off_t)d->size))
			return sim_fail(vol, errno, "replace: image %s: %s", d->path, strerror(errno));
	} else {
		bm_reset(&d->media);
	}
	struct sim_io io = {
		.seq = vol->next_seq++,
		.epoch = d->epoch,
		.disk = (uint16_t)disk,
		.kind = SIM_IO_REPLACE,
		.sim_time_ns = vol->sim_time_ns,
	};
	return log_append(vol, &io, NULL, 0);
}

/* ---- Parsing "kind,key=value,..." ---- */

static int parse_u64(const char *v, uint64_t *out)
{
	if (!*v || *v == '-' || *v == '+')
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || *end)
		return -1;
	*out = x;
	return 0;
}

int sim_fault_parse(const char *text, struct sim_fault *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->disk = SIM_ANY_DISK;
	out->sector = SIM_ANY_SECTOR;
	out->probability = 1.0;
	char buf[256];
	if (!text || strlen(text) >= sizeof(buf)) {
		snprintf(err, errlen, "fault spec missing or longer than %zu characters",
			 sizeof(buf) - 1);
		return -EINVAL;
	}
	strcpy(buf, text);
	char *save = NULL;
	char *tok = strtok_r(buf, ",", &save);
	if (!tok) {
		snprintf(err, errlen, "empty fault spec");
		return -EINVAL;
	}
	for (int k = 1; k < SIM_FAULT_KIND_COUNT; k++)
		if (!strcmp(tok, kind_names[k]))
			out->kind = (enum sim_fault_kind)k;
	if (out->kind == SIM_FAULT_NONE) {
		snprintf(err, errlen, "unknown fault kind '%s'", tok);
		return -EINVAL;
	}
	while ((tok = strtok_r(NULL, ",", &save))) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			snprintf(err, errlen, "'%s' is not key=value", tok);
			return -EINVAL;
		}
		*eq = '\0';
		const char *key = tok, *val = eq + 1;
		uint64_t x = 0;
		int bad = 0;
		if (!strcmp(key, "p")) {
			char *end;
			errno = 0;
			out->probability = strtod(val, &end);
			bad = errno || *end || !*val || !(out->probability >= 0.0 && out->probability <= 1.0);
		} else if (!strcmp(key, "disk")) {
			bad = parse_u64(val, &x) || x >= SIM_MAX_DISKS;
			out->disk = (int)x;
		} else if (!strcmp(key, "sector")) {
			bad = parse_u64(val, &x) || x > INT64_MAX;
			out->sector = (int64_t)x;
		} else if (!strcmp(key, "after")) {
			bad = parse_u64(val, &x);
			out->after_seq = x;
		} else if (!strcmp(key, "count") || !strcmp(key, "bits") || !strcmp(key, "n")) {
			bad = parse_u64(val, &x) || x > UINT32_MAX;
			*(key[0] == 'c' ? &out->count : key[0] == 'b' ? &out->bits : &out->nsectors) =
				(uint32_t)x;
		} else if (!strcmp(key, "shift")) {
			char *end;
			errno = 0;
			long long s = strtoll(val, &end, 0);
			bad = errno || *end || !*val;
			out->shift = s;
		} else {
			snprintf(err, errlen, "unknown fault key '%s'", key);
			return -EINVAL;
		}
		if (bad) {
			snprintf(err, errlen, "bad value '%s' for fault key '%s'", val, key);
			return -EINVAL;
		}
	}
	return 0;
}
