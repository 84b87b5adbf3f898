/*
 * test_clone.c - a clone is independent of its origin (durable media, cache,
 * volatile writes, faults), clones of clones, and thousands of cheap clones.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SS 4096u
#define DISK (UINT64_C(64) << 20)

static sim_volume *clone_of(sim_volume *vol)
{
	sim_volume *c = NULL;
	int r = sim_volume_clone(vol, &c);
	cr_assert_eq(r, 0, "clone: %d %s", r, sim_volume_error(vol));
	cr_assert_not_null(c);
	return c;
}

/* The origin's state: sector 0 durable (1), sector 1 volatile (2) over durable (3). */
static sim_volume *origin(void)
{
	sim_volume *vol = tu_open(2, DISK, SS, 42);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	tu_write_ok(vol, 0, SS, SS, 3, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	tu_write_ok(vol, 0, SS, SS, 2, 0);
	tu_write_ok(vol, 1, 0, SS, 4, 0);
	return vol;
}

static void expect_origin_state(sim_volume *vol)
{
	cr_assert(tu_read_is(vol, 0, 0, SS, 1));
	cr_assert(tu_durable_is(vol, 0, 0, SS, 1));
	cr_assert(tu_read_is(vol, 0, SS, SS, 2));
	cr_assert(tu_durable_is(vol, 0, SS, SS, 3));
	cr_assert(tu_read_is(vol, 1, 0, SS, 4));
	cr_assert(tu_durable_is(vol, 1, 0, SS, 0));
	cr_assert(tu_read_is(vol, 0, 2 * SS, SS, 0));
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(p[0].sector, 1);
	sim_disk_pending(vol, 1, &n);
	cr_assert_eq(n, 1);
}

static void t_clone_starts_identical(void)
{
	sim_volume *vol = origin();
	sim_volume *c = clone_of(vol);
	cr_assert_eq(sim_volume_next_seq(c), sim_volume_next_seq(vol), "seqs continue");
	size_t nlog;
	sim_volume_log(c, &nlog);
	cr_assert_eq(nlog, 0, "the clone's log starts empty");
	sim_volume_log(vol, &nlog);
	cr_assert_eq(nlog, 5, "the origin's log is its own");
	expect_origin_state(c);
	size_t n1, n2;
	const struct sim_pending *p1 = sim_disk_pending(vol, 0, &n1);
	const struct sim_pending *p2 = sim_disk_pending(c, 0, &n2);
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(p1, p2, n1 * sizeof(*p1)), 0, "same seqs and sectors");
	cr_assert_eq(sim_volume_ndisks(c), 2);
	cr_assert_eq(sim_volume_seed(c), 42);
	cr_assert_eq(sim_disk_epoch(c, 0), 1);
	for (unsigned d = 0; d < 2; d++)
		cr_assert_eq(sim_disk_durable_cmp(vol, d, c, d), 0);
	sim_volume_close(c);
	sim_volume_close(vol);
}

Test(clone, writes_flushes_and_crashes_on_the_clone_leave_the_origin)
{
	sim_volume *vol = origin();
	sim_volume *c = clone_of(vol);
	tu_write_ok(c, 0, 0, SS, 10, 0);        /* over durable data */
	tu_write_ok(c, 0, SS, SS, 11, SIM_FUA); /* over volatile data */
	tu_write_ok(c, 0, 2 * SS, SS, 12, 0);   /* new */
	cr_assert_eq(sim_discard(c, 1, 0, SS), 0);
	cr_assert_eq(sim_flush(c, 0), 0);
	cr_assert_eq(sim_disk_flip_bit(c, 0, 0, 3), 0);
	cr_assert_eq(sim_disk_add_latent(c, 1, 0, 1), 0);
	expect_origin_state(vol);
	uint8_t buf[SS];
	cr_assert_eq(sim_read(vol, 1, 0, buf, SS), 0, "the latent error is the clone's");
	cr_assert_eq(sim_disk_epoch(vol, 0), 1);

	struct sim_crash_spec all = { .policy = SIM_CRASH_ALL };
	cr_assert_eq(sim_volume_crash(c, &all, NULL), 0);
	expect_origin_state(vol);
	cr_assert_eq(sim_disk_lose(c, 1), 0);
	cr_assert_not(sim_disk_is_lost(vol, 1));
	expect_origin_state(vol);
	sim_volume_close(c);
	expect_origin_state(vol);
	sim_volume_close(vol);
}

