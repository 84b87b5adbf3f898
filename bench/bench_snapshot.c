/*
 * bench_snapshot.c - the figures of issue 7, each beside its baseline in the
 * same run:
 *   bench-snapshot create     the time of `ref_snapshot` (commit included) of a
 *                             subvolume holding 1,000, 10,000 and 100,000 files;
 *                             baseline: the same at 1,000 files (flat is the goal:
 *                             a snapshot copies one block whatever the size)
 *   bench-snapshot cow        bytes written to the disk by a committed 4 KiB
 *                             overwrite in a 64 MiB file that a snapshot shares,
 *                             per byte overwritten; baseline: the same overwrite
 *                             with no snapshot
 *   bench-snapshot quota      the time of 20 commits of 100 overwritten 4 KiB
 *                             files each in a subvolume of 2,000 that a snapshot
 *                             shares, with quota groups on (every changed extent's
 *                             back references walked twice at commit); baseline:
 *                             the same with quotas off
 * Nothing is asserted; the figures go to stdout.
 */
#include "bench/benchutil.h"
#include "ref/vfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ok(ref_fs *fs, long r, const char *what)
{
	if (r < 0)
		bench_die(what, ref_error(fs));
}

/* Best of 3 snapshot times (seconds) of a subvolume with n files. */
static double snapshot_time(unsigned n)
{
	sim_volume *vol;
	ref_fs *fs = bench_fresh(&vol, 2048 * MIB, 0);
	char path[64];
	for (unsigned d = 0; d < (n + 999) / 1000; d++) {
		snprintf(path, sizeof(path), "/d%u", d);
		ok(fs, ref_mkdir(fs, path, 0755), "mkdir");
	}
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/d%u/f%u", i / 1000, i);
		ok(fs, ref_create(fs, path, 0644), "create");
		ok(fs, ref_write(fs, path, "x", 1, 0), "write");
	}
	ok(fs, ref_sync(fs), "sync");
	double best = 1e9;
	for (int k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "/snap%d", k);
		double t0 = bench_now();
		ok(fs, ref_snapshot(fs, "/", path, false, NULL), "snapshot");
		double t = bench_now() - t0;
		if (t < best)
			best = t;
	}
	ok(fs, ref_umount(fs), "umount");
	sim_volume_close(vol);
	return best;
}

static uint64_t written(sim_volume *vol)
{
	struct sim_disk_stats st;
	sim_disk_stats(vol, 0, &st);
	return st.bytes_written;
}

/* Mean bytes written per committed 4 KiB overwrite, over 32 overwrites at
 * spread offsets, with the file shared with a snapshot or not. */
static double overwrite_cost(bool snapshot)
{
	sim_volume *vol;
	ref_fs *fs = bench_fresh(&vol, 512 * MIB, 0);
	uint8_t *buf = malloc(MIB);
	if (!buf)
		bench_die("memory", "out of memory");
	memset(buf, 0xab, MIB);
	ok(fs, ref_create(fs, "/f", 0644), "create");
	for (uint64_t i = 0; i < 64; i++)
		ok(fs, ref_write(fs, "/f", buf, MIB, i * MIB), "write");
	ok(fs, ref_sync(fs), "sync");
	double total = 0;
	for (int k = 0; k < 32; k++) {
		if (snapshot) { /* each overwrite meets a freshly shared tree */
			char path[32];
			snprintf(path, sizeof(path), "/snap%d", k);
			ok(fs, ref_snapshot(fs, "/", path, true, NULL), "snapshot");
		}
		uint64_t before = written(vol);
		ok(fs, ref_write(fs, "/f", buf, 4096, (uint64_t)k * 2 * MIB + 4096), "overwrite");
		ok(fs, ref_sync(fs), "sync");
		total += (double)(written(vol) - before);
	}
	free(buf);
	ok(fs, ref_umount(fs), "umount");
	sim_volume_close(vol);
	return total / 32 / 4096;
}

/* Best of 3 times (seconds) of 20 commits of 100 rewritten files each, the
 * tree shared with a snapshot, quotas on or off. */
static double commit_time(bool quota)
{
	double best = 1e9;
	for (int rep = 0; rep < 3; rep++) {
		sim_volume *vol;
		ref_fs *fs = bench_fresh(&vol, 512 * MIB, 0);
		static uint8_t buf[4096];
		char path[64];
		for (unsigned i = 0; i < 2000; i++) {
			snprintf(path, sizeof(path), "/f%u", i);
			ok(fs, ref_create(fs, path, 0644), "create");
			ok(fs, ref_write(fs, path, buf, sizeof(buf), 0), "write");
		}
		if (quota)
			ok(fs, ref_qgroup_enable(fs), "quota enable");
		ok(fs, ref_snapshot(fs, "/", "/snap", true, NULL), "snapshot");
		double t0 = bench_now();
		for (unsigned c = 0; c < 20; c++) {
			for (unsigned i = 0; i < 100; i++) {
				snprintf(path, sizeof(path), "/f%u", (c * 100 + i * 7) % 2000);
				buf[0] = (uint8_t)c;
				ok(fs, ref_write(fs, path, buf, sizeof(buf), 0), "overwrite");
			}
			ok(fs, ref_sync(fs), "sync");
		}
		double t = bench_now() - t0;
		if (t < best)
			best = t;
		ok(fs, ref_umount(fs), "umount");
		sim_volume_close(vol);
	}
	return best;
}

int main(int argc, char **argv)
{
	bench_prog = "bench-snapshot";
	if (argc == 2 && !strcmp(argv[1], "create")) {
		double base = snapshot_time(1000);
		printf("snapshot of 1,000 files: %.2f ms (baseline)\n", base * 1e3);
		for (unsigned n = 10000; n <= 100000; n *= 10) {
			double t = snapshot_time(n);
			printf("snapshot of %u files: %.2f ms, %.2fx the baseline (goal: flat, about 1x)\n",
			       n, t * 1e3, t / base);
		}
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "cow")) {
		double plain = overwrite_cost(false), shared = overwrite_cost(true);
		printf("4 KiB overwrite, committed: %.1f bytes written per byte without a snapshot, "
		       "%.1f with one (%.2fx)\n",
		       plain, shared, shared / plain);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "quota")) {
		double plain = commit_time(false), quota = commit_time(true);
		printf("20 commits of 100 rewritten 4 KiB files, shared with a snapshot: %.1f ms with "
		       "quota groups, %.1f ms without (%.2fx)\n",
		       quota * 1e3, plain * 1e3, quota / plain);
		return 0;
	}
	fprintf(stderr, "usage: bench-snapshot create | cow | quota\n");
	return 2;
}
