/*
 * test_faults.c - every fault kind, added with sim_fault_add and with
 * sim_fault_parse, and the after_seq, disk, sector, count and probability
 * filters of the schedule.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SS 4096u
#define DISK (UINT64_C(16) << 20)

/* Parse and add a fault; asserts both succeed. */
static void add_spec(sim_volume *vol, const char *text)
{
	struct sim_fault f;
	char err[256] = "";
	int r = sim_fault_parse(text, &f, err, sizeof(err));
	cr_assert_eq(r, 0, "parse '%s': %d %s", text, r, err);
	r = sim_fault_add(vol, &f);
	cr_assert_eq(r, 0, "add '%s': %d %s", text, r, sim_volume_error(vol));
}

static void add_fault(sim_volume *vol, struct sim_fault f)
{
	int r = sim_fault_add(vol, &f);
	cr_assert_eq(r, 0, "add %s: %d %s", sim_fault_kind_name(f.kind), r, sim_volume_error(vol));
}

/* Either way of adding a fault, so that each scenario runs both. */
struct how {
	bool parse;
};

static void add(sim_volume *vol, struct how how, const char *text, struct sim_fault f)
{
	if (how.parse)
		add_spec(vol, text);
	else
		add_fault(vol, f);
}

static const struct sim_io *log_find(const sim_volume *vol, uint64_t seq)
{
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	for (size_t i = 0; i < n; i++)
		if (log[i].seq == seq)
			return &log[i];
	return NULL;
}

/* ---- flip-at-rest ---- */

static void flip_at_rest(struct how how)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	tu_write_ok(vol, 0, 5 * SS, SS, 7, 0);
	tu_write_ok(vol, 0, 6 * SS, SS, 8, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	add(vol, how, "flip-at-rest,disk=0,sector=5,count=1",
	    (struct sim_fault){ .kind = SIM_FAULT_FLIP_AT_REST, .disk = 0, .sector = 5,
				.count = 1 });
	cr_assert(tu_durable_is(vol, 0, 5 * SS, SS, 7), "nothing happens before a request");
	/* A request that does not touch sector 5 does not trigger it. */
	cr_assert(tu_read_is(vol, 0, 6 * SS, SS, 8));
	cr_assert(tu_durable_is(vol, 0, 5 * SS, SS, 7));

	uint8_t *got = tu_get(vol, 0, 5 * SS, SS);
	uint8_t *want = tu_pat(SS, 7);
	uint64_t bit = 0;
	cr_assert_eq(tu_bitdiff(got, want, SS, &bit), 1, "the read sees the flipped bit");
	uint8_t *dur = tu_get_durable(vol, 0, 5 * SS, SS);
	cr_assert_eq(memcmp(dur, got, SS), 0, "the media holds the flip");
	const struct sim_io *f = tu_log_last(vol, SIM_IO_FAULT);
	cr_assert_not_null(f);
	cr_assert_eq(f->fault, SIM_FAULT_FLIP_AT_REST);
	cr_assert_eq(f->sector, 5);
	cr_assert_eq(f->fault_arg, bit, "the log names the flipped bit");
	const struct sim_io *rd = tu_log_last(vol, SIM_IO_READ);
	cr_assert(rd->seq > f->seq, "the fault acts before the request");
	free(got);

	/* It fired once: later reads see the same (flipped) data. */
	got = tu_get(vol, 0, 5 * SS, SS);
	cr_assert_eq(memcmp(got, dur, SS), 0);
	cr_assert(tu_durable_is(vol, 0, 6 * SS, SS, 8), "other sectors untouched");
	free(got);
	free(dur);
	free(want);
	sim_volume_close(vol);
}

Test(faults, flip_at_rest)
{
	flip_at_rest((struct how){ false });
	flip_at_rest((struct how){ true });
}

static void t_flip_at_rest_several_bits_are_distinct(void)
{
	/* 4096 bits of a 512-byte sector: every bit, each exactly once. */
	sim_volume *vol = tu_open(1, DISK, 512, 2);
	tu_write_ok(vol, 0, 0, 512, 3, SIM_FUA);
	add_spec(vol, "flip-at-rest,sector=0,count=1,bits=4096");
	uint8_t *got = tu_get(vol, 0, 0, 512), *want = tu_pat(512, 3);
	cr_assert_eq(tu_bitdiff(got, want, 512, NULL), 4096);
	free(got);
	free(want);
	sim_volume_close(vol);

	vol = tu_open(1, DISK, SS, 3);
	tu_write_ok(vol, 0, 0, SS, 3, SIM_FUA);
	add_spec(vol, "flip-at-rest,sector=0,count=1,bits=3");
	got = tu_get(vol, 0, 0, SS);
	want = tu_pat(SS, 3);
	cr_assert_eq(tu_bitdiff(got, want, SS, NULL), 3);
	free(got);
	free(want);
	sim_volume_close(vol);
}