Test(clone, writes_flushes_and_crashes_on_the_origin_leave_the_clone)
{
	sim_volume *vol = origin();
	sim_volume *c = clone_of(vol);
	tu_write_ok(vol, 0, 0, SS, 10, 0);
	tu_write_ok(vol, 0, SS, SS, 11, SIM_FUA);
	tu_write_ok(vol, 1, 0, SS, 13, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	expect_origin_state(c);
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	cr_assert_eq(sim_volume_crash(vol, &none, NULL), 0);
	expect_origin_state(c);
	cr_assert_eq(sim_disk_replace(vol, 0), 0);
	expect_origin_state(c);
	sim_volume_close(vol);
	expect_origin_state(c);
	/* The clone still crashes on its own pending writes. */
	struct sim_crash_spec all = { .policy = SIM_CRASH_ALL };
	cr_assert_eq(sim_volume_crash(c, &all, NULL), 0);
	cr_assert(tu_durable_is(c, 0, SS, SS, 2));
	cr_assert(tu_durable_is(c, 1, 0, SS, 4));
	sim_volume_close(c);
}

static void t_pending_picks_work_on_the_clone(void)
{
	sim_volume *vol = origin();
	sim_volume *c = clone_of(vol);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	struct sim_crash_pick pick = { .seq = p[0].seq };
	struct sim_crash_spec ex = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	cr_assert_eq(sim_disk_crash(c, 0, &ex, NULL), 0, "the clone knows the origin's seqs");
	cr_assert(tu_durable_is(c, 0, SS, SS, 2));
	expect_origin_state(vol);
	sim_volume_close(c);
	sim_volume_close(vol);
}

Test(clone, clone_of_a_clone)
{
	sim_volume *vol = origin();
	sim_volume *c1 = clone_of(vol);
	tu_write_ok(c1, 0, 5 * SS, SS, 20, 0);
	sim_volume *c2 = clone_of(c1);
	tu_write_ok(c2, 0, 5 * SS, SS, 21, 0);
	tu_write_ok(c2, 0, 0, SS, 22, SIM_FUA);
	cr_assert(tu_read_is(c1, 0, 5 * SS, SS, 20));
	cr_assert(tu_read_is(c2, 0, 5 * SS, SS, 21));
	cr_assert(tu_read_is(vol, 0, 5 * SS, SS, 0));
	cr_assert(tu_durable_is(c1, 0, 0, SS, 1));
	cr_assert(tu_durable_is(c2, 0, 0, SS, 22));
	size_t n0, n1, n2;
	sim_disk_pending(vol, 0, &n0);
	sim_disk_pending(c1, 0, &n1);
	sim_disk_pending(c2, 0, &n2);
	cr_assert_eq(n0, 1);
	cr_assert_eq(n1, 2);
	cr_assert_eq(n2, 3);
	sim_volume_close(c1); /* the middle one first */
	struct sim_crash_spec all = { .policy = SIM_CRASH_ALL };
	cr_assert_eq(sim_disk_crash(c2, 0, &all, NULL), 0);
	cr_assert(tu_durable_is(c2, 0, 5 * SS, SS, 21));
	cr_assert(tu_durable_is(c2, 0, SS, SS, 2));
	expect_origin_state(vol);
	sim_volume_close(c2);
	expect_origin_state(vol);
	sim_volume_close(vol);
}

Test(clone, a_chain_of_clones)
{
	sim_volume *v = tu_open(1, DISK, SS, 7);
	sim_volume *chain[50];
	for (unsigned i = 0; i < 50; i++) {
		tu_write_ok(v, 0, (uint64_t)i * SS, SS, 100 + i, i % 3 ? 0 : SIM_FUA);
		chain[i] = v;
		v = clone_of(v);
	}
	for (unsigned i = 0; i < 50; i++) {
		/* Volume i holds writes 0..i. */
		cr_assert(tu_read_is(chain[i], 0, (uint64_t)i * SS, SS, 100 + i));
		if (i + 1 < 50)
			cr_assert(tu_read_is(chain[i], 0, (uint64_t)(i + 1) * SS, SS, 0));
	}
	for (unsigned i = 0; i < 50; i += 2)
		sim_volume_close(chain[i]);
	for (unsigned i = 0; i < 50; i++)
		cr_assert(tu_read_is(v, 0, (uint64_t)i * SS, SS, 100 + i));
	for (unsigned i = 1; i < 50; i += 2)
		sim_volume_close(chain[i]);
	sim_volume_close(v);
}

Test(clone, the_clone_inherits_faults_and_random_streams)
{
	sim_volume *vol = tu_open(1, DISK, SS, 8);
	struct sim_fault f = { .kind = SIM_FAULT_FLAKY, .disk = SIM_ANY_DISK,
			       .sector = SIM_ANY_SECTOR, .probability = 0.5 };
	cr_assert_eq(sim_fault_add(vol, &f), 0);
	uint8_t buf[SS];
	for (int i = 0; i < 10; i++)
		sim_read(vol, 0, 0, buf, SS);
	sim_volume *c = clone_of(vol);
	int ra[64], rc[64];
	for (int i = 0; i < 64; i++) {
		ra[i] = sim_read(vol, 0, 0, buf, SS);
		rc[i] = sim_read(c, 0, 0, buf, SS);
	}
	cr_assert_eq(memcmp(ra, rc, sizeof(ra)), 0, "same faults, same stream, same outcomes");
	int fails = 0;
	for (int i = 0; i < 64; i++)
		fails += ra[i] == -EIO;
	cr_assert(fails > 0 && fails < 64);
	/* Clearing the clone's faults leaves the origin's. */
	sim_fault_clear(c);
	int origin_fails = 0;
	for (int i = 0; i < 32; i++) {
		cr_assert_eq(sim_read(c, 0, 0, buf, SS), 0);
		origin_fails += sim_read(vol, 0, 0, buf, SS) != 0;
	}
	cr_assert(origin_fails > 0);
	sim_volume_close(c);
	sim_volume_close(vol);

	/* Latent sector errors come along, and clearing them is per volume. */
	vol = tu_open(1, DISK, SS, 11);
	cr_assert_eq(sim_disk_add_latent(vol, 0, 4, 2), 0);
	c = clone_of(vol);
	cr_assert_eq(sim_read(c, 0, 4 * SS, buf, SS), -EIO);
	cr_assert_eq(sim_read(c, 0, 5 * SS, buf, SS), -EIO);
	cr_assert_eq(sim_read(c, 0, 6 * SS, buf, SS), 0);
	tu_write_ok(c, 0, 4 * SS, 2 * SS, 1, 0);
	cr_assert_eq(sim_read(c, 0, 4 * SS, buf, SS), 0);
	cr_assert_eq(sim_read(vol, 0, 4 * SS, buf, SS), -EIO, "the origin's stay");
	sim_volume_close(c);
	sim_volume_close(vol);
}

Test(clone, two_thousand_clones)
{
	/* An origin with durable data and volatile writes on two disks. */
	sim_volume *vol = tu_open(2, DISK, SS, 9);
	for (unsigned i = 0; i < 256; i++)
		tu_write_ok(vol, i % 2, (uint64_t)i * 4 * SS, 4 * SS, 1000 + i, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	for (unsigned i = 0; i < 64; i++)
		tu_write_ok(vol, 0, (uint64_t)(2000 + i) * SS, SS, 5000 + i, 0);
	uint64_t h0, h1;
	cr_assert_eq(sim_disk_durable_hash(vol, 0, &h0), 0);
	cr_assert_eq(sim_disk_durable_hash(vol, 1, &h1), 0);

	uint8_t *pat = tu_pat(SS, 77), *buf = malloc(SS);
	for (unsigned i = 0; i < 2000; i++) {
		sim_volume *c = clone_of(vol);
		uint64_t off = (uint64_t)(i % 1024) * 4 * SS;
		memcpy(pat, &i, sizeof(i));
		cr_assert_eq(sim_write(c, i % 2, off, pat, SS, i % 5 ? 0 : SIM_FUA), 0);
		cr_assert_eq(sim_read(c, i % 2, off, buf, SS), 0);
		cr_assert_eq(memcmp(buf, pat, SS), 0);
		if (i % 7 == 0) {
			struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM };
			cr_assert_eq(sim_volume_crash(c, &spec, NULL), 0);
		} else if (i % 7 == 1) {
			cr_assert_eq(sim_flush(c, 0), 0);
		}
		sim_volume_close(c);
		if (i % 100 == 0) {
			uint64_t g;
			cr_assert_eq(sim_disk_durable_hash(vol, 0, &g), 0);
			cr_assert_eq(g, h0, "clone %u changed the origin", i);
		}
	}
	uint64_t g0, g1;
	cr_assert_eq(sim_disk_durable_hash(vol, 0, &g0), 0);
	cr_assert_eq(sim_disk_durable_hash(vol, 1, &g1), 0);
	cr_assert_eq(g0, h0);
	cr_assert_eq(g1, h1);
	for (unsigned i = 0; i < 256; i++)
		cr_assert(tu_read_is(vol, i % 2, (uint64_t)i * 4 * SS, 4 * SS, 1000 + i));
	for (unsigned i = 0; i < 64; i++)
		cr_assert(tu_read_is(vol, 0, (uint64_t)(2000 + i) * SS, SS, 5000 + i));
	size_t n;
	sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 64);
	sim_disk_pending(vol, 1, &n);
	cr_assert_eq(n, 128, "disk 1 was never flushed");
	free(pat);
	free(buf);
	sim_volume_close(vol);
}

