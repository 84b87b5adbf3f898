/*
 * bench_raid.c - the volume manager's figures (`bench-raid`, run by `make
 * bench`), every one a ratio against a baseline measured in the same run:
 *
 *   profiles  write (1 MiB calls, committed) and cold read (a new open) of
 *             the same data on 4 memory-backed disks, per profile, against
 *             the single profile on the same 4 disks;
 *   scrub     scrub throughput (bytes of every copy read and verified per
 *             second), per profile, against that profile's own cold read;
 *   rebuild   the time of a device replace (a lost disk of RAID1 and RAID5
 *             rebuilt onto a spare) for 64, 128 and 256 MiB of data, against
 *             the 64 MiB one (it should grow with the data, about linearly);
 *   balance   the time of a conversion (`btrfs balance -dconvert=raid5
 *             -mconvert=raid1c3`) of 64 and 256 MiB of RAID1 data on 4 disks,
 *             against writing the same data into RAID5 from scratch (the
 *             conversion reads it, verifies it and writes it: about 1-2x).
 *
 * Each figure is the best of 3 rounds on a fresh volume.
 */
#include "bench/benchutil.h"
#include "ref/mkfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NDISKS 4
#define DISK_MIB 1024
#define ROUNDS 3

static const uint64_t profiles[] = {
	0,
	BTRFS_BLOCK_GROUP_RAID0,
	BTRFS_BLOCK_GROUP_RAID1,
	BTRFS_BLOCK_GROUP_RAID1C3,
	BTRFS_BLOCK_GROUP_RAID1C4,
	BTRFS_BLOCK_GROUP_RAID10,
	BTRFS_BLOCK_GROUP_RAID5,
	BTRFS_BLOCK_GROUP_RAID6,
};

/* Writes `mib` MiB to /f in 1 MiB calls and unmounts (the commit counted). */
static double write_file(ref_fs *fs, unsigned mib)
{
	uint8_t *buf = malloc(MIB);
	if (!buf)
		bench_die("write", "out of memory");
	for (size_t i = 0; i < MIB; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	double t = bench_now();
	if (ref_create(fs, "/f", 0644) < 0)
		bench_die("create", ref_error(fs));
	for (unsigned i = 0; i < mib; i++) {
		buf[0] = (uint8_t)i; /* no two MiB alike */
		if (ref_write(fs, "/f", buf, MIB, (uint64_t)i * MIB) < 0)
			bench_die("write", ref_error(fs));
	}
	if (ref_umount(fs))
		bench_die("umount", "the commit failed");
	t = bench_now() - t;
	free(buf);
	return t;
}

static double read_file(sim_volume *vol, unsigned mib)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	double t = bench_now();
	if (ref_open(vol, &oo, &fs, err, sizeof(err)))
		bench_die("open", err);
	struct ref_ino ino;
	if (ref_lookup_path(fs, "/f", false, &ino))
		bench_die("lookup", ref_error(fs));
	uint8_t *buf = malloc(MIB);
	for (unsigned i = 0; i < mib; i++)
		if (ref_pread(fs, &ino, buf, MIB, (uint64_t)i * MIB) != (ssize_t)MIB)
			bench_die("read", ref_error(fs));
	ref_close(fs);
	free(buf);
	return bench_now() - t;
}

/* Scrub of the whole volume: seconds, and the bytes it read. */
static double scrub(sim_volume *vol, uint64_t *bytes)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	if (ref_open(vol, &oo, &fs, err, sizeof(err)))
		bench_die("open", err);
	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t n;
	double t = bench_now();
	if (ref_scrub(fs, true, devs, &n))
		bench_die("scrub", ref_error(fs));
	t = bench_now() - t;
	*bytes = 0;
	for (size_t i = 0; i < n; i++)
		*bytes += devs[i].data_bytes_scrubbed + devs[i].tree_bytes_scrubbed;
	ref_close(fs);
	return t;
}

static double best(double a, double b) { return a < b ? a : b; }

static void profiles_bench(unsigned mib)
{
	double base_w = 0, base_r = 0;
	printf("4 memory disks, %u MiB written in 1 MiB calls and committed, read back cold; scrub of the volume (best of %d)\n",
	       mib, ROUNDS);
	for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++) {
		double w = 1e9, r = 1e9, s = 1e9;
		uint64_t scrubbed = 0;
		for (int round = 0; round < ROUNDS; round++) {
			sim_volume *vol;
			ref_fs *fs = bench_fresh_profile(&vol, NDISKS, DISK_MIB * MIB, profiles[p]);
			w = best(w, write_file(fs, mib));
			r = best(r, read_file(vol, mib));
			s = best(s, scrub(vol, &scrubbed));
			sim_volume_close(vol);
		}
		if (!p) {
			base_w = w;
			base_r = r;
		}
		printf("%-8s write %7.1f MiB/s (%.2fx single)  read %7.1f MiB/s (%.2fx single)  scrub %7.1f MiB/s of copies (%.2fx its read)\n",
		       ref_profile_name(profiles[p]), mib / w, base_w / w, mib / r, base_r / r,
		       (double)scrubbed / MIB / s, (double)scrubbed / MIB / s / (mib / r));
	}
}