Test(faults, flip_at_rest_any_sector_picks_one_and_logs_it)
{
	sim_volume *vol = tu_open(1, UINT64_C(1) << 20, SS, 4); /* 256 sectors */
	tu_write_ok(vol, 0, 0, 256 * SS, 9, SIM_FUA);
	add_spec(vol, "flip-at-rest,count=1");
	uint8_t buf[SS];
	cr_assert_eq(sim_read(vol, 0, 0, buf, SS), 0);
	const struct sim_io *f = tu_log_last(vol, SIM_IO_FAULT);
	cr_assert_not_null(f);
	cr_assert(f->sector < 256);
	uint64_t s = f->sector, bit = f->fault_arg;
	uint8_t *all = tu_get_durable(vol, 0, 0, 256 * SS), *want = tu_pat(256 * SS, 9);
	uint64_t first;
	cr_assert_eq(tu_bitdiff(all, want, 256 * SS, &first), 1);
	cr_assert_eq(first, s * SS * 8 + bit);
	free(all);
	free(want);
	sim_volume_close(vol);
}

static void t_sim_disk_flip_bit_flips_exactly_that_bit(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 5);
	tu_write_ok(vol, 0, 2 * SS, SS, 4, SIM_FUA);
	cr_assert_eq(sim_disk_flip_bit(vol, 0, 2, 12345), 0);
	uint8_t *got = tu_get(vol, 0, 2 * SS, SS), *want = tu_pat(SS, 4);
	uint64_t first;
	cr_assert_eq(tu_bitdiff(got, want, SS, &first), 1);
	cr_assert_eq(first, 12345);
	const struct sim_io *f = tu_log_last(vol, SIM_IO_FAULT);
	cr_assert_eq(f->fault, SIM_FAULT_FLIP_AT_REST);
	cr_assert_eq(f->sector, 2);
	cr_assert_eq(f->fault_arg, 12345);
	free(got);
	free(want);
	sim_volume_close(vol);
}

/* ---- flip-on-write ---- */

static void flip_on_write(struct how how, unsigned flags)
{
	sim_volume *vol = tu_open(1, DISK, SS, 6);
	add(vol, how, "flip-on-write,disk=0,count=1",
	    (struct sim_fault){ .kind = SIM_FAULT_FLIP_ON_WRITE, .disk = 0,
				.sector = SIM_ANY_SECTOR, .count = 1 });
	uint64_t seq = sim_volume_next_seq(vol);
	tu_write_ok(vol, 0, 4 * SS, 4 * SS, 10, flags);
	const struct sim_io *io = log_find(vol, seq);
	cr_assert_not_null(io);
	cr_assert_eq(io->kind, flags ? SIM_IO_WRITE_FUA : SIM_IO_WRITE);
	cr_assert_eq(io->fault, SIM_FAULT_FLIP_ON_WRITE);
	cr_assert_eq(io->status, 0);
	uint64_t bit = io->fault_arg;
	cr_assert(bit < 4 * SS * 8);

	uint8_t *want = tu_pat(4 * SS, 10);
	uint8_t *got = tu_get(vol, 0, 4 * SS, 4 * SS);
	uint64_t first;
	cr_assert_eq(tu_bitdiff(got, want, 4 * SS, &first), 1, "the stored copy is flipped");
	cr_assert_eq(first, bit, "at the bit the log names");
	free(got);
	if (!flags)
		cr_assert_eq(sim_flush(vol, 0), 0);
	got = tu_get_durable(vol, 0, 4 * SS, 4 * SS);
	cr_assert_eq(tu_bitdiff(got, want, 4 * SS, &first), 1);
	cr_assert_eq(first, bit);
	free(got);

	/* count=1: the next write is stored intact. */
	tu_write_ok(vol, 0, 20 * SS, SS, 11, flags);
	cr_assert(tu_read_is(vol, 0, 20 * SS, SS, 11));
	cr_assert_eq(tu_log_last(vol, flags ? SIM_IO_WRITE_FUA : SIM_IO_WRITE)->fault,
		     SIM_FAULT_NONE);
	free(want);
	sim_volume_close(vol);
}

Test(faults, flip_on_write)
{
	flip_on_write((struct how){ false }, 0);
	flip_on_write((struct how){ true }, 0);
	flip_on_write((struct how){ true }, SIM_FUA);
}

static void t_flip_on_write_in_the_named_sector(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 7);
	add_spec(vol, "flip-on-write,sector=6,bits=2,count=1");
	tu_write_ok(vol, 0, 4 * SS, 4 * SS, 12, 0);
	uint8_t *want = tu_pat(4 * SS, 12);
	uint8_t *got = tu_get(vol, 0, 4 * SS, 4 * SS);
	cr_assert_eq(tu_bitdiff(got, want, 4 * SS, NULL), 2);
	cr_assert_eq(tu_bitdiff(got + 2 * SS, want + 2 * SS, SS, NULL), 2,
		     "both flips in sector 6, the third of the write");
	uint64_t bit = tu_log_last(vol, SIM_IO_WRITE)->fault_arg;
	cr_assert(bit >= 2 * SS * 8 && bit < 3 * SS * 8);
	free(got);
	free(want);
	sim_volume_close(vol);
}

/* ---- flip-on-read ---- */

