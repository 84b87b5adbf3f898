/*
 * test_durability.c - a write is durable only after a flush on its disk or when
 * written with SIM_FUA; reads see the cache; epochs count flushes.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define SS 4096u
#define DISK (UINT64_C(16) << 20)

static const struct sim_crash_spec crash_none = { .policy = SIM_CRASH_NONE };
static const struct sim_crash_spec crash_all = { .policy = SIM_CRASH_ALL };

Test(durability, write_is_read_at_once_but_durable_only_after_flush)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	tu_write_ok(vol, 0, 3 * SS, 2 * SS, 11, 0);
	cr_assert(tu_read_is(vol, 0, 3 * SS, 2 * SS, 11), "a read sees the cached write");
	cr_assert(tu_durable_is(vol, 0, 3 * SS, 2 * SS, 0), "not durable before a flush");
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(p[0].sector, 3);
	cr_assert_eq(p[0].nsectors, 2);
	cr_assert_not(p[0].discard);

	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 3 * SS, 2 * SS, 11), "durable after the flush");
	cr_assert_null(sim_disk_pending(vol, 0, &n));
	cr_assert_eq(n, 0);

	/* Overwriting durable data: the old content stays durable until the next flush. */
	tu_write_ok(vol, 0, 3 * SS, 2 * SS, 12, 0);
	cr_assert(tu_read_is(vol, 0, 3 * SS, 2 * SS, 12));
	cr_assert(tu_durable_is(vol, 0, 3 * SS, 2 * SS, 11));
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 3 * SS, 2 * SS, 12));
	sim_volume_close(vol);
}

Test(durability, partial_overlap_read_merges_cache_and_media)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	tu_write_ok(vol, 0, 0, 4 * SS, 21, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	tu_write_ok(vol, 0, 1 * SS, SS, 22, 0);
	uint8_t *got = tu_get(vol, 0, 0, 4 * SS);
	uint8_t *old = tu_pat(4 * SS, 21), *new1 = tu_pat(SS, 22);
	cr_assert_eq(memcmp(got, old, SS), 0);
	cr_assert_eq(memcmp(got + SS, new1, SS), 0);
	cr_assert_eq(memcmp(got + 2 * SS, old + 2 * SS, 2 * SS), 0);
	free(got);
	free(old);
	free(new1);
	sim_volume_close(vol);
}

Test(durability, flush_of_another_disk_does_not_persist)
{
	sim_volume *vol = tu_open(2, DISK, SS, 2);
	tu_write_ok(vol, 0, 8 * SS, SS, 31, 0);
	tu_write_ok(vol, 1, 8 * SS, SS, 32, 0);
	cr_assert_eq(sim_flush(vol, 1), 0);
	cr_assert(tu_durable_is(vol, 0, 8 * SS, SS, 0), "disk 0 was not flushed");
	cr_assert(tu_durable_is(vol, 1, 8 * SS, SS, 32));
	size_t n0, n1;
	sim_disk_pending(vol, 0, &n0);
	sim_disk_pending(vol, 1, &n1);
	cr_assert_eq(n0, 1);
	cr_assert_eq(n1, 0);
	cr_assert_eq(sim_disk_epoch(vol, 0), 0);
	cr_assert_eq(sim_disk_epoch(vol, 1), 1);

	/* A crash of disk 0 loses its write; disk 1 keeps its own. */
	cr_assert_eq(sim_volume_crash(vol, &crash_none, NULL), 0);
	cr_assert(tu_read_is(vol, 0, 8 * SS, SS, 0));
	cr_assert(tu_read_is(vol, 1, 8 * SS, SS, 32));
	sim_volume_close(vol);
}

