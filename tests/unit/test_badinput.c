/*
 * test_badinput.c - every bad argument returns the right negative errno, leaves
 * a message in sim_volume_error() (or the err buffer of sim_volume_open), does
 * not crash, logs nothing and changes nothing.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SS 4096u
#define DISK (UINT64_C(256) << 20) /* room for a request of SIM_MAX_IO_BYTES */

/* Sets a known message, so that a check can see the call under test set its own. */
static void prime(sim_volume *vol)
{
	cr_assert_eq(sim_disk_crash(vol, 1000, &(struct sim_crash_spec){ 0 }, NULL), -EINVAL);
	cr_assert_neq(sim_volume_error(vol)[0], '\0');
}

#define EXPECT_ERR(vol, call, want)                                                            \
	do {                                                                                   \
		prime(vol);                                                                    \
		char before_[256];                                                             \
		snprintf(before_, sizeof(before_), "%s", sim_volume_error(vol));               \
		uint64_t seq_ = sim_volume_next_seq(vol);                                      \
		int r_ = (call);                                                               \
		cr_assert_eq(r_, (want), "%s: %d (%s), want %d", #call, r_,                    \
			     sim_volume_error(vol), (want));                                   \
		cr_assert_neq(sim_volume_error(vol)[0], '\0', "%s: no message", #call);        \
		cr_assert_str_neq(sim_volume_error(vol), before_, "%s: message not set",       \
				  #call);                                                      \
		if ((want) == -EINVAL)                                                         \
			cr_assert_eq(sim_volume_next_seq(vol), seq_, "%s: logged", #call);    \
	} while (0)

static sim_volume *vol2(void)
{
	sim_volume *vol = tu_open(2, DISK, SS, 1);
	tu_write_ok(vol, 0, 0, SS, 1, SIM_FUA);
	tu_write_ok(vol, 0, SS, SS, 2, 0);
	return vol;
}

/* The state vol2() left is intact. */
static void expect_unchanged(sim_volume *vol)
{
	cr_assert(tu_durable_is(vol, 0, 0, SS, 1));
	cr_assert(tu_read_is(vol, 0, SS, SS, 2));
	cr_assert(tu_durable_is(vol, 0, SS, SS, 0));
	size_t n;
	sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 1);
}

Test(badinput, disk_index_out_of_range)
{
	sim_volume *vol = vol2();
	uint8_t buf[SS] = { 0 };
	uint64_t h;
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	EXPECT_ERR(vol, sim_read(vol, 2, 0, buf, SS), -EINVAL);
	EXPECT_ERR(vol, sim_read(vol, UINT32_MAX, 0, buf, SS), -EINVAL);
	EXPECT_ERR(vol, sim_write(vol, 2, 0, buf, SS, 0), -EINVAL);
	EXPECT_ERR(vol, sim_flush(vol, 2), -EINVAL);
	EXPECT_ERR(vol, sim_discard(vol, 2, 0, SS), -EINVAL);
	EXPECT_ERR(vol, sim_read_durable(vol, 2, 0, buf, SS), -EINVAL);
	EXPECT_ERR(vol, sim_disk_crash(vol, 2, &none, NULL), -EINVAL);
	EXPECT_ERR(vol, sim_disk_flip_bit(vol, 2, 0, 0), -EINVAL);
	EXPECT_ERR(vol, sim_disk_add_latent(vol, 2, 0, 1), -EINVAL);
	EXPECT_ERR(vol, sim_disk_lose(vol, 2), -EINVAL);
	EXPECT_ERR(vol, sim_disk_replace(vol, 2), -EINVAL);
	EXPECT_ERR(vol, sim_disk_durable_hash(vol, 2, &h), -EINVAL);
	EXPECT_ERR(vol, sim_disk_durable_cmp(vol, 0, vol, 2), -EINVAL);
	EXPECT_ERR(vol, sim_disk_save_image(vol, 2, "/tmp/btrsim-never-written.img"), -EINVAL);
	struct sim_disk_stats st;
	cr_assert_eq(sim_disk_stats(vol, 2, &st), -EINVAL);
	/* Accessors answer 0 for a disk that does not exist. */
	cr_assert_eq(sim_disk_size(vol, 2), 0);
	cr_assert_eq(sim_disk_sector_size(vol, 2), 0);
	cr_assert_eq(sim_disk_epoch(vol, 2), 0);
	cr_assert_not(sim_disk_is_lost(vol, 2));
	size_t n = 99;
	cr_assert_null(sim_disk_pending(vol, 2, &n));
	cr_assert_eq(n, 0);
	expect_unchanged(vol);
	sim_volume_close(vol);
}

static void t_unaligned_offset_or_length(void)
{
	sim_volume *vol = vol2();
	uint8_t buf[2 * SS] = { 0 };
	const uint64_t offs[] = { 1, 512, SS - 1, SS + 512 };
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		EXPECT_ERR(vol, sim_read(vol, 0, offs[i], buf, SS), -EINVAL);
		EXPECT_ERR(vol, sim_write(vol, 0, offs[i], buf, SS, 0), -EINVAL);
		EXPECT_ERR(vol, sim_discard(vol, 0, offs[i], SS), -EINVAL);
		EXPECT_ERR(vol, sim_read_durable(vol, 0, offs[i], buf, SS), -EINVAL);
	}
	const size_t lens[] = { 1, 512, SS - 1, SS + 1, SS + 512 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		EXPECT_ERR(vol, sim_read(vol, 0, 0, buf, lens[i]), -EINVAL);
		EXPECT_ERR(vol, sim_write(vol, 0, 0, buf, lens[i], SIM_FUA), -EINVAL);
		EXPECT_ERR(vol, sim_discard(vol, 0, 0, lens[i]), -EINVAL);
		EXPECT_ERR(vol, sim_read_durable(vol, 0, 0, buf, lens[i]), -EINVAL);
	}
	expect_unchanged(vol);
	sim_volume_close(vol);
}

static void t_zero_length(void)
{
	sim_volume *vol = vol2();
	uint8_t buf[SS] = { 0 };
	EXPECT_ERR(vol, sim_read(vol, 0, 0, buf, 0), -EINVAL);
	EXPECT_ERR(vol, sim_write(vol, 0, 0, buf, 0, 0), -EINVAL);
	EXPECT_ERR(vol, sim_discard(vol, 0, 0, 0), -EINVAL);
	EXPECT_ERR(vol, sim_read_durable(vol, 0, 0, buf, 0), -EINVAL);
	expect_unchanged(vol);
	sim_volume_close(vol);
}

Test(badinput, length_over_the_request_limit)
{
	sim_volume *vol = vol2();
	/* A real buffer of that size: were the length accepted, it would not overflow. */
	size_t big = SIM_MAX_IO_BYTES + SS;
	uint8_t *buf = calloc(1, big);
	cr_assert_not_null(buf);
	EXPECT_ERR(vol, sim_read(vol, 0, 0, buf, big), -EINVAL);
	EXPECT_ERR(vol, sim_write(vol, 0, 0, buf, big, 0), -EINVAL);
	EXPECT_ERR(vol, sim_discard(vol, 0, 0, big), -EINVAL);
	EXPECT_ERR(vol, sim_read_durable(vol, 0, 0, buf, big), -EINVAL);
	EXPECT_ERR(vol, sim_read(vol, 0, 0, buf, SIZE_MAX - SS + 1), -EINVAL);
	/* Exactly the limit is fine (a discard: no 64 MiB of data to move). */
	cr_assert_eq(sim_discard(vol, 1, 0, SIM_MAX_IO_BYTES), 0, "%s", sim_volume_error(vol));
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 1, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(p[0].nsectors, SIM_MAX_IO_BYTES / SS);
	free(buf);
	expect_unchanged(vol);
	sim_volume_close(vol);
}

Test(badinput, past_the_end_and_overflowing)
{
	sim_volume *vol = vol2();
	uint8_t buf[2 * SS] = { 0 };
	const uint64_t top = UINT64_MAX - SS + 1; /* aligned, near UINT64_MAX */
	const struct {
		uint64_t off;
		size_t len;
	} bad[] = {
		{ DISK, SS },            { DISK - SS, 2 * SS }, { DISK + SS, SS },
		{ top, SS },             { top, 2 * SS },      { top - SS, 2 * SS },
		{ UINT64_MAX / 2 + 1, SS },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_ERR(vol, sim_read(vol, 0, bad[i].off, buf, bad[i].len), -EINVAL);
		EXPECT_ERR(vol, sim_write(vol, 0, bad[i].off, buf, bad[i].len, 0), -EINVAL);
		EXPECT_ERR(vol, sim_discard(vol, 0, bad[i].off, bad[i].len), -EINVAL);
		EXPECT_ERR(vol, sim_read_durable(vol, 0, bad[i].off, buf, bad[i].len), -EINVAL);
	}
	/* The last sector itself is fine. */
	tu_write_ok(vol, 0, DISK - SS, SS, 9, SIM_FUA);
	cr_assert(tu_read_is(vol, 0, DISK - SS, SS, 9));
	expect_unchanged(vol);
	sim_volume_close(vol);
}

Test(badinput, write_flags_and_buffers)
{
	sim_volume *vol = vol2();
	uint8_t buf[SS] = { 0 };
	EXPECT_ERR(vol, sim_write(vol, 0, 0, buf, SS, 2), -EINVAL);
	EXPECT_ERR(vol, sim_write(vol, 0, 0, buf, SS, SIM_FUA | 0x80000000u), -EINVAL);
	EXPECT_ERR(vol, sim_write(vol, 0, 0, NULL, SS, 0), -EINVAL);
	EXPECT_ERR(vol, sim_read(vol, 0, 0, NULL, SS), -EINVAL);
	EXPECT_ERR(vol, sim_read_durable(vol, 0, 0, NULL, SS), -EINVAL);
	expect_unchanged(vol);
	sim_volume_close(vol);
}

Test(badinput, crash_specs)
{
	sim_volume *vol = vol2();
	struct sim_crash_spec s = { .policy = (enum sim_crash_policy)5 };
	EXPECT_ERR(vol, sim_disk_crash(vol, 0, &s, NULL), -EINVAL);
	EXPECT_ERR(vol, sim_volume_crash(vol, &s, NULL), -EINVAL);
	s.policy = (enum sim_crash_policy)-1;
	EXPECT_ERR(vol, sim_disk_crash(vol, 0, &s, NULL), -EINVAL);
	s = (struct sim_crash_spec){ .policy = SIM_CRASH_RANDOM, .keep_probability = 1.5 };
	EXPECT_ERR(vol, sim_disk_crash(vol, 0, &s, NULL), -EINVAL);
	s = (struct sim_crash_spec){ .policy = SIM_CRASH_RANDOM, .keep_probability = -0.1 };
	EXPECT_ERR(vol, sim_disk_crash(vol, 0, &s, NULL), -EINVAL);
	s = (struct sim_crash_spec){ .policy = SIM_CRASH_RANDOM, .tear_probability = 2 };
	EXPECT_ERR(vol, sim_volume_crash(vol, &s, NULL), -EINVAL);
	s = (struct sim_crash_spec){ .policy = SIM_CRASH_RANDOM, .tear_probability = NAN };
	EXPECT_ERR(vol, sim_disk_crash(vol, 0, &s, NULL), -EINVAL);
	s = (struct sim_crash_spec){ .policy = SIM_CRASH_EXPLICIT, .npicks = 3 };
	EXPECT_ERR(vol, sim_disk_crash(vol, 0, &s, NULL), -EINVAL);
	expect_unchanged(vol);
	sim_volume_close(vol);
}

static void t_fault_add(void)
{
	sim_volume *vol = vol2();
	const uint64_t nsectors = DISK / SS;
	struct sim_fault ok = { .kind = SIM_FAULT_FLAKY, .disk = SIM_ANY_DISK,
				.sector = SIM_ANY_SECTOR };
	struct sim_fault f;
	f = ok, f.disk = 2;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.disk = -2;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.disk = 64;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.sector = (int64_t)nsectors;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.disk = 1, f.sector = INT64_MAX;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.sector = -2;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.probability = 1.5;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.probability = -0.5;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.probability = NAN;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.kind = SIM_FAULT_NONE;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.kind = SIM_FAULT_KIND_COUNT;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	f = ok, f.kind = SIM_FAULT_FLIP_ON_WRITE, f.bits = 4097;
	EXPECT_ERR(vol, sim_fault_add(vol, &f), -EINVAL);
	/* None of those was added: requests still work. */
	expect_unchanged(vol);
	/* The last sector is a valid filter. */
	f = ok, f.sector = (int64_t)nsectors - 1;
	cr_assert_eq(sim_fault_add(vol, &f), 0);
	uint8_t buf[SS];
	cr_assert_eq(sim_read(vol, 0, DISK - SS, buf, SS), -EIO);
	cr_assert_eq(sim_read(vol, 0, 0, buf, SS), 0);
	sim_volume_close(vol);
}

static void t_immediate_faults_out_of_range(void)
{
	sim_volume *vol = vol2();
	const uint64_t nsectors = DISK / SS;
	EXPECT_ERR(vol, sim_disk_flip_bit(vol, 0, nsectors, 0), -EINVAL);
	EXPECT_ERR(vol, sim_disk_flip_bit(vol, 0, 0, SS * 8), -EINVAL);
	EXPECT_ERR(vol, sim_disk_add_latent(vol, 0, nsectors, 1), -EINVAL);
	EXPECT_ERR(vol, sim_disk_add_latent(vol, 0, nsectors - 1, 2), -EINVAL);
	EXPECT_ERR(vol, sim_disk_add_latent(vol, 0, 0, 0), -EINVAL);
	EXPECT_ERR(vol, sim_disk_add_latent(vol, 0, UINT64_MAX, 2), -EINVAL);
	expect_unchanged(vol);
	sim_volume_close(vol);
}

Test(badinput, requests_to_a_lost_disk)
{
	sim_volume *vol = vol2();
	cr_assert_eq(sim_disk_lose(vol, 1), 0);
	uint8_t buf[SS] = { 0 };
	EXPECT_ERR(vol, sim_read(vol, 1, 0, buf, SS), -EIO);
	EXPECT_ERR(vol, sim_write(vol, 1, 0, buf, SS, 0), -EIO);
	EXPECT_ERR(vol, sim_write(vol, 1, 0, buf, SS, SIM_FUA), -EIO);
	EXPECT_ERR(vol, sim_flush(vol, 1), -EIO);
	EXPECT_ERR(vol, sim_discard(vol, 1, 0, SS), -EIO);
	/* Failed requests are logged with their status. */
	const struct sim_io *io = tu_log_last(vol, SIM_IO_DISCARD);
	cr_assert_not_null(io);
	cr_assert_eq(io->status, -EIO);
	cr_assert_eq(io->disk, 1);
	/* Argument errors still come first. */
	EXPECT_ERR(vol, sim_read(vol, 1, 1, buf, SS), -EINVAL);
	expect_unchanged(vol);
	sim_volume_close(vol);
}

/* ---- sim_volume_open ---- */

static void expect_open_fails(const struct sim_volume_config *cfg, int want, const char *what)
{
	char err[256] = "";
	sim_volume *vol = (sim_volume *)1;
	int r = sim_volume_open(cfg, &vol, err, sizeof(err));
	cr_assert_eq(r, want, "%s: %d (%s), want %d", what, r, err, want);
	cr_assert_null(vol, "%s", what);
	cr_assert_neq(err[0], '\0', "%s: no message", what);
	/* A NULL err buffer is allowed. */
	cr_assert_eq(sim_volume_open(cfg, &vol, NULL, 0), want, "%s", what);
	cr_assert_null(vol);
}

Test(badinput, volume_geometry)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 2, UINT64_C(1) << 20, 1);
	cfg.disk[1].sector_size = 1000;
	expect_open_fails(&cfg, -EINVAL, "sector size 1000");
	cfg.disk[1].sector_size = 2048;
	expect_open_fails(&cfg, -EINVAL, "sector size 2048");
	cfg.disk[1].sector_size = 512;
	cfg.disk[1].size = 0;
	expect_open_fails(&cfg, -EINVAL, "size 0");
	cfg.disk[1].size = (UINT64_C(1) << 20) + 512;
	cfg.disk[1].sector_size = 4096;
	expect_open_fails(&cfg, -EINVAL, "size not a multiple of the sector");
	cfg.disk[1].size = 100;
	cfg.disk[1].sector_size = 512;
	expect_open_fails(&cfg, -EINVAL, "size smaller than a sector");
	cfg.disk[1].size = SIM_MAX_DISK_BYTES + 4096;
	cfg.disk[1].sector_size = 4096;
	expect_open_fails(&cfg, -EINVAL, "size over SIM_MAX_DISK_BYTES");
	cfg.disk[1].size = UINT64_MAX - 4095;
	expect_open_fails(&cfg, -EINVAL, "size near UINT64_MAX");

	sim_config_init(&cfg, 0, UINT64_C(1) << 20, 1);
	expect_open_fails(&cfg, -EINVAL, "no disks");
	sim_config_init(&cfg, SIM_MAX_DISKS + 1, UINT64_C(1) << 20, 1);
	expect_open_fails(&cfg, -EINVAL, "65 disks");
	cfg.ndisks = UINT32_MAX;
	expect_open_fails(&cfg, -EINVAL, "UINT_MAX disks");

	sim_config_init(&cfg, 1, UINT64_C(1) << 20, 1);
	cfg.disk[0].read_only = true;
	expect_open_fails(&cfg, -EINVAL, "read-only memory disk");

	/* The limits themselves are fine: 1 PiB, 64 disks. */
	sim_config_init(&cfg, SIM_MAX_DISKS, SIM_MAX_DISK_BYTES, 1);
	sim_volume *vol;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sim_volume_ndisks(vol), SIM_MAX_DISKS);
	cr_assert_eq(sim_disk_size(vol, SIM_MAX_DISKS - 1), SIM_MAX_DISK_BYTES);
	tu_write_ok(vol, SIM_MAX_DISKS - 1, SIM_MAX_DISK_BYTES - 4096, 4096, 5, SIM_FUA);
	cr_assert(tu_read_is(vol, SIM_MAX_DISKS - 1, SIM_MAX_DISK_BYTES - 4096, 4096, 5));
	sim_volume_close(vol);
}