static void flip_on_read(struct how how)
{
	sim_volume *vol = tu_open(1, DISK, SS, 8);
	tu_write_ok(vol, 0, 0, 2 * SS, 13, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	add(vol, how, "flip-on-read,count=1",
	    (struct sim_fault){ .kind = SIM_FAULT_FLIP_ON_READ, .disk = SIM_ANY_DISK,
				.sector = SIM_ANY_SECTOR, .count = 1 });
	/* Writes are not reads: the fault waits. */
	tu_write_ok(vol, 0, 10 * SS, SS, 14, 0);
	cr_assert_eq(tu_log_last(vol, SIM_IO_WRITE)->fault, SIM_FAULT_NONE);

	uint8_t *got = tu_get(vol, 0, 0, 2 * SS), *want = tu_pat(2 * SS, 13);
	uint64_t first;
	cr_assert_eq(tu_bitdiff(got, want, 2 * SS, &first), 1, "the returned data is flipped");
	const struct sim_io *io = tu_log_last(vol, SIM_IO_READ);
	cr_assert_eq(io->fault, SIM_FAULT_FLIP_ON_READ);
	cr_assert_eq(io->fault_arg, first);
	cr_assert(tu_durable_is(vol, 0, 0, 2 * SS, 13), "the media is intact");
	cr_assert(tu_read_is(vol, 0, 0, 2 * SS, 13), "the next read is clean");
	free(got);
	free(want);
	sim_volume_close(vol);
}

Test(faults, flip_on_read)
{
	flip_on_read((struct how){ false });
	flip_on_read((struct how){ true });
}

static void t_flip_on_read_of_cached_data_leaves_cache_intact(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 9);
	tu_write_ok(vol, 0, 0, SS, 15, 0);
	add_spec(vol, "flip-on-read,count=1,bits=5");
	uint8_t *got = tu_get(vol, 0, 0, SS), *want = tu_pat(SS, 15);
	cr_assert_eq(tu_bitdiff(got, want, SS, NULL), 5);
	cr_assert(tu_read_is(vol, 0, 0, SS, 15));
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 0, SS, 15));
	free(got);
	free(want);
	sim_volume_close(vol);
}

/* ---- latent sector errors ---- */

static void latent(struct how how)
{
	sim_volume *vol = tu_open(1, DISK, SS, 10);
	tu_write_ok(vol, 0, 0, 20 * SS, 16, SIM_FUA);
	add(vol, how, "latent,disk=0,sector=10,n=3,count=1",
	    (struct sim_fault){ .kind = SIM_FAULT_LATENT, .disk = 0, .sector = 10, .nsectors = 3,
				.count = 1 });
	uint8_t buf[2 * SS];
	cr_assert_eq(sim_read(vol, 0, 0, buf, SS), 0, "sector 0 is not affected");
	cr_assert_eq(sim_read(vol, 0, 10 * SS, buf, SS), -EIO);
	cr_assert_neq(sim_volume_error(vol)[0], '\0');
	const struct sim_io *f = tu_log_last(vol, SIM_IO_FAULT);
	cr_assert_not_null(f);
	cr_assert_eq(f->fault, SIM_FAULT_LATENT);
	cr_assert_eq(f->sector, 10);
	cr_assert_eq(f->nsectors, 3);
	const struct sim_io *rd = tu_log_last(vol, SIM_IO_READ);
	cr_assert_eq(rd->status, -EIO);
	cr_assert_eq(rd->fault, SIM_FAULT_LATENT);

	cr_assert_eq(sim_read(vol, 0, 11 * SS, buf, SS), -EIO);
	cr_assert_eq(sim_read(vol, 0, 12 * SS, buf, SS), -EIO);
	cr_assert_eq(sim_read(vol, 0, 9 * SS, buf, 2 * SS), -EIO, "a read overlapping 10");
	cr_assert_eq(sim_read(vol, 0, 8 * SS, buf, 2 * SS), 0, "8-9");
	cr_assert_eq(sim_read(vol, 0, 9 * SS, buf, SS), 0);
	cr_assert_eq(sim_read(vol, 0, 13 * SS, buf, SS), 0);

	/* Rewriting sector 11 clears it; 10 and 12 stay bad. */
	tu_write_ok(vol, 0, 11 * SS, SS, 17, 0);
	cr_assert(tu_read_is(vol, 0, 11 * SS, SS, 17));
	cr_assert_eq(sim_read(vol, 0, 10 * SS, buf, SS), -EIO);
	cr_assert_eq(sim_read(vol, 0, 12 * SS, buf, SS), -EIO);
	tu_write_ok(vol, 0, 10 * SS, SS, 18, SIM_FUA);
	tu_write_ok(vol, 0, 12 * SS, SS, 19, 0);
	cr_assert(tu_read_is(vol, 0, 10 * SS, SS, 18));
	cr_assert(tu_read_is(vol, 0, 12 * SS, SS, 19));
	sim_volume_close(vol);
}

Test(faults, latent)
{
	latent((struct how){ false });
	latent((struct how){ true });
}

