/*
 * test_loss.c - device loss and replacement: a lost disk fails every request,
 * a replacement is a blank working disk of the same geometry, and the other
 * disks never notice.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DISK (UINT64_C(8) << 20)

/* Every request kind on the disk fails with EIO and leaves a message. */
static void expect_all_fail(sim_volume *vol, unsigned disk, uint32_t ss)
{
	uint8_t *buf = calloc(1, ss);
	cr_assert_eq(sim_read(vol, disk, 0, buf, ss), -EIO);
	cr_assert(strstr(sim_volume_error(vol), "lost"), "%s", sim_volume_error(vol));
	cr_assert_eq(sim_write(vol, disk, 0, buf, ss, 0), -EIO);
	cr_assert_eq(sim_write(vol, disk, 0, buf, ss, SIM_FUA), -EIO);
	cr_assert_eq(sim_flush(vol, disk), -EIO);
	cr_assert_eq(sim_discard(vol, disk, 0, ss), -EIO);
	free(buf);
}

Test(loss, lose_then_replace)
{
	sim_volume *vol = tu_open(3, DISK, 4096, 1);
	for (unsigned d = 0; d < 3; d++) {
		tu_write_ok(vol, d, 0, 4 * 4096, 10 + d, 0);
		cr_assert_eq(sim_flush(vol, d), 0);
		tu_write_ok(vol, d, 100 * 4096, 4096, 20 + d, 0); /* volatile */
	}
	cr_assert_eq(sim_disk_add_latent(vol, 1, 50, 2), 0);
	uint64_t epoch = sim_disk_epoch(vol, 1);

	cr_assert_eq(sim_disk_lose(vol, 1), 0);
	cr_assert(sim_disk_is_lost(vol, 1));
	cr_assert_not(sim_disk_is_lost(vol, 0));
	cr_assert_not(sim_disk_is_lost(vol, 2));
	size_t n;
	cr_assert_null(sim_disk_pending(vol, 1, &n));
	cr_assert_eq(n, 0, "its volatile writes are gone");
	const struct sim_io *f = tu_log_last(vol, SIM_IO_FAULT);
	cr_assert_not_null(f);
	cr_assert_eq(f->fault, SIM_FAULT_DEVICE_LOSS);
	cr_assert_eq(f->disk, 1);
	expect_all_fail(vol, 1, 4096);
	/* Losing it again changes nothing and logs nothing. */
	size_t nlog, nlog2;
	sim_volume_log(vol, &nlog);
	cr_assert_eq(sim_disk_lose(vol, 1), 0);
	sim_volume_log(vol, &nlog2);
	cr_assert_eq(nlog2, nlog);

	cr_assert_eq(sim_disk_replace(vol, 1), 0);
	cr_assert_not(sim_disk_is_lost(vol, 1));
	cr_assert_eq(sim_disk_size(vol, 1), DISK);
	cr_assert_eq(sim_disk_sector_size(vol, 1), 4096);
	cr_assert_eq(sim_disk_epoch(vol, 1), epoch);
	const struct sim_io *rep = tu_log_last(vol, SIM_IO_REPLACE);
	cr_assert_not_null(rep);
	cr_assert_eq(rep->disk, 1);

	/* Blank: the old data, durable or not, is gone; no latent errors remain. */
	cr_assert(tu_read_is(vol, 1, 0, 4 * 4096, 0));
	cr_assert(tu_durable_is(vol, 1, 0, 4 * 4096, 0));
	cr_assert(tu_read_is(vol, 1, 100 * 4096, 4096, 0));
	cr_assert(tu_read_is(vol, 1, 50 * 4096, 2 * 4096, 0));
	sim_volume *blank = tu_open(1, DISK, 4096, 99);
	cr_assert_eq(sim_disk_durable_cmp(vol, 1, blank, 0), 0);
	uint64_t h1, h2;
	cr_assert_eq(sim_disk_durable_hash(vol, 1, &h1), 0);
	cr_assert_eq(sim_disk_durable_hash(blank, 0, &h2), 0);
	cr_assert_eq(h1, h2);
	struct sim_disk_stats st;
	cr_assert_eq(sim_disk_stats(vol, 1, &st), 0);
	cr_assert_eq(st.durable_bytes, 0);
	sim_volume_close(blank);

	/* And it works. */
	tu_write_ok(vol, 1, 8 * 4096, 4096, 30, 0);
	cr_assert(tu_read_is(vol, 1, 8 * 4096, 4096, 30));
	cr_assert_eq(sim_flush(vol, 1), 0);
	cr_assert(tu_durable_is(vol, 1, 8 * 4096, 4096, 30));
	cr_assert_eq(sim_discard(vol, 1, 8 * 4096, 4096), 0);
	cr_assert(tu_read_is(vol, 1, 8 * 4096, 4096, 0));

	/* The other disks kept everything, volatile writes included. */
	for (unsigned d = 0; d < 3; d += 2) {
		cr_assert(tu_durable_is(vol, d, 0, 4 * 4096, 10 + d));
		cr_assert(tu_read_is(vol, d, 100 * 4096, 4096, 20 + d));
		sim_disk_pending(vol, d, &n);
		cr_assert_eq(n, 1);
	}
	sim_volume_close(vol);
}

