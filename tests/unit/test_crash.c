/*
 * test_crash.c - the crash policies NONE, ALL, RANDOM, PREFIX and EXPLICIT, on
 * one disk and on a whole volume, and the counts a crash reports.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#define SS 4096u
#define DISK (UINT64_C(16) << 20)

/* n single-sector volatile writes, write i at sector 2*i with tag base+i, over a
 * flushed background of zeros (sector 2*i+1 stays empty). */
static void write_many(sim_volume *vol, unsigned disk, unsigned n, uint64_t base)
{
	for (unsigned i = 0; i < n; i++)
		tu_write_ok(vol, disk, (uint64_t)2 * i * SS, SS, base + i, 0);
}

/* Which of the writes of write_many() are durable: 1 persisted, 0 not. */
static void durable_set(sim_volume *vol, unsigned disk, unsigned n, uint64_t base, uint8_t *kept)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = (uint64_t)2 * i * SS;
		if (tu_durable_is(vol, disk, off, SS, base + i))
			kept[i] = 1;
		else if (tu_durable_is(vol, disk, off, SS, 0))
			kept[i] = 0;
		else
			cr_assert_fail("disk %u write %u is neither old nor new", disk, i);
		cr_assert(tu_durable_is(vol, disk, off + SS, SS, 0), "nothing written next to it");
	}
}

static unsigned count_set(const uint8_t *kept, unsigned n)
{
	unsigned c = 0;
	for (unsigned i = 0; i < n; i++)
		c += kept[i];
	return c;
}

static void t_none_loses_every_volatile_write(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	write_many(vol, 0, 10, 100);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_NONE };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	uint8_t kept[10];
	durable_set(vol, 0, 10, 100, kept);
	cr_assert_eq(count_set(kept, 10), 0);
	cr_assert_eq(res.pending, 10);
	cr_assert_eq(res.persisted, 0);
	cr_assert(tu_read_is(vol, 0, 0, SS, 0), "the cache is gone too");
	sim_volume_close(vol);
}

static void t_all_keeps_every_volatile_write(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	write_many(vol, 0, 10, 100);
	tu_write_ok(vol, 0, 100 * SS, 4 * SS, 7, 0);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_ALL };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	uint8_t kept[10];
	durable_set(vol, 0, 10, 100, kept);
	cr_assert_eq(count_set(kept, 10), 10);
	cr_assert(tu_durable_is(vol, 0, 100 * SS, 4 * SS, 7));
	cr_assert_eq(res.pending, 11);
	cr_assert_eq(res.persisted, 11);
	cr_assert_eq(res.torn, 0);
	cr_assert_eq(res.sectors_persisted, 14);
	size_t n;
	cr_assert_null(sim_disk_pending(vol, 0, &n));
	sim_volume_close(vol);
}

Test(crash, crash_is_logged_with_its_counts)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	write_many(vol, 0, 6, 100);
	tu_write_ok(vol, 0, 100 * SS, 4 * SS, 7, 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 7);
	struct sim_crash_pick picks[] = {
		{ .seq = p[1].seq },
		{ .seq = p[6].seq, .first = 1, .count = 2 },
	};
	uint64_t next = sim_volume_next_seq(vol);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = picks, .npicks = 2 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	cr_assert_eq(res.pending, 7);
	cr_assert_eq(res.persisted, 2);
	cr_assert_eq(res.torn, 1);
	cr_assert_eq(res.sectors_persisted, 3);
	const struct sim_io *io = tu_log_last(vol, SIM_IO_CRASH);
	cr_assert_not_null(io);
	cr_assert_eq(io->seq, next);
	cr_assert_eq(io->sector, 2, "sector = writes persisted");
	cr_assert_eq(io->nsectors, 1, "nsectors = torn writes");
	cr_assert_eq(io->disk, 0);
	cr_assert_eq(sim_volume_next_seq(vol), next + 1);
	sim_volume_close(vol);
}

static void t_crash_of_a_disk_without_volatile_writes(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	tu_write_ok(vol, 0, 0, SS, 1, SIM_FUA);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_ALL };
	struct sim_crash_result res;
	memset(&res, 0xff, sizeof(res));
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	cr_assert_eq(res.pending, 0);
	cr_assert_eq(res.persisted, 0);
	cr_assert_eq(res.torn, 0);
	cr_assert_eq(res.sectors_persisted, 0);
	cr_assert(tu_read_is(vol, 0, 0, SS, 1));
	/* res may be NULL. */
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, NULL), 0);
	sim_volume_close(vol);
}

