/* benchutil.c - see benchutil.h. */
#include "bench/benchutil.h"
#include "ref/mkfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *bench_prog = "bench";

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bench_die(const char *what, const char *why)
{
	fprintf(stderr, "%s: %s: %s\n", bench_prog, what, why);
	exit(1);
}

/* profile < 0: mkfs's defaults (single data, DUP metadata). */
static ref_fs *fresh(sim_volume **vol, unsigned ndisks, uint64_t size, int64_t profile,
		     uint64_t dirty_limit)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, ndisks, size, 1);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	char err[256];
	if (sim_volume_open(&cfg, vol, err, sizeof(err)))
		bench_die("volume", err);
	struct ref_mkfs_opts o;
	ref_mkfs_defaults(&o);
	o.seed = 1;
	o.time = 1700000000;
	if (profile >= 0)
		o.data_profile = o.meta_profile = (uint64_t)profile;
	if (ref_mkfs(*vol, &o, NULL, err, sizeof(err)))
		bench_die("mkfs", err);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .dirty_limit = dirty_limit };
	ref_fs *fs;
	if (ref_mount(*vol, &mo, &fs, err, sizeof(err)))
		bench_die("mount", err);
	return fs;
}

ref_fs *bench_fresh(sim_volume **vol, uint64_t size, uint64_t dirty_limit)
{
	return fresh(vol, 1, size, -1, dirty_limit);
}

ref_fs *bench_fresh_profile(sim_volume **vol, unsigned ndisks, uint64_t size, uint64_t profile)
{
	return fresh(vol, ndisks, size, (int64_t)profile, 0);
}