static void t_latent_direct_and_cleared_by_discard(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 11);
	cr_assert_eq(sim_disk_add_latent(vol, 0, 3, 4), 0);
	uint8_t buf[SS];
	for (uint64_t s = 0; s < 10; s++)
		cr_assert_eq(sim_read(vol, 0, s * SS, buf, SS), s >= 3 && s < 7 ? -EIO : 0,
			     "sector %llu", (unsigned long long)s);
	cr_assert_eq(sim_discard(vol, 0, 4 * SS, 2 * SS), 0);
	for (uint64_t s = 0; s < 10; s++)
		cr_assert_eq(sim_read(vol, 0, s * SS, buf, SS), s == 3 || s == 6 ? -EIO : 0,
			     "sector %llu", (unsigned long long)s);
	/* A lost write does not clear a latent error: nothing reached the disk. */
	add_spec(vol, "lost-write,count=1");
	tu_write_ok(vol, 0, 3 * SS, SS, 1, 0);
	cr_assert_eq(sim_read(vol, 0, 3 * SS, buf, SS), -EIO);
	sim_volume_close(vol);
}

static void t_latent_any_sector_marks_a_random_one(void)
{
	sim_volume *vol = tu_open(1, UINT64_C(1) << 20, SS, 12); /* 256 sectors */
	add_spec(vol, "latent,count=1");
	uint8_t buf[SS];
	cr_assert_eq(sim_flush(vol, 0), 0);
	const struct sim_io *f = tu_log_last(vol, SIM_IO_FAULT);
	cr_assert_not_null(f);
	cr_assert_eq(f->fault, SIM_FAULT_LATENT);
	uint64_t bad = f->sector;
	cr_assert(bad < 256);
	unsigned fails = 0;
	for (uint64_t s = 0; s < 256; s++) {
		int r = sim_read(vol, 0, s * SS, buf, SS);
		cr_assert(r == 0 || r == -EIO);
		fails += r != 0;
		cr_assert_eq(r, s == bad ? -EIO : 0);
	}
	cr_assert_eq(fails, 1);
	sim_volume_close(vol);
}

/* ---- lost writes ---- */

static void lost_write(struct how how, unsigned flags)
{
	sim_volume *vol = tu_open(1, DISK, SS, 13);
	tu_write_ok(vol, 0, 5 * SS, SS, 20, SIM_FUA);
	add(vol, how, "lost-write,count=1",
	    (struct sim_fault){ .kind = SIM_FAULT_LOST_WRITE, .disk = SIM_ANY_DISK,
				.sector = SIM_ANY_SECTOR, .count = 1 });
	uint64_t seq = sim_volume_next_seq(vol);
	cr_assert_eq(tu_write(vol, 0, 5 * SS, SS, 21, flags), 0, "the write is acknowledged");
	cr_assert(tu_read_is(vol, 0, 5 * SS, SS, 20), "but never cached");
	size_t n;
	sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 0, "nor pending");
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 5 * SS, SS, 20), "nor persisted");
	const struct sim_io *io = log_find(vol, seq);
	cr_assert_not_null(io);
	cr_assert_eq(io->fault, SIM_FAULT_LOST_WRITE);
	cr_assert_eq(io->status, 0);
	cr_assert_eq(io->sector, 5);
	/* Once only. */
	tu_write_ok(vol, 0, 5 * SS, SS, 22, flags);
	cr_assert(tu_read_is(vol, 0, 5 * SS, SS, 22));
	sim_volume_close(vol);
}

Test(faults, lost_write)
{
	lost_write((struct how){ false }, 0);
	lost_write((struct how){ true }, 0);
	lost_write((struct how){ true }, SIM_FUA);
}

/* ---- misdirected writes ---- */

static void misdirect(struct how how, unsigned flags)
{
	sim_volume *vol = tu_open(1, DISK, SS, 14);
	tu_write_ok(vol, 0, 3 * SS, SS, 30, SIM_FUA);
	add(vol, how, "misdirect,shift=7,count=1",
	    (struct sim_fault){ .kind = SIM_FAULT_MISDIRECT, .disk = SIM_ANY_DISK,
				.sector = SIM_ANY_SECTOR, .shift = 7, .count = 1 });
	uint64_t seq = sim_volume_next_seq(vol);
	cr_assert_eq(tu_write(vol, 0, 3 * SS, SS, 31, flags), 0);
	const struct sim_io *io = log_find(vol, seq);
	cr_assert_eq(io->fault, SIM_FAULT_MISDIRECT);
	cr_assert_eq(io->sector, 3, "the log keeps the intended sector");
	cr_assert_eq(io->fault_arg, 10, "and names the target");
	cr_assert(tu_read_is(vol, 0, 3 * SS, SS, 30), "the intended sector is unchanged");
	cr_assert(tu_read_is(vol, 0, 10 * SS, SS, 31), "the data landed 7 sectors on");
	if (!flags) {
		cr_assert(tu_durable_is(vol, 0, 10 * SS, SS, 0));
		cr_assert_eq(sim_flush(vol, 0), 0);
	}
	cr_assert(tu_durable_is(vol, 0, 10 * SS, SS, 31));
	cr_assert(tu_durable_is(vol, 0, 3 * SS, SS, 30));
	sim_volume_close(vol);
}

Test(faults, misdirect)
{
	misdirect((struct how){ false }, 0);
	misdirect((struct how){ true }, 0);
	misdirect((struct how){ true }, SIM_FUA);
}