/* Crash a clone of vol with spec and return the clone. */
static sim_volume *crashed_clone(sim_volume *vol, const struct sim_crash_spec *spec,
				 struct sim_crash_result *res)
{
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	cr_assert_eq(sim_disk_crash(c, 0, spec, res), 0, "%s", sim_volume_error(c));
	return c;
}

static void t_random_with_probability_one_is_all(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 2);
	write_many(vol, 0, 40, 100);
	tu_write_ok(vol, 0, 200 * SS, 8 * SS, 9, 0);
	struct sim_crash_spec all = { .policy = SIM_CRASH_ALL };
	struct sim_crash_spec rnd = { .policy = SIM_CRASH_RANDOM, .keep_probability = 1.0 };
	struct sim_crash_result ra, rr;
	sim_volume *a = crashed_clone(vol, &all, &ra);
	sim_volume *r = crashed_clone(vol, &rnd, &rr);
	cr_assert_eq(sim_disk_durable_cmp(a, 0, r, 0), 0);
	cr_assert_eq(rr.persisted, 41);
	cr_assert_eq(rr.torn, 0, "tear_probability 0: nothing torn");
	cr_assert_eq(rr.sectors_persisted, 48);
	uint8_t kept[40];
	durable_set(r, 0, 40, 100, kept);
	cr_assert_eq(count_set(kept, 40), 40);
	sim_volume_close(a);
	sim_volume_close(r);
	sim_volume_close(vol);
}

static void t_random_with_tiny_probability_is_none(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 2);
	write_many(vol, 0, 40, 100);
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	struct sim_crash_spec rnd = { .policy = SIM_CRASH_RANDOM, .keep_probability = DBL_MIN,
				      .tear_probability = 1.0 };
	struct sim_crash_result rr;
	sim_volume *a = crashed_clone(vol, &none, NULL);
	sim_volume *r = crashed_clone(vol, &rnd, &rr);
	cr_assert_eq(sim_disk_durable_cmp(a, 0, r, 0), 0);
	cr_assert_eq(rr.pending, 40);
	cr_assert_eq(rr.persisted, 0);
	sim_volume_close(a);
	sim_volume_close(r);
	sim_volume_close(vol);
}

/* sim.h: "keep_probability: RANDOM; 0.5 when 0" - a zeroed spec keeps about half. */
static void t_random_with_probability_zero_means_the_default_half(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 3);
	write_many(vol, 0, 200, 1000);
	struct sim_crash_spec zero = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0 };
	struct sim_crash_spec half = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0.5 };
	struct sim_crash_result rz, rh;
	sim_volume *z = crashed_clone(vol, &zero, &rz);
	sim_volume *h = crashed_clone(vol, &half, &rh);
	cr_assert_eq(sim_disk_durable_cmp(z, 0, h, 0), 0, "same RNG state, same choice");
	cr_assert_eq(rz.persisted, rh.persisted);
	cr_assert(rz.persisted > 50 && rz.persisted < 150, "kept %zu of 200", rz.persisted);
	sim_volume_close(z);
	sim_volume_close(h);
	sim_volume_close(vol);
}

Test(crash, random_half_keeps_some_and_drops_some)
{
	sim_volume *vol = tu_open(1, DISK, SS, 4);
	write_many(vol, 0, 200, 1000);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0.5 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	uint8_t kept[200];
	durable_set(vol, 0, 200, 1000, kept);
	unsigned c = count_set(kept, 200);
	cr_assert(c > 50 && c < 150, "kept %u of 200", c);
	cr_assert_eq(res.pending, 200);
	cr_assert_eq(res.persisted, c);
	cr_assert_eq(res.sectors_persisted, c);
	cr_assert_eq(res.torn, 0);
	sim_volume_close(vol);
}

Test(crash, random_choices_differ_between_disks_and_seeds)
{
	/* Same writes on two disks and on a second volume with another seed. */
	sim_volume *a = tu_open(2, DISK, SS, 5), *b = tu_open(2, DISK, SS, 6);
	for (unsigned d = 0; d < 2; d++) {
		write_many(a, d, 64, 500);
		write_many(b, d, 64, 500);
	}
	struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0.5 };
	cr_assert_eq(sim_volume_crash(a, &spec, NULL), 0);
	cr_assert_eq(sim_volume_crash(b, &spec, NULL), 0);
	uint8_t a0[64], a1[64], b0[64];
	durable_set(a, 0, 64, 500, a0);
	durable_set(a, 1, 64, 500, a1);
	durable_set(b, 0, 64, 500, b0);
	cr_assert_neq(memcmp(a0, a1, 64), 0, "each disk draws from its own stream");
	cr_assert_neq(memcmp(a0, b0, 64), 0, "another seed, another choice");
	sim_volume_close(a);
	sim_volume_close(b);
}

