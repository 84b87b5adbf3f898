/*
 * crash.c - power loss: which volatile writes persist, whole or torn, under
 * each policy; they reach the media in submission order and the cache empties.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The index of the pending write with this seq, or -1 (pend is in seq order). */
static ssize_t find_pending(const struct sim_disk *d, uint64_t seq)
{
	size_t lo = 0, hi = d->npend;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->pend[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->npend && d->pend[lo].seq == seq ? (ssize_t)lo : -1;
}

static int check_spec(sim_volume *vol, const struct sim_crash_spec *spec)
{
	if ((unsigned)spec->policy > SIM_CRASH_EXPLICIT)
		return sim_fail(vol, EINVAL, "crash: unknown policy %d", (int)spec->policy);
	if (!(spec->keep_probability >= 0.0 && spec->keep_probability <= 1.0) ||
	    !(spec->tear_probability >= 0.0 && spec->tear_probability <= 1.0))
		return sim_fail(vol, EINVAL, "crash: probabilities must be in [0, 1]");
	if (spec->policy == SIM_CRASH_EXPLICIT && spec->npicks && !spec->picks)
		return sim_fail(vol, EINVAL, "crash: %zu picks but no pick array", spec->npicks);
	return 0;
}

/*
 * Marks in sel (one byte per sector of each pending write, laid end to end)
 * the sectors that persist.  only_own: explicit picks of other disks are skipped
 * instead of rejected.
 */
static int choose(sim_volume *vol, unsigned disk, const struct sim_crash_spec *spec,
		  uint8_t *sel, const size_t *base, bool only_own)
{
	struct sim_disk *d = &vol->disk[disk];
	double keep = spec->keep_probability > 0 ? spec->keep_probability : 0.5;
	switch (spec->policy) {
	case SIM_CRASH_NONE:
		return 0;
	case SIM_CRASH_ALL:
	case SIM_CRASH_PREFIX:
		for (size_t k = 0; k < d->npend; k++)
			if (spec->policy == SIM_CRASH_ALL || k < spec->prefix_len)
				memset(sel + base[k], 1, d->pend[k].nsectors);
		return 0;
	case SIM_CRASH_RANDOM:
		for (size_t k = 0; k < d->npend; k++) {
			uint32_t n = d->pend[k].nsectors;
			if (!sim_rng_chance(&d->rng, keep))
				continue;
			if (n > 1 && sim_rng_chance(&d->rng, spec->tear_probability)) {
				/* Torn: a random non-empty proper subset of the sectors. */
				uint32_t kept = 0;
				for (uint32_t i = 0; i < n; i++)
					kept += sel[base[k] + i] = (uint8_t)(sim_rng_next(&d->rng) >> 63);
				if (kept == 0)
					sel[base[k] + sim_rng_below(&d->rng, n)] = 1;
				else if (kept == n)
					sel[base[k] + sim_rng_below(&d->rng, n)] = 0;
			} else {
				memset(sel + base[k], 1, n);
			}
		}
		return 0;
	case SIM_CRASH_EXPLICIT:
		for (size_t i = 0; i < spec->npicks; i++) {
			const struct sim_crash_pick *p = &spec->picks[i];
			ssize_t k = find_pending(d, p->seq);
			if (k < 0) {
				if (only_own)
					continue;
				return sim_fail(vol, EINVAL,
						"crash: disk %u has no volatile write with seq %llu",
						disk, (unsigned long long)p->seq);
			}
			uint32_t n = d->pend[k].nsectors;
			uint32_t count = p->count ? p->count : n - (p->first < n ? p->first : n);
			if (p->first >= n || count > n - p->first)
				return sim_fail(vol, EINVAL,
						"crash: sectors %u+%u of write %llu (of %u sectors) are out of range",
						p->first, count, (unsigned long long)p->seq, n);
			memset(sel + base[k] + p->first, 1, count);
		}
		return 0;
	}
	return 0;
}

static int crash_one(sim_volume *vol, unsigned disk, const struct sim_crash_spec *spec,
		     struct sim_crash_result *res, bool only_own)
{
	struct sim_disk *d = &vol->disk[disk];
	struct sim_crash_result out = { .pending = d->npend };
	size_t total = 0, maxn = 0;
	size_t *base = calloc(d->npend + 1, sizeof(*base));
	if (!base)
		return sim_fail(vol, ENOMEM, "out of memory");
	for (size_t k = 0; k < d->npend; k++) {
		base[k] = total;
		total += d->pend[k].nsectors;
		if (d->pend[k].nsectors > maxn)
			maxn = d->pend[k].nsectors;
	}
	uint8_t *sel = calloc(total + 1, 1);
	struct sim_block **apply = calloc(maxn + 1, sizeof(*apply));
	int r = sel && apply ? 0 : sim_fail(vol, ENOMEM, "out of memory");
	if (!r)
		r = choose(vol, disk, spec, sel, base, only_own);
	for (size_t k = 0; !r && k < d->npend; k++) {
		uint32_t n = d->pend[k].nsectors, kept = 0;
		for (uint32_t i = 0; i < n; i++) {
			apply[i] = sel[base[k] + i] ? d->pend_blk[k].blk[i] : NULL;
			kept += sel[base[k] + i];
		}
		if (!kept)
			continue;
		out.persisted++;
		out.torn += kept < n;
		out.sectors_persisted += kept;
		r = media_store(vol, d, d->pend[k].sector, n, apply);
	}
	free(base);
	free(sel);
	free(apply);
	if (r)
		return r;
	disk_drop_volatile(d);
	struct sim_io io = {
		.seq = vol->next_seq++,
		.epoch = d->epoch,
		.sector = out.persisted,
		.nsectors = (uint32_t)out.torn,
		.disk = (uint16_t)disk,
		.kind = SIM_IO_CRASH,
		.sim_time_ns = vol->sim_time_ns,
	};
	if (res)
		*res = out;
	return log_append(vol, &io, NULL, 0);
}

int sim_disk_crash(sim_volume *vol, unsigned disk, const struct sim_crash_spec *spec,
		   struct sim_crash_result *res)
{
	if (disk >= vol->ndisks)
		return sim_fail(vol, EINVAL, "crash: no disk %u", disk);
	int r = check_spec(vol, spec);
	return r ? r : crash_one(vol, disk, spec, res, false);
}

int sim_volume_crash(sim_volume *vol, const struct sim_crash_spec *spec,
		     struct sim_crash_result *res)
{
	int r = check_spec(vol, spec);
	if (r)
		return r;
	/* Every pick must name some disk's volatile write, and sectors of it, before
	 * any disk crashes. */
	for (size_t i = 0; spec->policy == SIM_CRASH_EXPLICIT && i < spec->npicks; i++) {
		const struct sim_crash_pick *p = &spec->picks[i];
		ssize_t k = -1;
		unsigned d;
		for (d = 0; d < vol->ndisks && k < 0; d++)
			k = find_pending(&vol->disk[d], p->seq);
		if (k < 0)
			return sim_fail(vol, EINVAL, "crash: no disk has a volatile write with seq %llu",
					(unsigned long long)p->seq);
		uint32_t n = vol->disk[d - 1].pend[k].nsectors;
		if (p->first >= n || p->count > n - p->first)
			return sim_fail(vol, EINVAL,
					"crash: sectors %u+%u of write %llu (of %u sectors) are out of range",
					p->first, p->count, (unsigned long long)p->seq, n);
	}
	for (unsigned d = 0; d < vol->ndisks; d++) {
		r = crash_one(vol, d, spec, res ? &res[d] : NULL, true);
		if (r)
			return r;
	}
	return 0;
}