static void t_misdirect_random_and_negative_shift_stay_on_the_disk(void)
{
	sim_volume *vol = tu_open(1, UINT64_C(1) << 20, SS, 15); /* 256 sectors */
	add_spec(vol, "misdirect,count=1");
	tu_write_ok(vol, 0, 100 * SS, 2 * SS, 40, 0);
	uint64_t at = tu_log_last(vol, SIM_IO_WRITE)->fault_arg;
	cr_assert_neq(at, 100);
	cr_assert(at + 2 <= 256);
	cr_assert(tu_read_is(vol, 0, at * SS, 2 * SS, 40));
	if (at + 2 <= 100 || at >= 102)
		cr_assert(tu_read_is(vol, 0, 100 * SS, 2 * SS, 0));

	sim_fault_clear(vol);
	add_spec(vol, "misdirect,shift=-5,count=1");
	tu_write_ok(vol, 0, 2 * SS, SS, 41, 0);
	/* 2 - 5 wraps within the 256 possible first sectors: 253. */
	cr_assert_eq(tu_log_last(vol, SIM_IO_WRITE)->fault_arg, 253);
	cr_assert(tu_read_is(vol, 0, 253 * SS, SS, 41));
	cr_assert(tu_read_is(vol, 0, 2 * SS, SS, 0));
	sim_volume_close(vol);
}

static void t_misdirect_huge_shift_does_not_overflow(void)
{
	sim_volume *vol = tu_open(1, UINT64_C(1) << 20, SS, 16);
	add_spec(vol, "misdirect,shift=9223372036854775807,count=1");
	tu_write_ok(vol, 0, 255 * SS, SS, 42, 0);
	uint64_t at = tu_log_last(vol, SIM_IO_WRITE)->fault_arg;
	cr_assert(at < 256 && at != 255);
	cr_assert(tu_read_is(vol, 0, at * SS, SS, 42));
	sim_fault_clear(vol);
	add_spec(vol, "misdirect,shift=-9223372036854775808,count=1");
	tu_write_ok(vol, 0, 255 * SS, SS, 43, 0);
	at = tu_log_last(vol, SIM_IO_WRITE)->fault_arg;
	cr_assert(at < 256 && at != 255);
	cr_assert(tu_read_is(vol, 0, at * SS, SS, 43));
	sim_volume_close(vol);
}

/* ---- device loss ---- */

static void device_loss(struct how how)
{
	sim_volume *vol = tu_open(2, DISK, SS, 17);
	tu_write_ok(vol, 1, 0, SS, 50, 0);
	cr_assert_eq(sim_flush(vol, 1), 0);
	uint64_t after = sim_volume_next_seq(vol) + 3;
	char spec[64];
	snprintf(spec, sizeof(spec), "device-loss,disk=1,after=%llu", (unsigned long long)after);
	add(vol, how, spec,
	    (struct sim_fault){ .kind = SIM_FAULT_DEVICE_LOSS, .disk = 1,
				.sector = SIM_ANY_SECTOR, .after_seq = after });
	tu_write_ok(vol, 1, SS, SS, 51, 0);     /* after - 3 */
	tu_write_ok(vol, 0, 0, SS, 52, 0);      /* after - 2 */
	cr_assert(tu_read_is(vol, 1, SS, SS, 51)); /* after - 1 */
	cr_assert_not(sim_disk_is_lost(vol, 1));
	size_t n;
	sim_disk_pending(vol, 1, &n);
	cr_assert_eq(n, 1);

	uint8_t buf[SS];
	cr_assert_eq(sim_read(vol, 1, 0, buf, SS), -EIO);
	cr_assert(sim_disk_is_lost(vol, 1));
	cr_assert_neq(sim_volume_error(vol)[0], '\0');
	const struct sim_io *f = tu_log_last(vol, SIM_IO_FAULT);
	cr_assert_not_null(f);
	cr_assert_eq(f->fault, SIM_FAULT_DEVICE_LOSS);
	cr_assert_eq(f->disk, 1);
	cr_assert_eq(f->seq, after);
	sim_disk_pending(vol, 1, &n);
	cr_assert_eq(n, 0, "the volatile write is gone");
	struct sim_disk_stats st;
	cr_assert_eq(sim_disk_stats(vol, 1, &st), 0);
	cr_assert_eq(st.pending_writes, 0);

	cr_assert_eq(tu_write(vol, 1, 0, SS, 53, 0), -EIO);
	cr_assert_eq(tu_write(vol, 1, 0, SS, 53, SIM_FUA), -EIO);
	cr_assert_eq(sim_flush(vol, 1), -EIO);
	cr_assert_eq(sim_discard(vol, 1, 0, SS), -EIO);
	cr_assert_eq(sim_read(vol, 1, SS, buf, SS), -EIO);
	cr_assert(tu_durable_is(vol, 1, 0, SS, 50), "the media is still what was flushed");
	cr_assert(tu_durable_is(vol, 1, SS, SS, 0), "the volatile write never persisted");

	/* Disk 0 is fine. */
	cr_assert_not(sim_disk_is_lost(vol, 0));
	cr_assert(tu_read_is(vol, 0, 0, SS, 52));
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, 0, SS, 52));
	sim_volume_close(vol);
}

Test(faults, device_loss)
{
	device_loss((struct how){ false });
	device_loss((struct how){ true });
}