Test(crash, prefix_keeps_the_first_n_in_submission_order)
{
	sim_volume *vol = tu_open(1, DISK, SS, 7);
	write_many(vol, 0, 10, 100);
	/* Submission order is not sector order: a later write lands before the others. */
	tu_write_ok(vol, 0, 0, SS, 555, 0);
	sim_volume *c0, *c4, *c11, *c99;
	struct sim_crash_result r0, r4, r11, r99;
	struct sim_crash_spec spec = { .policy = SIM_CRASH_PREFIX };
	spec.prefix_len = 0;
	c0 = crashed_clone(vol, &spec, &r0);
	spec.prefix_len = 4;
	c4 = crashed_clone(vol, &spec, &r4);
	spec.prefix_len = 11;
	c11 = crashed_clone(vol, &spec, &r11);
	spec.prefix_len = 99;
	c99 = crashed_clone(vol, &spec, &r99);

	uint8_t kept[10];
	durable_set(c0, 0, 10, 100, kept);
	cr_assert_eq(count_set(kept, 10), 0);
	cr_assert_eq(r0.persisted, 0);

	/* c4: writes 0..3 (sector 0 holds write 0, not the later 555). */
	cr_assert(tu_durable_is(c4, 0, 0, SS, 100));
	for (unsigned i = 1; i < 10; i++)
		cr_assert(tu_durable_is(c4, 0, (uint64_t)2 * i * SS, SS, i < 4 ? 100 + i : 0),
			  "write %u", i);
	cr_assert_eq(r4.persisted, 4);
	cr_assert_eq(r4.pending, 11);

	cr_assert(tu_durable_is(c11, 0, 0, SS, 555), "the last write wins");
	cr_assert_eq(r11.persisted, 11);
	cr_assert_eq(sim_disk_durable_cmp(c11, 0, c99, 0), 0, "a prefix past the end is all");
	cr_assert_eq(r99.persisted, 11);

	sim_volume_close(c0);
	sim_volume_close(c4);
	sim_volume_close(c11);
	sim_volume_close(c99);
	sim_volume_close(vol);
}

static void t_explicit_keeps_exactly_the_picks(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 8);
	write_many(vol, 0, 5, 100);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 5);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(p[i].sector, 2 * i);
		cr_assert_eq(p[i].nsectors, 1);
		if (i)
			cr_assert(p[i].seq > p[i - 1].seq, "pending is in submission order");
	}
	/* Picks in any order: they persist in submission order all the same. */
	struct sim_crash_pick picks[] = { { .seq = p[3].seq }, { .seq = p[1].seq } };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = picks, .npicks = 2 };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	uint8_t kept[5];
	durable_set(vol, 0, 5, 100, kept);
	const uint8_t want[5] = { 0, 1, 0, 1, 0 };
	cr_assert_eq(memcmp(kept, want, 5), 0);
	cr_assert_eq(res.persisted, 2);
	cr_assert_eq(res.sectors_persisted, 2);
	sim_volume_close(vol);
}

static void t_explicit_no_picks_is_none(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 8);
	write_many(vol, 0, 5, 100);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT };
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, &res), 0);
	uint8_t kept[5];
	durable_set(vol, 0, 5, 100, kept);
	cr_assert_eq(count_set(kept, 5), 0);
	cr_assert_eq(res.persisted, 0);
	sim_volume_close(vol);
}