/* A disk of a volume lost and rebuilt onto a spare: the replace's time. */
static double rebuild_time(uint64_t prof, unsigned mib)
{
	double best_t = 1e9;
	for (int round = 0; round < ROUNDS; round++) {
		sim_volume *vol;
		ref_fs *fs = bench_fresh_profile(&vol, NDISKS, DISK_MIB * MIB, prof);
		write_file(fs, mib);
		sim_disk_lose(vol, 1);
		sim_disk_replace(vol, 1); /* a blank disk in its place: the spare */
		struct ref_mount_opts mo = { .open = { .super_mirror = -1, .degraded = true, .spares = true } };
		char err[256];
		if (ref_mount(vol, &mo, &fs, err, sizeof(err)))
			bench_die("degraded mount", err);
		struct ref_replace_stats st;
		double t = bench_now();
		if (ref_device_replace(fs, 2, 1, false, &st))
			bench_die("replace", ref_error(fs));
		t = bench_now() - t;
		if (ref_umount(fs))
			bench_die("umount", "the commit failed");
		sim_volume_close(vol);
		best_t = best(best_t, t);
	}
	return best_t;
}

static void rebuild_bench(void)
{
	static const uint64_t profs[] = { BTRFS_BLOCK_GROUP_RAID1, BTRFS_BLOCK_GROUP_RAID5 };
	for (size_t p = 0; p < 2; p++) {
		double base = 0;
		for (unsigned mib = 64; mib <= 256; mib *= 2) {
			double t = rebuild_time(profs[p], mib);
			if (mib == 64)
				base = t;
			printf("rebuild of a lost disk, %s on 4 disks, %u MiB of data: %.1f ms, %.2fx the 64 MiB one (goal: about linear)\n",
			       ref_profile_name(profs[p]), mib, t * 1e3, t / base);
		}
	}
}

/* 64 and 256 MiB of RAID1 data converted to RAID5 (metadata to RAID1C3),
 * against the write of the same data into a fresh RAID5 volume. */
static void balance_bench(void)
{
	for (unsigned mib = 64; mib <= 256; mib *= 4) {
		double conv = 1e9, fresh = 1e9;
		uint64_t moved = 0;
		for (int round = 0; round < ROUNDS; round++) {
			sim_volume *vol;
			ref_fs *fs = bench_fresh_profile(&vol, NDISKS, DISK_MIB * MIB, BTRFS_BLOCK_GROUP_RAID5);
			fresh = best(fresh, write_file(fs, mib));
			sim_volume_close(vol);
			fs = bench_fresh_profile(&vol, NDISKS, DISK_MIB * MIB, BTRFS_BLOCK_GROUP_RAID1);
			write_file(fs, mib);
			char err[256];
			struct ref_mount_opts mo = { .open = { .super_mirror = -1 } };
			if (ref_mount(vol, &mo, &fs, err, sizeof(err)))
				bench_die("mount", err);
			struct ref_balance b;
			memset(&b, 0, sizeof(b));
			b.flags = BTRFS_BALANCE_TYPE_MASK;
			b.data.flags = b.meta.flags = b.sys.flags = BTRFS_BALANCE_ARGS_CONVERT;
			b.data.target = BTRFS_BLOCK_GROUP_RAID5;
			b.meta.target = b.sys.target = BTRFS_BLOCK_GROUP_RAID1C3;
			struct ref_balance_stats st;
			double t = bench_now();
			if (ref_balance(fs, &b, &st))
				bench_die("balance", ref_error(fs));
			if (ref_umount(fs))
				bench_die("umount", "the commit failed");
			conv = best(conv, bench_now() - t);
			moved = st.data_bytes;
			sim_volume_close(vol);
		}
		printf("balance -dconvert=raid5 -mconvert=raid1c3 of %u MiB RAID1 on 4 disks: %.1f ms (%llu MiB moved), %.2fx writing it into RAID5 (%.1f ms)\n",
		       mib, conv * 1e3, (unsigned long long)(moved / MIB), conv / fresh, fresh * 1e3);
	}
}

int main(int argc, char **argv)
{
	bench_prog = "bench-raid";
	if (argc >= 2 && !strcmp(argv[1], "profiles")) {
		unsigned mib = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 256;
		profiles_bench(mib ? mib : 256);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "rebuild")) {
		rebuild_bench();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "balance")) {
		balance_bench();
		return 0;
	}
	fprintf(stderr, "usage: bench-raid profiles [MIB] | rebuild | balance\n");
	return 2;
}