/* ---- flaky disks ---- */

static void flaky_always(struct how how)
{
	sim_volume *vol = tu_open(1, DISK, SS, 18);
	tu_write_ok(vol, 0, 0, SS, 60, SIM_FUA);
	add(vol, how, "flaky,p=1.0",
	    (struct sim_fault){ .kind = SIM_FAULT_FLAKY, .disk = SIM_ANY_DISK,
				.sector = SIM_ANY_SECTOR, .probability = 1.0 });
	uint8_t buf[SS];
	memset(buf, 0xa5, SS);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(sim_read(vol, 0, 0, buf, SS), -EIO);
		cr_assert_eq(tu_write(vol, 0, SS, SS, 61, 0), -EIO);
		cr_assert_eq(tu_write(vol, 0, SS, SS, 61, SIM_FUA), -EIO);
		cr_assert_eq(sim_flush(vol, 0), -EIO);
		cr_assert_eq(sim_discard(vol, 0, 0, SS), -EIO);
	}
	cr_assert_eq(buf[0], 0xa5, "a failed read returns nothing");
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	for (size_t i = 1; i < n; i++) {
		cr_assert_eq(log[i].status, -EIO);
		cr_assert_eq(log[i].fault, SIM_FAULT_FLAKY);
		if (log[i].kind == SIM_IO_FLUSH)
			cr_assert_eq(log[i].nsectors, 0, "a flush entry has no sector range");
	}
	sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 0, "nothing done");
	cr_assert(tu_durable_is(vol, 0, 0, SS, 60));
	cr_assert(tu_durable_is(vol, 0, SS, SS, 0));
	cr_assert_eq(sim_disk_epoch(vol, 0), 0, "no flush completed");
	struct sim_disk_stats st;
	sim_disk_stats(vol, 0, &st);
	cr_assert_eq(st.errors, 100);
	sim_fault_clear(vol);
	cr_assert(tu_read_is(vol, 0, 0, SS, 60), "sim_fault_clear disarms it");
	sim_volume_close(vol);
}

static void t_flaky_always_t(void)
{
	flaky_always((struct how){ false });
	flaky_always((struct how){ true });
}

static void t_flaky_probability_zero_is_always(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 19);
	add_fault(vol, (struct sim_fault){ .kind = SIM_FAULT_FLAKY, .disk = SIM_ANY_DISK,
					   .sector = SIM_ANY_SECTOR });
	uint8_t buf[SS];
	for (int i = 0; i < 10; i++)
		cr_assert_eq(sim_read(vol, 0, 0, buf, SS), -EIO);
	sim_volume_close(vol);
}

static void flaky_half(struct how how)
{
	sim_volume *vol = tu_open(1, DISK, SS, 20);
	add(vol, how, "flaky,p=0.5",
	    (struct sim_fault){ .kind = SIM_FAULT_FLAKY, .disk = SIM_ANY_DISK,
				.sector = SIM_ANY_SECTOR, .probability = 0.5 });
	uint8_t failed[200];
	unsigned fails = 0;
	for (unsigned i = 0; i < 200; i++) {
		int r = tu_write(vol, 0, (uint64_t)i * SS, SS, 100 + i, 0);
		cr_assert(r == 0 || r == -EIO, "%d", r);
		failed[i] = r != 0;
		fails += failed[i];
	}
	cr_assert(fails > 50 && fails < 150, "%u of 200 failed", fails);
	/* A failed write did nothing; the others are cached and pending. */
	size_t n;
	sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 200 - fails);
	sim_fault_clear(vol);
	for (unsigned i = 0; i < 200; i++)
		cr_assert(tu_read_is(vol, 0, (uint64_t)i * SS, SS, failed[i] ? 0 : 100 + i),
			  "write %u", i);
	sim_volume_close(vol);
}

Test(faults, flaky_half)
{
	flaky_half((struct how){ false });
	flaky_half((struct how){ true });
}

/* ---- filters ---- */

static void t_filter_after_seq(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 21);
	uint64_t after = sim_volume_next_seq(vol) + 5;
	add_fault(vol, (struct sim_fault){ .kind = SIM_FAULT_FLAKY, .disk = SIM_ANY_DISK,
					   .sector = SIM_ANY_SECTOR, .after_seq = after });
	uint8_t buf[SS];
	for (int i = 0; i < 10; i++) {
		uint64_t seq = sim_volume_next_seq(vol);
		cr_assert_eq(sim_read(vol, 0, 0, buf, SS), seq < after ? 0 : -EIO, "seq %llu",
			     (unsigned long long)seq);
	}
	sim_volume_close(vol);
}

static void t_filter_disk(void)
{
	sim_volume *vol = tu_open(3, DISK, SS, 22);
	add_spec(vol, "flaky,disk=1");
	uint8_t buf[SS];
	for (unsigned d = 0; d < 3; d++) {
		cr_assert_eq(sim_read(vol, d, 0, buf, SS), d == 1 ? -EIO : 0);
		cr_assert_eq(tu_write(vol, d, 0, SS, 1, 0), d == 1 ? -EIO : 0);
		cr_assert_eq(sim_flush(vol, d), d == 1 ? -EIO : 0);
	}
	sim_volume_close(vol);
}