Test(durability, fua_write_is_durable_at_once_and_flushes_nothing_else)
{
	sim_volume *vol = tu_open(1, DISK, SS, 3);
	tu_write_ok(vol, 0, 0, SS, 41, 0); /* volatile */
	tu_write_ok(vol, 0, 5 * SS, 3 * SS, 42, SIM_FUA);
	cr_assert(tu_durable_is(vol, 0, 5 * SS, 3 * SS, 42), "FUA data is durable at once");
	cr_assert(tu_read_is(vol, 0, 5 * SS, 3 * SS, 42));
	cr_assert(tu_durable_is(vol, 0, 0, SS, 0), "FUA is not a flush");
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 1, "only the volatile write is pending");
	cr_assert_eq(p[0].sector, 0);
	cr_assert_eq(sim_disk_epoch(vol, 0), 0, "FUA does not count as a flush");
	const struct sim_io *io = tu_log_last(vol, SIM_IO_WRITE_FUA);
	cr_assert_not_null(io);
	cr_assert_eq(io->sector, 5);
	cr_assert_eq(io->nsectors, 3);
	sim_volume_close(vol);
}

Test(durability, crash_none_drops_unflushed_keeps_flushed_and_fua)
{
	sim_volume *vol = tu_open(1, DISK, SS, 4);
	tu_write_ok(vol, 0, 0, SS, 51, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	tu_write_ok(vol, 0, 1 * SS, SS, 52, SIM_FUA);
	tu_write_ok(vol, 0, 2 * SS, SS, 53, 0);
	tu_write_ok(vol, 0, 0, SS, 54, 0); /* overwrites the flushed sector 0 */
	cr_assert(tu_read_is(vol, 0, 0, SS, 54));

	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &crash_none, &res), 0);
	cr_assert_eq(res.pending, 2);
	cr_assert_eq(res.persisted, 0);
	cr_assert_eq(res.torn, 0);
	cr_assert_eq(res.sectors_persisted, 0);
	/* After the crash the disk serves its media: reads and durable agree. */
	cr_assert(tu_read_is(vol, 0, 0, SS, 51), "flushed data survives");
	cr_assert(tu_read_is(vol, 0, 1 * SS, SS, 52), "FUA data survives");
	cr_assert(tu_read_is(vol, 0, 2 * SS, SS, 0), "unflushed data is lost");
	cr_assert(tu_durable_is(vol, 0, 0, SS, 51));
	cr_assert(tu_durable_is(vol, 0, 2 * SS, SS, 0));
	size_t n;
	cr_assert_null(sim_disk_pending(vol, 0, &n));
	cr_assert_eq(n, 0);
	sim_volume_close(vol);
}

/* A volatile write over sectors 0-3, then a FUA write of sectors 1-2. */
static sim_volume *fua_over_volatile(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 5);
	tu_write_ok(vol, 0, 0, 4 * SS, 61, 0);
	tu_write_ok(vol, 0, 1 * SS, 2 * SS, 62, SIM_FUA);
	cr_assert(tu_read_is(vol, 0, 1 * SS, 2 * SS, 62), "reads see the FUA data");
	cr_assert(tu_durable_slice_is(vol, 0, 1 * SS, 2 * SS, 62, 1 * SS, 2 * SS));
	return vol;
}

static void expect_fua_kept(sim_volume *vol)
{
	cr_assert(tu_durable_slice_is(vol, 0, 0, 4 * SS, 61, 0, SS));
	cr_assert(tu_durable_slice_is(vol, 0, 1 * SS, 2 * SS, 62, 1 * SS, 2 * SS),
		  "the older volatile write must not undo the FUA write");
	cr_assert(tu_durable_slice_is(vol, 0, 0, 4 * SS, 61, 3 * SS, SS));
	uint8_t *got = tu_get(vol, 0, 0, 4 * SS);
	uint8_t *want = tu_pat(4 * SS, 61), *fua = tu_pat(2 * SS, 62);
	memcpy(want + SS, fua, 2 * SS);
	cr_assert_eq(memcmp(got, want, 4 * SS), 0);
	free(got);
	free(want);
	free(fua);
}