Test(loss, replace_a_healthy_disk_and_a_512_byte_disk)
{
	sim_volume *vol = tu_open(2, DISK, 512, 2);
	tu_write_ok(vol, 0, 512, 512, 1, SIM_FUA);
	tu_write_ok(vol, 1, 512, 512, 2, SIM_FUA);
	cr_assert_eq(sim_disk_replace(vol, 0), 0);
	cr_assert_eq(sim_disk_sector_size(vol, 0), 512);
	cr_assert_eq(sim_disk_size(vol, 0), DISK);
	cr_assert(tu_read_is(vol, 0, 512, 512, 0));
	cr_assert(tu_read_is(vol, 1, 512, 512, 2));
	uint8_t buf[512];
	cr_assert_eq(sim_read(vol, 0, DISK - 512, buf, 512), 0, "the whole disk is there");
	cr_assert_eq(sim_read(vol, 0, DISK, buf, 512), -EINVAL, "and no more");
	sim_volume_close(vol);
}

static void t_crash_of_a_lost_disk_persists_nothing(void)
{
	sim_volume *vol = tu_open(2, DISK, 4096, 3);
	tu_write_ok(vol, 0, 0, 4096, 1, 0);
	tu_write_ok(vol, 1, 0, 4096, 2, 0);
	cr_assert_eq(sim_disk_lose(vol, 0), 0);
	struct sim_crash_spec all = { .policy = SIM_CRASH_ALL };
	struct sim_crash_result res[2];
	cr_assert_eq(sim_volume_crash(vol, &all, res), 0);
	cr_assert_eq(res[0].pending, 0);
	cr_assert_eq(res[1].persisted, 1);
	cr_assert(tu_durable_is(vol, 0, 0, 4096, 0));
	cr_assert(tu_durable_is(vol, 1, 0, 4096, 2));
	cr_assert(sim_disk_is_lost(vol, 0), "a crash does not bring a disk back");
	sim_volume_close(vol);
}

static void t_scheduled_loss_then_replace(void)
{
	sim_volume *vol = tu_open(2, DISK, 4096, 4);
	struct sim_fault f = { .kind = SIM_FAULT_DEVICE_LOSS, .disk = 0, .sector = SIM_ANY_SECTOR,
			       .after_seq = sim_volume_next_seq(vol) + 2, .count = 1 };
	cr_assert_eq(sim_fault_add(vol, &f), 0);
	tu_write_ok(vol, 0, 0, 4096, 1, SIM_FUA);
	tu_write_ok(vol, 0, 4096, 4096, 2, 0);
	cr_assert_eq(sim_flush(vol, 0), -EIO);
	cr_assert(sim_disk_is_lost(vol, 0));
	cr_assert(tu_durable_is(vol, 0, 0, 4096, 1), "durable media is what it was");
	cr_assert(tu_durable_is(vol, 0, 4096, 4096, 0), "the unflushed write never made it");
	cr_assert_eq(sim_disk_replace(vol, 0), 0);
	cr_assert_not(sim_disk_is_lost(vol, 0));
	tu_write_ok(vol, 0, 0, 4096, 3, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 0, 4096, 3));
	cr_assert(tu_durable_is(vol, 0, 4096, 4096, 0));
	sim_volume_close(vol);
}

Test(loss, clone_of_a_lost_disk_is_lost_and_replace_is_independent)
{
	sim_volume *vol = tu_open(1, DISK, 4096, 5);
	tu_write_ok(vol, 0, 0, 4096, 1, SIM_FUA);
	cr_assert_eq(sim_disk_lose(vol, 0), 0);
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	cr_assert(sim_disk_is_lost(c, 0));
	cr_assert_eq(sim_disk_replace(c, 0), 0);
	cr_assert_not(sim_disk_is_lost(c, 0));
	cr_assert(sim_disk_is_lost(vol, 0), "replacing the clone's disk leaves the origin's");
	cr_assert(tu_durable_is(vol, 0, 0, 4096, 1));
	cr_assert(tu_durable_is(c, 0, 0, 4096, 0));
	sim_volume_close(c);
	sim_volume_close(vol);
}

Test(loss, scheduled_loss_then_replace_and_crash)
{
	t_scheduled_loss_then_replace();
	t_crash_of_a_lost_disk_persists_nothing();
}