Test(faults, filter_sector)
{
	sim_volume *vol = tu_open(1, DISK, SS, 23);
	add_spec(vol, "flaky,sector=20");
	uint8_t buf[4 * SS];
	cr_assert_eq(sim_read(vol, 0, 19 * SS, buf, SS), 0);
	cr_assert_eq(sim_read(vol, 0, 21 * SS, buf, SS), 0);
	cr_assert_eq(sim_read(vol, 0, 20 * SS, buf, SS), -EIO);
	cr_assert_eq(sim_read(vol, 0, 18 * SS, buf, 4 * SS), -EIO, "overlapping 20");
	cr_assert_eq(sim_read(vol, 0, 16 * SS, buf, 4 * SS), 0, "16-19");
	cr_assert_eq(tu_write(vol, 0, 20 * SS, SS, 1, 0), -EIO);
	cr_assert_eq(tu_write(vol, 0, 21 * SS, SS, 1, 0), 0);
	cr_assert_eq(sim_flush(vol, 0), -EIO, "a flush covers every sector");
	sim_volume_close(vol);
}

Test(faults, filter_sector_on_a_disk_of_more_than_2e32_sectors)
{
	/* 4 TiB of 512-byte sectors: 2^33 sectors; memory-backed, nothing allocated. */
	sim_volume *vol = tu_open(1, UINT64_C(1) << 42, 512, 24);
	add_spec(vol, "flaky,sector=8589934000");
	uint8_t buf[512];
	cr_assert_eq(sim_read(vol, 0, UINT64_C(8589934000) * 512, buf, 512), -EIO);
	cr_assert_eq(sim_read(vol, 0, 0, buf, 512), 0);
	cr_assert_eq(sim_flush(vol, 0), -EIO, "a flush covers every sector");
	sim_volume_close(vol);
}

static void t_filter_count(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 25);
	add_spec(vol, "flaky,count=3");
	uint8_t buf[SS];
	unsigned fails = 0;
	for (int i = 0; i < 10; i++) {
		int r = sim_read(vol, 0, 0, buf, SS);
		cr_assert_eq(r, i < 3 ? -EIO : 0, "request %d", i);
		fails += r != 0;
	}
	cr_assert_eq(fails, 3);
	sim_volume_close(vol);
}

static void t_filter_count_with_probability(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 26);
	add_spec(vol, "flaky,count=5,p=0.3");
	uint8_t buf[SS];
	unsigned fails = 0, last_fail = 0;
	for (unsigned i = 0; i < 400; i++)
		if (sim_read(vol, 0, 0, buf, SS)) {
			fails++;
			last_fail = i;
		}
	cr_assert_eq(fails, 5);
	cr_assert(last_fail > 5, "not the first five: the draws are random");
	sim_volume_close(vol);
}

Test(faults, filters_combined)
{
	sim_volume *vol = tu_open(2, DISK, SS, 27);
	uint64_t after = sim_volume_next_seq(vol) + 4;
	add_fault(vol, (struct sim_fault){ .kind = SIM_FAULT_LOST_WRITE, .disk = 1, .sector = 7,
					   .after_seq = after, .count = 1 });
	tu_write_ok(vol, 1, 7 * SS, SS, 1, 0); /* before after_seq */
	tu_write_ok(vol, 0, 7 * SS, SS, 2, 0); /* other disk */
	tu_write_ok(vol, 1, 6 * SS, SS, 3, 0); /* other sector */
	tu_write_ok(vol, 1, 8 * SS, SS, 4, 0);
	cr_assert_eq(tu_log_count(vol, SIM_IO_WRITE), 4);
	cr_assert(tu_read_is(vol, 1, 7 * SS, SS, 1));
	cr_assert(tu_read_is(vol, 0, 7 * SS, SS, 2));
	cr_assert(tu_read_is(vol, 1, 6 * SS, SS, 3));
	tu_write_ok(vol, 1, 7 * SS, SS, 5, 0); /* lost */
	cr_assert(tu_read_is(vol, 1, 7 * SS, SS, 1));
	tu_write_ok(vol, 1, 7 * SS, SS, 6, 0); /* count exhausted */
	cr_assert(tu_read_is(vol, 1, 7 * SS, SS, 6));
	sim_volume_close(vol);
}

/* ---- parsing ---- */