static void t_fua_not_undone_by_crash_all(void)
{
	sim_volume *vol = fua_over_volatile();
	struct sim_crash_result res;
	cr_assert_eq(sim_disk_crash(vol, 0, &crash_all, &res), 0);
	cr_assert_eq(res.pending, 1);
	cr_assert_eq(res.persisted, 1);
	expect_fua_kept(vol);
	sim_volume_close(vol);
}

static void t_fua_not_undone_by_flush(void)
{
	sim_volume *vol = fua_over_volatile();
	cr_assert_eq(sim_flush(vol, 0), 0);
	expect_fua_kept(vol);
	sim_volume_close(vol);
}

static void t_fua_not_undone_by_explicit_or_random_crash(void)
{
	sim_volume *vol = fua_over_volatile();
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 1);
	struct sim_crash_pick pick = { .seq = p[0].seq };
	struct sim_crash_spec ex = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	cr_assert_eq(sim_disk_crash(vol, 0, &ex, NULL), 0);
	expect_fua_kept(vol);
	struct sim_crash_spec rnd = { .policy = SIM_CRASH_RANDOM, .keep_probability = 1.0 };
	cr_assert_eq(sim_disk_crash(c, 0, &rnd, NULL), 0);
	expect_fua_kept(c);
	sim_volume_close(c);
	sim_volume_close(vol);
}

static void t_later_volatile_write_over_fua_still_persists(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 6);
	tu_write_ok(vol, 0, 0, SS, 71, 0);
	tu_write_ok(vol, 0, 0, SS, 72, SIM_FUA);
	tu_write_ok(vol, 0, 0, SS, 73, 0);
	cr_assert(tu_read_is(vol, 0, 0, SS, 73));
	cr_assert(tu_durable_is(vol, 0, 0, SS, 72));
	cr_assert_eq(sim_disk_crash(vol, 0, &crash_all, NULL), 0);
	cr_assert(tu_durable_is(vol, 0, 0, SS, 73), "the newest write wins");
	sim_volume_close(vol);
}

Test(durability, writes_persist_in_submission_order)
{
	sim_volume *vol = tu_open(1, DISK, SS, 7);
	for (uint64_t t = 1; t <= 5; t++)
		tu_write_ok(vol, 0, 9 * SS, SS, 80 + t, 0);
	cr_assert(tu_read_is(vol, 0, 9 * SS, SS, 85));
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 9 * SS, SS, 85));
	cr_assert_eq(sim_disk_crash(c, 0, &crash_all, NULL), 0);
	cr_assert(tu_durable_is(c, 0, 9 * SS, SS, 85));
	sim_volume_close(c);
	sim_volume_close(vol);
}

Test(durability, discard_reads_zero_and_is_volatile)
{
	sim_volume *vol = tu_open(1, DISK, SS, 8);
	tu_write_ok(vol, 0, 0, 4 * SS, 91, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert_eq(sim_discard(vol, 0, SS, 2 * SS), 0);
	cr_assert(tu_read_is(vol, 0, SS, 2 * SS, 0), "discarded sectors read as zeros");
	cr_assert(tu_durable_slice_is(vol, 0, 0, 4 * SS, 91, SS, 2 * SS), "not yet durable");
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 1);
	cr_assert(p[0].discard);
	cr_assert_eq(p[0].sector, 1);
	cr_assert_eq(p[0].nsectors, 2);

	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	cr_assert_eq(sim_disk_crash(c, 0, &crash_none, NULL), 0);
	cr_assert(tu_read_is(c, 0, 0, 4 * SS, 91), "a crash brings the discarded data back");
	sim_volume_close(c);

	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, SS, 2 * SS, 0));
	cr_assert(tu_durable_slice_is(vol, 0, 0, 4 * SS, 91, 0, SS));
	cr_assert(tu_durable_slice_is(vol, 0, 0, 4 * SS, 91, 3 * SS, SS));
	sim_volume_close(vol);
}