Test(badinput, image_paths)
{
	char *dir = tu_tmpdir();
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, UINT64_C(1) << 20, 1);
	char *missing = tu_path(dir, "no/such/dir/x.img");
	cfg.disk[0].image_path = missing;
	expect_open_fails(&cfg, -ENOENT, "image in a missing directory");
	cfg.disk[0].image_path = dir;
	expect_open_fails(&cfg, -EISDIR, "image that is a directory");
	cfg.disk[0].read_only = true;
	cfg.disk[0].size = 0;
	expect_open_fails(&cfg, -EINVAL, "read-only image that is a directory");
	char *sub = tu_path(dir, "sub");
	cr_assert_eq(mkdir(sub, 0755), 0);
	cfg.disk[0].image_path = sub;
	cfg.disk[0].read_only = false;
	cfg.disk[0].create = true;
	expect_open_fails(&cfg, -EISDIR, "image that is a directory, create");
	/* A failed open on a later disk cleans up the earlier ones (ASan checks). */
	char *good = tu_path(dir, "good.img");
	sim_config_init(&cfg, 2, UINT64_C(1) << 20, 1);
	cfg.disk[0].image_path = good;
	cfg.disk[1].image_path = missing;
	expect_open_fails(&cfg, -ENOENT, "second disk's image missing");
	free(good);
	free(sub);
	free(missing);
	tu_rmdir(dir);
}

Test(badinput, unaligned_or_zero_length)
{
	t_unaligned_offset_or_length();
	t_zero_length();
}

Test(badinput, faults_out_of_range)
{
	t_fault_add();
	t_immediate_faults_out_of_range();
}
