/*
 * test_rng.c - the one random number generator of sim/: reference outputs of
 * splitmix64 and xoshiro256**, reproducibility, bounds and probabilities.
 */
#include "sim/rng.h"

#include <criterion/criterion.h>
#include <string.h>

static void t_splitmix64_reference(void)
{
	/* The first outputs of splitmix64 seeded with 0, then with 1. */
	cr_assert_eq(sim_mix64(0), UINT64_C(0xe220a8397b1dcdaf));
	cr_assert_eq(sim_mix64(1), UINT64_C(0x910a2dec89025cc1));
}

static void t_xoshiro256starstar_reference(void)
{
	/* Reference outputs of xoshiro256** from the state {1, 2, 3, 4}. */
	struct sim_rng r = { { 1, 2, 3, 4 } };
	const uint64_t want[] = { 11520, 0, 1509978240, UINT64_C(1215971899390074240),
				  UINT64_C(1216172134540287360), UINT64_C(607988272756665600) };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_eq(sim_rng_next(&r), want[i], "output %zu", i);
}

Test(rng, a_seed_reproduces_its_sequence)
{
	struct sim_rng a, b, c;
	sim_rng_seed(&a, 42);
	sim_rng_seed(&b, 42);
	sim_rng_seed(&c, 43);
	int same_c = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = sim_rng_next(&a);
		cr_assert_eq(x, sim_rng_next(&b));
		same_c += x == sim_rng_next(&c);
	}
	cr_assert_eq(same_c, 0, "another seed, another sequence");
	/* Seeding derives the state from the seed alone. */
	struct sim_rng z;
	sim_rng_seed(&z, 0);
	cr_assert(z.s[0] | z.s[1] | z.s[2] | z.s[3], "never the all-zero state");
	cr_assert_eq(z.s[0], sim_mix64(0));
	cr_assert_eq(z.s[1], sim_mix64(sim_mix64(0)));
}

static void t_below_stays_in_bounds_and_covers_them(void)
{
	struct sim_rng r;
	sim_rng_seed(&r, 7);
	cr_assert_eq(sim_rng_below(&r, 0), 0);
	cr_assert_eq(sim_rng_below(&r, 1), 0);
	unsigned hist[7] = { 0 };
	for (int i = 0; i < 7000; i++) {
		uint64_t x = sim_rng_below(&r, 7);
		cr_assert(x < 7);
		hist[x]++;
	}
	for (int v = 0; v < 7; v++)
		cr_assert(hist[v] > 800 && hist[v] < 1200, "value %d: %u of 7000", v, hist[v]);
	/* A bound just over half the range: rejection keeps it exact. */
	const uint64_t big = (UINT64_MAX / 2) + 2;
	unsigned high = 0;
	for (int i = 0; i < 2000; i++) {
		uint64_t x = sim_rng_below(&r, big);
		cr_assert(x < big);
		high += x >= big / 2;
	}
	cr_assert(high > 850 && high < 1150, "%u of 2000 in the upper half", high);
	for (int i = 0; i < 1000; i++)
		cr_assert(sim_rng_below(&r, UINT64_MAX) < UINT64_MAX);
}

static void t_chance(void)
{
	struct sim_rng r, before;
	sim_rng_seed(&r, 9);
	before = r;
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(sim_rng_chance(&r, 0.0), 0);
		cr_assert_eq(sim_rng_chance(&r, -1.0), 0);
		cr_assert_eq(sim_rng_chance(&r, 1.0), 1);
		cr_assert_eq(sim_rng_chance(&r, 2.0), 1);
	}
	cr_assert_eq(memcmp(&r, &before, sizeof(r)), 0, "p <= 0 and p >= 1 draw nothing");
	unsigned hits = 0;
	for (int i = 0; i < 10000; i++)
		hits += (unsigned)sim_rng_chance(&r, 0.25);
	cr_assert(hits > 2200 && hits < 2800, "%u of 10000 at p = 0.25", hits);
	cr_assert_neq(memcmp(&r, &before, sizeof(r)), 0);
}

Test(rng, reference_outputs)
{
	t_splitmix64_reference();
	t_xoshiro256starstar_reference();
}

Test(rng, below_and_chance)
{
	t_below_stays_in_bounds_and_covers_them();
	t_chance();
}