Test(durability, epoch_counts_flushes_per_disk_and_is_logged)
{
	sim_volume *vol = tu_open(2, DISK, SS, 9);
	cr_assert_eq(sim_disk_epoch(vol, 0), 0);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert_eq(sim_flush(vol, 1), 0);
	cr_assert_eq(sim_disk_epoch(vol, 0), 2);
	cr_assert_eq(sim_disk_epoch(vol, 1), 1);
	tu_write_ok(vol, 0, SS, SS, 2, 0);
	tu_write_ok(vol, 1, SS, SS, 3, SIM_FUA);
	uint8_t buf[SS];
	cr_assert_eq(sim_read(vol, 0, 0, buf, SS), 0);

	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_eq(n, 7);
	const uint64_t want_epoch[7] = { 0, 0, 1, 0, 2, 1, 2 };
	const uint8_t want_kind[7] = { SIM_IO_WRITE, SIM_IO_FLUSH, SIM_IO_FLUSH, SIM_IO_FLUSH,
				       SIM_IO_WRITE, SIM_IO_WRITE_FUA, SIM_IO_READ };
	const uint16_t want_disk[7] = { 0, 0, 0, 1, 0, 1, 0 };
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(log[i].epoch, want_epoch[i], "entry %zu: epoch %llu", i,
			     (unsigned long long)log[i].epoch);
		cr_assert_eq(log[i].kind, want_kind[i], "entry %zu", i);
		cr_assert_eq(log[i].disk, want_disk[i], "entry %zu", i);
		cr_assert_eq(log[i].status, 0);
		if (i)
			cr_assert_eq(log[i].seq, log[i - 1].seq + 1, "seqs are consecutive");
	}

	/* A crash keeps the epoch. */
	cr_assert_eq(sim_disk_crash(vol, 0, &crash_none, NULL), 0);
	cr_assert_eq(sim_disk_epoch(vol, 0), 2);
	const struct sim_io *c = tu_log_last(vol, SIM_IO_CRASH);
	cr_assert_not_null(c);
	cr_assert_eq(c->epoch, 2);
	sim_volume_close(vol);
}

Test(durability, stats_count_requests_and_pending)
{
	sim_volume *vol = tu_open(1, DISK, SS, 10);
	tu_write_ok(vol, 0, 0, 2 * SS, 1, 0);
	tu_write_ok(vol, 0, 4 * SS, SS, 2, SIM_FUA);
	cr_assert_eq(sim_discard(vol, 0, 8 * SS, SS), 0);
	uint8_t buf[2 * SS];
	cr_assert_eq(sim_read(vol, 0, 0, buf, sizeof(buf)), 0);
	struct sim_disk_stats st;
	cr_assert_eq(sim_disk_stats(vol, 0, &st), 0);
	cr_assert_eq(st.writes, 2);
	cr_assert_eq(st.fua_writes, 1);
	cr_assert_eq(st.discards, 1);
	cr_assert_eq(st.reads, 1);
	cr_assert_eq(st.bytes_written, 3 * SS);
	cr_assert_eq(st.bytes_read, 2 * SS);
	cr_assert_eq(st.pending_writes, 2);
	cr_assert_eq(st.durable_bytes, SS, "only the FUA sector is durable");
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert_eq(sim_disk_stats(vol, 0, &st), 0);
	cr_assert_eq(st.flushes, 1);
	cr_assert_eq(st.pending_writes, 0);
	cr_assert_eq(st.durable_bytes, 3 * SS);
	sim_volume_close(vol);
}

Test(durability, fua_write_is_never_undone)
{
	t_fua_not_undone_by_crash_all();
	t_fua_not_undone_by_flush();
	t_fua_not_undone_by_explicit_or_random_crash();
	t_later_volatile_write_over_fua_still_persists();
}
