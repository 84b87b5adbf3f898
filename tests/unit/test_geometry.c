/*
 * test_geometry.c - volumes of 1 and 16 disks with 512- and 4096-byte sectors,
 * and volumes mixing sector sizes: addressing, alignment and per-disk state.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DISK (UINT64_C(8) << 20)

static void exercise(unsigned ndisks, uint32_t ss)
{
	sim_volume *vol = tu_open(ndisks, DISK, ss, 1000 + ndisks + ss);
	cr_assert_eq(sim_volume_ndisks(vol), ndisks);
	const uint64_t last = DISK - ss;
	for (unsigned d = 0; d < ndisks; d++) {
		cr_assert_eq(sim_disk_size(vol, d), DISK);
		cr_assert_eq(sim_disk_sector_size(vol, d), ss);
		/* First sector, last sector, a multi-sector write; distinct per disk. */
		tu_write_ok(vol, d, 0, ss, 100 + d, 0);
		tu_write_ok(vol, d, last, ss, 200 + d, 0);
		tu_write_ok(vol, d, 3 * (uint64_t)ss, 5 * (size_t)ss, 300 + d, SIM_FUA);
	}
	cr_assert_eq(sim_disk_size(vol, ndisks), 0, "no disk past the last");
	uint8_t *buf = malloc(2 * (size_t)ss);
	cr_assert_eq(sim_read(vol, ndisks - 1, last, buf, 2 * (size_t)ss), -EINVAL);
	cr_assert_eq(sim_read(vol, ndisks - 1, ss / 2, buf, ss), -EINVAL, "half a sector");
	free(buf);
	/* Flush the even disks, then crash every disk losing volatile writes. */
	for (unsigned d = 0; d < ndisks; d += 2)
		cr_assert_eq(sim_flush(vol, d), 0);
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	struct sim_crash_result *res = calloc(ndisks, sizeof(*res));
	cr_assert_eq(sim_volume_crash(vol, &none, res), 0);
	for (unsigned d = 0; d < ndisks; d++) {
		bool flushed = d % 2 == 0;
		cr_assert_eq(res[d].pending, flushed ? 0 : 2, "disk %u", d);
		cr_assert(tu_read_is(vol, d, 0, ss, flushed ? 100 + d : 0), "disk %u", d);
		cr_assert(tu_read_is(vol, d, last, ss, flushed ? 200 + d : 0), "disk %u", d);
		cr_assert(tu_read_is(vol, d, 3 * (uint64_t)ss, 5 * (size_t)ss, 300 + d),
			  "disk %u: FUA", d);
		cr_assert(tu_read_is(vol, d, ss, 2 * (size_t)ss, 0), "disk %u: untouched", d);
		cr_assert_eq(sim_disk_epoch(vol, d), flushed ? 1 : 0);
	}
	free(res);
	cr_assert_eq(tu_log_count(vol, SIM_IO_CRASH), ndisks);
	sim_volume_close(vol);
}

static void t_one_disk_512(void)
{
	exercise(1, 512);
}

static void t_one_disk_4096(void)
{
	exercise(1, 4096);
}

static void t_sixteen_disks_512(void)
{
	exercise(16, 512);
}

static void t_sixteen_disks_4096(void)
{
	exercise(16, 4096);
}

Test(geometry, default_sector_size_is_4096)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, DISK, 1);
	cfg.disk[0].sector_size = 0;
	sim_volume *vol;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sim_disk_sector_size(vol, 0), 4096);
	uint8_t buf[512];
	cr_assert_eq(sim_read(vol, 0, 0, buf, 512), -EINVAL);
	sim_volume_close(vol);
}

Test(geometry, mixed_sector_sizes_and_sizes_in_one_volume)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 16, DISK, 5);
	cfg.latency = (struct sim_latency){ 0 };
	for (unsigned d = 0; d < 16; d++) {
		cfg.disk[d].sector_size = d % 2 ? 512 : 4096;
		cfg.disk[d].size = DISK + (uint64_t)d * 4096;
	}
	sim_volume *vol;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	uint8_t buf[4096];
	for (unsigned d = 0; d < 16; d++) {
		uint32_t ss = d % 2 ? 512 : 4096;
		uint64_t size = DISK + (uint64_t)d * 4096;
		cr_assert_eq(sim_disk_size(vol, d), size);
		cr_assert_eq(sim_disk_sector_size(vol, d), ss);
		/* 512-byte offsets are fine on 512-byte disks only. */
		cr_assert_eq(sim_read(vol, d, 512, buf, 512), ss == 512 ? 0 : -EINVAL, "disk %u", d);
		tu_write_ok(vol, d, size - 4096, 4096, 50 + d, 0);
		if (ss == 512) {
			/* A torn 4 KiB write on a 512-byte disk keeps sectors, not pages. */
			size_t n;
			const struct sim_pending *p = sim_disk_pending(vol, d, &n);
			cr_assert_eq(n, 1);
			cr_assert_eq(p[0].nsectors, 8);
			cr_assert_eq(p[0].sector, (size - 4096) / 512);
			struct sim_crash_pick pick = { .seq = p[0].seq, .first = 7, .count = 1 };
			struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick,
						       .npicks = 1 };
			cr_assert_eq(sim_disk_crash(vol, d, &spec, NULL), 0);
			cr_assert(tu_durable_slice_is(vol, d, size - 4096, 4096, 50 + d, size - 512,
						      512));
			cr_assert(tu_durable_is(vol, d, size - 4096, 4096 - 512, 0));
		} else {
			cr_assert_eq(sim_flush(vol, d), 0);
			cr_assert(tu_durable_is(vol, d, size - 4096, 4096, 50 + d));
		}
	}
	sim_volume_close(vol);
}

Test(geometry, one_disk)
{
	t_one_disk_512();
	t_one_disk_4096();
}

Test(geometry, sixteen_disks)
{
	t_sixteen_disks_512();
	t_sixteen_disks_4096();
}