static void t_explicit_unknown_seq_changes_nothing(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 9);
	write_many(vol, 0, 5, 200);
	uint64_t flush_seq = sim_volume_next_seq(vol);
	cr_assert_eq(sim_flush(vol, 0), 0);
	write_many(vol, 0, 5, 300);
	size_t n, m;
	struct sim_pending *before = tu_pending_copy(vol, 0, &n);
	cr_assert_eq(n, 5);
	/* A made-up seq, a flush's seq, the seq of a write already flushed. */
	const uint64_t unknown[] = { 999999, flush_seq, flush_seq - 5 };
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		struct sim_crash_pick picks[] = { { .seq = before[0].seq }, { .seq = unknown[i] } };
		struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = picks,
					       .npicks = 2 };
		cr_assert_eq(sim_disk_crash(vol, 0, &spec, NULL), -EINVAL, "seq %llu",
			     (unsigned long long)unknown[i]);
		cr_assert_neq(sim_volume_error(vol)[0], '\0');
		cr_assert_eq(sim_volume_crash(vol, &spec, NULL), -EINVAL);
		cr_assert_neq(sim_volume_error(vol)[0], '\0');
		const struct sim_pending *after = sim_disk_pending(vol, 0, &m);
		cr_assert_eq(m, n, "nothing was dropped");
		cr_assert_eq(memcmp(after, before, n * sizeof(*after)), 0);
	}
	for (unsigned i = 0; i < 5; i++) {
		cr_assert(tu_read_is(vol, 0, (uint64_t)2 * i * SS, SS, 300 + i), "cache intact");
		cr_assert(tu_durable_is(vol, 0, (uint64_t)2 * i * SS, SS, 200 + i),
			  "media untouched");
	}
	free(before);
	sim_volume_close(vol);
}

static void t_explicit_unknown_seq_leaves_log_and_seq_alone(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 9);
	write_many(vol, 0, 3, 100);
	size_t nlog_before, nlog_after;
	sim_volume_log(vol, &nlog_before);
	uint64_t next = sim_volume_next_seq(vol);
	struct sim_crash_pick pick = { .seq = next + 100 };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, NULL), -EINVAL);
	sim_volume_log(vol, &nlog_after);
	cr_assert_eq(nlog_after, nlog_before, "no crash entry for a rejected crash");
	cr_assert_eq(sim_volume_next_seq(vol), next);
	size_t n;
	sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 3);
	sim_volume_close(vol);
}

Test(crash, explicit_pick_out_of_range_is_einval)
{
	sim_volume *vol = tu_open(1, DISK, SS, 10);
	tu_write_ok(vol, 0, 0, 4 * SS, 1, 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	uint64_t seq = p[0].seq;
	const struct sim_crash_pick bad[] = {
		{ .seq = seq, .first = 4 },
		{ .seq = seq, .first = 2, .count = 3 },
		{ .seq = seq, .first = 0, .count = 5 },
		{ .seq = seq, .first = UINT32_MAX, .count = 2 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = &bad[i],
					       .npicks = 1 };
		cr_assert_eq(sim_disk_crash(vol, 0, &spec, NULL), -EINVAL, "pick %zu", i);
		sim_disk_pending(vol, 0, &n);
		cr_assert_eq(n, 1);
		cr_assert(tu_durable_is(vol, 0, 0, 4 * SS, 0));
	}
	sim_volume_close(vol);
}

Test(crash, volume_crash_treats_each_disk_independently)
{
	sim_volume *vol = tu_open(3, DISK, SS, 11);
	for (unsigned d = 0; d < 3; d++)
		write_many(vol, d, 4, 100 * (d + 1));
	tu_write_ok(vol, 1, 50 * SS, SS, 77, SIM_FUA);
	size_t n0, n2;
	struct sim_pending *p0 = tu_pending_copy(vol, 0, &n0);
	struct sim_pending *p2 = tu_pending_copy(vol, 2, &n2);
	/* Picks of disks 0 and 2 only: disk 1 keeps nothing but its FUA write. */
	struct sim_crash_pick picks[] = { { .seq = p2[3].seq }, { .seq = p0[0].seq },
					  { .seq = p0[2].seq } };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = picks, .npicks = 3 };
	struct sim_crash_result res[3];
	cr_assert_eq(sim_volume_crash(vol, &spec, res), 0, "%s", sim_volume_error(vol));
	uint8_t k0[4], k1[4], k2[4];
	durable_set(vol, 0, 4, 100, k0);
	durable_set(vol, 1, 4, 200, k1);
	durable_set(vol, 2, 4, 300, k2);
	const uint8_t w0[4] = { 1, 0, 1, 0 }, w1[4] = { 0 }, w2[4] = { 0, 0, 0, 1 };
	cr_assert_eq(memcmp(k0, w0, 4), 0);
	cr_assert_eq(memcmp(k1, w1, 4), 0);
	cr_assert_eq(memcmp(k2, w2, 4), 0);
	cr_assert(tu_durable_is(vol, 1, 50 * SS, SS, 77));
	cr_assert_eq(res[0].persisted, 2);
	cr_assert_eq(res[1].persisted, 0);
	cr_assert_eq(res[2].persisted, 1);
	for (unsigned d = 0; d < 3; d++) {
		cr_assert_eq(res[d].pending, 4);
		size_t n;
		sim_disk_pending(vol, d, &n);
		cr_assert_eq(n, 0);
	}
	cr_assert_eq(tu_log_count(vol, SIM_IO_CRASH), 3, "one crash entry per disk");
	free(p0);
	free(p2);
	sim_volume_close(vol);
}