Test(clone, many_live_clones_at_once)
{
	sim_volume *vol = tu_open(1, DISK, SS, 10);
	for (unsigned i = 0; i < 128; i++)
		tu_write_ok(vol, 0, (uint64_t)i * SS, SS, 100 + i, i % 2 ? 0 : SIM_FUA);
	enum { N = 300 };
	sim_volume **c = calloc(N, sizeof(*c));
	for (unsigned i = 0; i < N; i++) {
		c[i] = clone_of(vol);
		tu_write_ok(c[i], 0, (uint64_t)(i % 128) * SS, SS, 10000 + i, 0);
	}
	for (unsigned i = 0; i < N; i++) {
		cr_assert(tu_read_is(c[i], 0, (uint64_t)(i % 128) * SS, SS, 10000 + i));
		unsigned other = (i + 1) % 128;
		cr_assert(tu_read_is(c[i], 0, (uint64_t)other * SS, SS, 100 + other));
	}
	for (unsigned i = 0; i < N; i++)
		sim_volume_close(c[i]);
	free(c);
	for (unsigned i = 0; i < 128; i++)
		cr_assert(tu_read_is(vol, 0, (uint64_t)i * SS, SS, 100 + i));
	sim_volume_close(vol);
}

Test(clone, clone_starts_identical_and_knows_the_pending_seqs)
{
	t_clone_starts_identical();
	t_pending_picks_work_on_the_clone();
}
