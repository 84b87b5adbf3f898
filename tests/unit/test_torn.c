/*
 * test_torn.c - torn writes at sector granularity: explicit first/count picks
 * and RANDOM crashes with tear_probability.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DISK (UINT64_C(16) << 20)

/* Sector i of the region at off (n sectors): 1 if it holds the new pattern,
 * 0 the old one; anything else fails. */
static void sector_origin(sim_volume *vol, uint32_t ss, uint64_t off, uint32_t n,
			  uint64_t old_tag, uint64_t new_tag, uint8_t *out)
{
	uint8_t *got = tu_get_durable(vol, 0, off, (size_t)n * ss);
	uint8_t *old = tu_pat((size_t)n * ss, old_tag), *new1 = tu_pat((size_t)n * ss, new_tag);
	for (uint32_t i = 0; i < n; i++) {
		size_t at = (size_t)i * ss;
		if (!memcmp(got + at, new1 + at, ss))
			out[i] = 1;
		else if (!memcmp(got + at, old + at, ss))
			out[i] = 0;
		else
			cr_assert_fail("sector %u at %llu is neither old nor new", i,
				       (unsigned long long)off);
	}
	free(got);
	free(old);
	free(new1);
}

static void explicit_tear(uint32_t ss)
{
	sim_volume *vol = tu_open(1, DISK, ss, 1);
	uint64_t off = 10 * (uint64_t)ss;
	tu_write_ok(vol, 0, off, 8 * (size_t)ss, 1, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	tu_write_ok(vol, 0, off, 8 * (size_t)ss, 2, 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(p[0].nsectors, 8);
	struct sim_crash_pick pick = { .seq = p[0].seq, .first = 2, .count = 3 };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0, "%s", sim_volume_error(vol));
	uint8_t got[8];
	sector_origin(vol, ss, off, 8, 1, 2, got);
	const uint8_t want[8] = { 0, 0, 1, 1, 1, 0, 0, 0 };
	cr_assert_eq(memcmp(got, want, 8), 0, "only sectors 2-4 persist");
	cr_assert_eq(res.persisted, 1);
	cr_assert_eq(res.torn, 1);
	cr_assert_eq(res.sectors_persisted, 3);
	/* The torn content is what reads see after the crash. */
	uint8_t *a = tu_get(vol, 0, off, 8 * (size_t)ss);
	uint8_t *b = tu_get_durable(vol, 0, off, 8 * (size_t)ss);
	cr_assert_eq(memcmp(a, b, 8 * (size_t)ss), 0);
	free(a);
	free(b);
	sim_volume_close(vol);
}

static void t_explicit_first_count_4k(void)
{
	explicit_tear(4096);
}

static void t_explicit_first_count_512(void)
{
	explicit_tear(512);
}

static void t_explicit_first_without_count_keeps_the_tail(void)
{
	sim_volume *vol = tu_open(1, DISK, 4096, 2);
	tu_write_ok(vol, 0, 0, 6 * 4096, 2, 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	struct sim_crash_pick pick = { .seq = p[0].seq, .first = 4 };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	uint8_t got[6];
	sector_origin(vol, 4096, 0, 6, 0, 2, got);
	const uint8_t want[6] = { 0, 0, 0, 0, 1, 1 };
	cr_assert_eq(memcmp(got, want, 6), 0);
	cr_assert_eq(res.torn, 1);
	cr_assert_eq(res.sectors_persisted, 2);
	sim_volume_close(vol);
}

static void t_explicit_whole_pick_is_not_torn(void)
{
	sim_volume *vol = tu_open(1, DISK, 4096, 3);
	tu_write_ok(vol, 0, 0, 6 * 4096, 2, 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	struct sim_crash_pick pick = { .seq = p[0].seq, .first = 0, .count = 6 };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	cr_assert(tu_durable_is(vol, 0, 0, 6 * 4096, 2));
	cr_assert_eq(res.torn, 0);
	cr_assert_eq(res.sectors_persisted, 6);
	sim_volume_close(vol);
}

Test(torn, two_picks_of_one_write_merge)
{
	sim_volume *vol = tu_open(1, DISK, 4096, 4);
	tu_write_ok(vol, 0, 0, 6 * 4096, 2, 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	struct sim_crash_pick picks[] = { { .seq = p[0].seq, .first = 0, .count = 1 },
					  { .seq = p[0].seq, .first = 5, .count = 1 } };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = picks, .npicks = 2 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	uint8_t got[6];
	sector_origin(vol, 4096, 0, 6, 0, 2, got);
	const uint8_t want[6] = { 1, 0, 0, 0, 0, 1 };
	cr_assert_eq(memcmp(got, want, 6), 0);
	cr_assert_eq(res.persisted, 1);
	cr_assert_eq(res.torn, 1);
	cr_assert_eq(res.sectors_persisted, 2);
	sim_volume_close(vol);
}

/* NW multi-sector writes of 2..9 sectors over old content, crashed RANDOM. */
#define NW 60
static void random_tear(uint32_t ss, uint64_t seed)
{
	sim_volume *vol = tu_open(1, DISK, ss, seed);
	uint64_t off[NW];
	uint32_t len[NW];
	uint64_t at = 0;
	for (unsigned i = 0; i < NW; i++) {
		len[i] = 2 + i % 8;
		off[i] = at;
		at += (uint64_t)(len[i] + 1) * ss;
		tu_write_ok(vol, 0, off[i], (size_t)len[i] * ss, 1000 + i, 0);
	}
	cr_assert_eq(sim_flush(vol, 0), 0);
	for (unsigned i = 0; i < NW; i++)
		tu_write_ok(vol, 0, off[i], (size_t)len[i] * ss, 2000 + i, 0);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM, .keep_probability = 1.0,
				       .tear_probability = 1.0 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	cr_assert_eq(res.pending, NW);
	cr_assert_eq(res.persisted, NW);
	cr_assert_eq(res.torn, NW, "every kept multi-sector write is torn");
	uint64_t new_sectors = 0;
	uint8_t shape[NW][9];
	unsigned nshape = 0;
	for (unsigned i = 0; i < NW; i++) {
		uint8_t got[9];
		sector_origin(vol, ss, off[i], len[i], 1000 + i, 2000 + i, got);
		unsigned k = 0;
		for (uint32_t j = 0; j < len[i]; j++)
			k += got[j];
		cr_assert(k > 0 && k < len[i], "write %u (%u sectors): %u new sectors", i, len[i],
			  k);
		new_sectors += k;
		if (len[i] == 9)
			memcpy(shape[nshape++], got, 9);
	}
	bool some_differ = false;
	for (unsigned j = 1; j < nshape; j++)
		some_differ |= memcmp(shape[0], shape[j], 9) != 0;
	cr_assert_eq(res.sectors_persisted, new_sectors);
	cr_assert(some_differ, "tears are random, not one fixed shape");
	sim_volume_close(vol);
}

static void t_random_tear_probability_one_tears_every_multi_sector_write_4k(void)
{
	random_tear(4096, 5);
}

static void t_random_tear_probability_one_tears_every_multi_sector_write_512(void)
{
	random_tear(512, 6);
}

Test(torn, random_tear_never_splits_a_single_sector_write)
{
	sim_volume *vol = tu_open(1, DISK, 4096, 7);
	for (unsigned i = 0; i < 30; i++)
		tu_write_ok(vol, 0, (uint64_t)i * 4096, 4096, 100 + i, 0);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM, .keep_probability = 1.0,
				       .tear_probability = 1.0 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	cr_assert_eq(res.torn, 0);
	cr_assert_eq(res.persisted, 30);
	for (unsigned i = 0; i < 30; i++)
		cr_assert(tu_durable_is(vol, 0, (uint64_t)i * 4096, 4096, 100 + i));
	sim_volume_close(vol);
}

Test(torn, random_tear_probability_zero_keeps_writes_whole)
{
	sim_volume *vol = tu_open(1, DISK, 4096, 8);
	for (unsigned i = 0; i < 30; i++)
		tu_write_ok(vol, 0, (uint64_t)i * 8 * 4096, 8 * 4096, 100 + i, 0);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0.5,
				       .tear_probability = 0.0 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	cr_assert_eq(res.torn, 0);
	unsigned kept = 0;
	for (unsigned i = 0; i < 30; i++) {
		uint64_t off = (uint64_t)i * 8 * 4096;
		bool whole = tu_durable_is(vol, 0, off, 8 * 4096, 100 + i);
		bool none = tu_durable_is(vol, 0, off, 8 * 4096, 0);
		cr_assert(whole || none, "write %u is all or nothing", i);
		kept += whole;
	}
	cr_assert_eq(res.persisted, kept);
	cr_assert(kept > 0 && kept < 30, "kept %u of 30", kept);
	cr_assert_eq(res.sectors_persisted, (uint64_t)kept * 8);
	sim_volume_close(vol);
}

Test(torn, explicit_first_count)
{
	t_explicit_first_count_4k();
	t_explicit_first_count_512();
}

Test(torn, explicit_without_count_and_whole)
{
	t_explicit_first_without_count_keeps_the_tail();
	t_explicit_whole_pick_is_not_torn();
}

Test(torn, random_tear_probability_one_tears_every_multi_sector_write)
{
	t_random_tear_probability_one_tears_every_multi_sector_write_4k();
	t_random_tear_probability_one_tears_every_multi_sector_write_512();
}