Test(crash, volume_crash_bad_pick_crashes_no_disk)
{
	sim_volume *vol = tu_open(3, DISK, SS, 12);
	for (unsigned d = 0; d < 3; d++)
		write_many(vol, d, 2, 100 * (d + 1));
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	struct sim_crash_pick picks[] = { { .seq = p[0].seq }, { .seq = 424242 } };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = picks, .npicks = 2 };
	cr_assert_eq(sim_volume_crash(vol, &spec, NULL), -EINVAL);
	/* A known seq of the last disk with sectors out of range: no disk crashes either. */
	struct sim_pending *p2 = tu_pending_copy(vol, 2, &n);
	picks[1] = (struct sim_crash_pick){ .seq = p2[0].seq, .first = 1 };
	cr_assert_eq(sim_volume_crash(vol, &spec, NULL), -EINVAL);
	cr_assert_neq(sim_volume_error(vol)[0], '\0');
	picks[1] = (struct sim_crash_pick){ .seq = p2[0].seq, .first = 0, .count = 2 };
	cr_assert_eq(sim_volume_crash(vol, &spec, NULL), -EINVAL);
	free(p2);
	for (unsigned d = 0; d < 3; d++) {
		sim_disk_pending(vol, d, &n);
		cr_assert_eq(n, 2, "disk %u still has its volatile writes", d);
		cr_assert(tu_read_is(vol, d, 0, SS, 100 * (d + 1)));
	}
	cr_assert_eq(tu_log_count(vol, SIM_IO_CRASH), 0);
	sim_volume_close(vol);
}

Test(crash, volume_crash_all_and_none_on_every_disk)
{
	sim_volume *vol = tu_open(4, DISK, SS, 13);
	for (unsigned d = 0; d < 4; d++)
		write_many(vol, d, 3, 10 * (d + 1));
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	struct sim_crash_spec all = { .policy = SIM_CRASH_ALL };
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	struct sim_crash_result ra[4], rn[4];
	cr_assert_eq(sim_volume_crash(vol, &all, ra), 0);
	cr_assert_eq(sim_volume_crash(c, &none, rn), 0);
	for (unsigned d = 0; d < 4; d++) {
		uint8_t k[3];
		durable_set(vol, d, 3, 10 * (d + 1), k);
		cr_assert_eq(count_set(k, 3), 3);
		durable_set(c, d, 3, 10 * (d + 1), k);
		cr_assert_eq(count_set(k, 3), 0);
		cr_assert_eq(ra[d].persisted, 3);
		cr_assert_eq(rn[d].persisted, 0);
		cr_assert_eq(rn[d].pending, 3);
	}
	sim_volume_close(c);
	sim_volume_close(vol);
}

static void t_disk_keeps_working_after_a_crash(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 14);
	write_many(vol, 0, 3, 100);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_NONE };
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, NULL), 0);
	tu_write_ok(vol, 0, 0, SS, 9, 0);
	cr_assert(tu_read_is(vol, 0, 0, SS, 9));
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 0, SS, 9));
	sim_volume_close(vol);
}

Test(crash, none_and_all)
{
	t_none_loses_every_volatile_write();
	t_all_keeps_every_volatile_write();
}

Test(crash, random_extreme_probabilities)
{
	t_random_with_probability_one_is_all();
	t_random_with_tiny_probability_is_none();
	t_random_with_probability_zero_means_the_default_half();
}

Test(crash, explicit_keeps_exactly_the_picks_or_none)
{
	t_explicit_keeps_exactly_the_picks();
	t_explicit_no_picks_is_none();
}

Test(crash, explicit_unknown_seq_is_einval_and_changes_nothing)
{
	t_explicit_unknown_seq_changes_nothing();
	t_explicit_unknown_seq_leaves_log_and_seq_alone();
}

Test(crash, no_volatile_writes_and_after_a_crash)
{
	t_crash_of_a_disk_without_volatile_writes();
	t_disk_keeps_working_after_a_crash();
}