Test(faults, parse_fills_every_field)
{
	struct sim_fault f;
	char err[128] = "";
	cr_assert_eq(sim_fault_parse("misdirect,disk=3,sector=99,after=1000,p=0.25,count=7,bits=4,"
				     "n=6,shift=-12",
				     &f, err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(f.kind, SIM_FAULT_MISDIRECT);
	cr_assert_eq(f.disk, 3);
	cr_assert_eq(f.sector, 99);
	cr_assert_eq(f.after_seq, 1000);
	cr_assert_float_eq(f.probability, 0.25, 1e-12);
	cr_assert_eq(f.count, 7);
	cr_assert_eq(f.bits, 4);
	cr_assert_eq(f.nsectors, 6);
	cr_assert_eq(f.shift, -12);

	cr_assert_eq(sim_fault_parse("flaky", &f, err, sizeof(err)), 0);
	cr_assert_eq(f.kind, SIM_FAULT_FLAKY);
	cr_assert_eq(f.disk, SIM_ANY_DISK);
	cr_assert_eq(f.sector, SIM_ANY_SECTOR);
	cr_assert_eq(f.after_seq, 0);
	cr_assert_eq(f.count, 0);
}

Test(faults, parse_knows_every_kind_by_its_name)
{
	for (int k = SIM_FAULT_NONE + 1; k < SIM_FAULT_KIND_COUNT; k++) {
		struct sim_fault f;
		char err[128] = "";
		const char *name = sim_fault_kind_name((enum sim_fault_kind)k);
		cr_assert_eq(sim_fault_parse(name, &f, err, sizeof(err)), 0, "%s: %s", name, err);
		cr_assert_eq(f.kind, k, "%s", name);
	}
	const char *names[] = { "flip-at-rest", "flip-on-write", "flip-on-read", "latent",
				"lost-write",   "misdirect",     "device-loss",  "flaky" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct sim_fault f;
		char err[128] = "";
		cr_assert_eq(sim_fault_parse(names[i], &f, err, sizeof(err)), 0, "%s", names[i]);
		cr_assert_str_eq(sim_fault_kind_name(f.kind), names[i]);
	}
}

Test(faults, parse_rejects_bad_text_with_a_message)
{
	const char *bad[] = {
		"",
		"bogus",
		"none",
		"flaky,p",
		"flaky,frequency=1",
		"flaky,p=2",
		"flaky,p=-0.5",
		"flaky,p=nan",
		"flaky,p=",
		"flaky,p=0.5x",
		"flaky,disk=-1",
		"flaky,disk=64",
		"flaky,disk=x",
		"flaky,sector=-3",
		"flaky,sector=",
		"flaky,after=1.5",
		"flaky,count=4294967296",
		"flaky,bits=-1",
		"flaky,n=abc",
		"misdirect,shift=1e3",
		"misdirect,shift=99999999999999999999",
		"flaky,disk=1=2",
		"Flaky",
		" flaky",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sim_fault f;
		char err[128] = "";
		int r = sim_fault_parse(bad[i], &f, err, sizeof(err));
		cr_assert_eq(r, -EINVAL, "'%s' was accepted", bad[i]);
		cr_assert_neq(err[0], '\0', "'%s': no message", bad[i]);
	}
	char longer[400];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	memcpy(longer, "flaky,", 6);
	struct sim_fault f;
	char err[128] = "";
	cr_assert_eq(sim_fault_parse(longer, &f, err, sizeof(err)), -EINVAL);
	cr_assert_neq(err[0], '\0');
	err[0] = '\0';
	cr_assert_eq(sim_fault_parse(NULL, &f, err, sizeof(err)), -EINVAL);
	cr_assert_neq(err[0], '\0');
}

static void t_kind_names(void)
{
	cr_assert_str_eq(sim_fault_kind_name(SIM_FAULT_LATENT), "latent");
	cr_assert_str_eq(sim_fault_kind_name(SIM_FAULT_DEVICE_LOSS), "device-loss");
	cr_assert_str_eq(sim_fault_kind_name((enum sim_fault_kind)99), "?");
}

static void t_a_clear_disarms_every_fault(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 28);
	add_spec(vol, "flaky");
	add_spec(vol, "lost-write");
	sim_fault_clear(vol);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	cr_assert(tu_read_is(vol, 0, 0, SS, 1));
	sim_volume_close(vol);
}

static void t_faults_are_counted_in_stats(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 29);
	add_spec(vol, "lost-write,count=2");
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	cr_assert_eq(sim_disk_add_latent(vol, 0, 5, 1), 0);
	struct sim_disk_stats st;
	cr_assert_eq(sim_disk_stats(vol, 0, &st), 0);
	cr_assert_eq(st.faults, 3);
	cr_assert_eq(st.writes, 3);
	cr_assert_eq(st.errors, 0);
	sim_volume_close(vol);
}

Test(faults, flip_at_rest_direct_and_distinct_bits)
{
	t_sim_disk_flip_bit_flips_exactly_that_bit();
	t_flip_at_rest_several_bits_are_distinct();
}

Test(faults, flip_on_write_and_read_variants)
{
	t_flip_on_write_in_the_named_sector();
	t_flip_on_read_of_cached_data_leaves_cache_intact();
}

Test(faults, latent_direct_discard_and_random)
{
	t_latent_direct_and_cleared_by_discard();
	t_latent_any_sector_marks_a_random_one();
}

Test(faults, misdirect_shifts)
{
	t_misdirect_random_and_negative_shift_stay_on_the_disk();
	t_misdirect_huge_shift_does_not_overflow();
}

Test(faults, flaky_always_and_default_probability)
{
	t_flaky_always_t();
	t_flaky_probability_zero_is_always();
}

Test(faults, filters_after_disk_count)
{
	t_filter_after_seq();
	t_filter_disk();
	t_filter_count();
	t_filter_count_with_probability();
}

Test(faults, bookkeeping)
{
	t_kind_names();
	t_a_clear_disarms_every_fault();
	t_faults_are_counted_in_stats();
}
