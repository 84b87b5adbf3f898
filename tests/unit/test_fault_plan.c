/*
 * test_fault_plan.c - fault plans (faults/plan.h) and the fault points of ref
 * and sim (faults/points.h).
 *
 * faults_plan: parsing good and bad plans (FILE:LINE messages), the canonical
 * text and its round trip, arming and disarming, the nth / count / p / errno
 * semantics on sim's requests, determinism from the seed.
 *
 * faults_points: every point of the catalogue in turn.  A workload (writes,
 * fsyncs, reads, overwrites, truncate, rename, unlink, fallocate, a file large
 * enough to need a new data chunk, umount) runs once with the point armed at
 * p=0 to count its hits (a point the workload never hits fails the test), then
 * with nth=1, nth=3, in the second extent of the write that spans two data
 * chunks, the middle hit and the last hit.  After each run the
 * volume is checked without faults, as it is and as its durable media alone
 * (the disk replugged after power loss, or after it vanished): ref_check is
 * clean, every file holds one of the contents it had from its last successful
 * fsync (or sync, or umount) on, and the file system mounts and takes a write.
 */
#include "wrutil.h"
#include "testutil.h"
#include "faults/plan.h"
#include "faults/points.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(faults_plan);
TestSuite(faults_points, .timeout = 600);

/* ---- Helpers ---- */

static struct fault_plan *parse_ok(const char *text)
{
	struct fault_plan *p;
	char err[256] = "";
	int r = fault_plan_parse_text("t.plan", text, strlen(text), &p, err, sizeof(err));
	cr_assert_eq(r, 0, "parse '%s': %d %s", text, r, err);
	return p;
}

/* Parses, asserts failure with EINVAL and a message starting with want. */
static void parse_bad(const char *text, const char *want)
{
	struct fault_plan *p = (void *)1;
	char err[256] = "";
	int r = fault_plan_parse_text("t.plan", text, strlen(text), &p, err, sizeof(err));
	cr_assert_eq(r, -EINVAL, "parse '%s' = %d (%s), expected EINVAL", text, r, err);
	cr_assert_null(p);
	cr_assert(!strncmp(err, want, strlen(want)), "parse '%s': message '%s', expected '%s...'",
		  text, err, want);
}

static char *format(const struct fault_plan *p)
{
	char *t;
	cr_assert_eq(fault_plan_format(p, &t), 0);
	return t;
}

/* The canonical text of a one-plan text. */
static void expect_canonical(const char *text, const char *want)
{
	struct fault_plan *p = parse_ok(text);
	char *t = format(p);
	cr_assert_str_eq(t, want, "format of '%s'", text);
	/* and the canonical text is a fixed point */
	struct fault_plan *q = parse_ok(t);
	char *t2 = format(q);
	cr_assert_str_eq(t2, t);
	free(t);
	free(t2);
	fault_plan_free(p);
	fault_plan_free(q);
}

static void arm_ok(const char *text, uint64_t seed, sim_volume *vol)
{
	struct fault_plan *p = parse_ok(text);
	char err[256] = "";
	int r = fault_plan_arm(p, seed, vol, err, sizeof(err));
	cr_assert_eq(r, 0, "arm '%s': %d %s", text, r, err);
	fault_plan_free(p); /* the armed plan keeps its own copy */
}

static uint64_t hits_of(const char *point)
{
	size_t n;
	const struct fault_count *c = fault_plan_counts(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].point, point))
			return c[i].hits;
	return 0;
}

/* ---- Parsing ---- */

Test(faults_plan, parse_good)
{
	const char *text = "# a plan\n"
			   "\n"
			   "ref/commit/flush nth=2 errno=EIO   # the second flush\n"
			   "  ref/alloc/tree-block p=0.25 count=3 errno=ENOMEM\n"
			   "sim/write\n"
			   "sim flip-at-rest,disk=0,after=100,bits=3\r\n"
			   "ref/io/read count=2\n"
			   "sim device-loss,disk=0,after=5000";
	struct fault_plan *p = parse_ok(text);
	cr_assert_eq(fault_plan_npoints(p), 4);
	cr_assert_eq(fault_plan_nsims(p), 2);
	char *t = format(p);
	cr_assert_str_eq(t, "ref/commit/flush nth=2 errno=EIO\n"
			    "ref/alloc/tree-block p=0.25 count=3 errno=ENOMEM\n"
			    "sim/write errno=EIO\n"
			    "sim flip-at-rest,disk=0,after=100,bits=3\n"
			    "ref/io/read nth=1 count=2 errno=EIO\n"
			    "sim device-loss,disk=0,after=5000\n");
	free(t);
	fault_plan_free(p);
	/* Empty plans and comments only. */
	p = parse_ok("");
	cr_assert_eq(fault_plan_npoints(p) + fault_plan_nsims(p), 0);
	t = format(p);
	cr_assert_str_eq(t, "");
	free(t);
	fault_plan_free(p);
	p = parse_ok("# nothing\n   \n\t# still nothing\n");
	cr_assert_eq(fault_plan_npoints(p) + fault_plan_nsims(p), 0);
	fault_plan_free(p);
}

Test(faults_plan, parse_errors)
{
	parse_bad("ref/nope nth=1", "t.plan:1: unknown fault point 'ref/nope'");
	parse_bad("# ok\nref/io/read\nrefx", "t.plan:3: unknown fault point 'refx'");
	parse_bad("ref/io/read nth=0", "t.plan:1: nth=0: the hit to fail is a whole number from 1");
	parse_bad("ref/io/read nth=-1", "t.plan:1: nth=-1:");
	parse_bad("ref/io/read nth=abc", "t.plan:1: nth=abc:");
	parse_bad("ref/io/read nth=", "t.plan:1: nth=:");
	parse_bad("ref/io/read nth=1x", "t.plan:1: nth=1x:");
	parse_bad("ref/io/read nth=99999999999999999999999",
		  "t.plan:1: nth=99999999999999999999999:");
	parse_bad("ref/io/read count=0", "t.plan:1: count=0: a count is a whole number from 1");
	parse_bad("ref/io/read p=1.5", "t.plan:1: p=1.5: a probability is a number from 0 to 1");
	parse_bad("ref/io/read p=-0.5", "t.plan:1: p=-0.5:");
	parse_bad("ref/io/read p=nan", "t.plan:1: p=nan:");
	parse_bad("ref/io/read p=inf", "t.plan:1: p=inf:");
	parse_bad("ref/io/read p=0.5x", "t.plan:1: p=0.5x:");
	parse_bad("ref/io/read nth=1 p=0.5", "t.plan:1: nth= and p= together");
	parse_bad("ref/io/read errno=EFOO",
		  "t.plan:1: errno=EFOO: not an errno name (ref/io/read gives EIO or ENOMEM)");
	parse_bad("ref/io/read errno=eio", "t.plan:1: errno=eio: not an errno name");
	parse_bad("ref/io/read errno=ENOENT",
		  "t.plan:1: errno=ENOENT: ref/io/read gives EIO or ENOMEM");
	parse_bad("ref/mem/block errno=EIO", "t.plan:1: errno=EIO: ref/mem/block gives ENOMEM");
	parse_bad("ref/io/read foo=1", "t.plan:1: unknown key 'foo'");
	parse_bad("ref/io/read nth", "t.plan:1: 'nth' is not key=value");
	parse_bad("ref/io/read nth=1 nth=2", "t.plan:1: nth= given twice");
	parse_bad("ref/io/read nth=1\n# x\nref/io/read nth=2",
		  "t.plan:3: ref/io/read appears twice (first on line 1)");
	parse_bad("sim", "t.plan:1: a sim line is 'sim KIND[,key=value...]'");
	parse_bad("sim lost-write, disk=0", "t.plan:1: a sim line is 'sim KIND[,key=value...]'");
	parse_bad("sim bogus", "t.plan:1: sim bogus: unknown fault kind 'bogus'");
	parse_bad("\nsim flip-at-rest,disk=x",
		  "t.plan:2: sim flip-at-rest,disk=x: bad value 'x' for fault key 'disk'");
	parse_bad("sim flaky,colour=red",
		  "t.plan:1: sim flaky,colour=red: unknown fault key 'colour'");
	parse_bad("sim flip-on-write,bits=5000",
		  "t.plan:1: sim flip-on-write,bits=5000: bits is at most 4096");
	parse_bad("a b c d e f g h i j k l m n o p q r", "t.plan:1: more than 16 words");
	/* A NUL byte inside the text. */
	struct fault_plan *p;
	char err[256];
	const char nul[] = "ref/io/read\nref/io/wr\0ite\n";
	cr_assert_eq(fault_plan_parse_text("t.plan", nul, sizeof(nul) - 1, &p, err, sizeof(err)),
		     -EINVAL);
	cr_assert_str_eq(err, "t.plan:2: a NUL byte in the text");
	cr_assert_null(p);
}

Test(faults_plan, parse_file)
{
	char *dir = tu_tmpdir();
	char *path = tu_path(dir, "p.plan");
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("ref/commit/super nth=2\nsim lost-write,count=1\n", f);
	fclose(f);
	struct fault_plan *p;
	char err[512] = "";
	cr_assert_eq(fault_plan_parse_file(path, &p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fault_plan_npoints(p), 1);
	cr_assert_eq(fault_plan_nsims(p), 1);
	fault_plan_free(p);
	f = fopen(path, "w");
	fputs("ref/commit/super nth=2\nref/commit/super\n", f);
	fclose(f);
	cr_assert_eq(fault_plan_parse_file(path, &p, err, sizeof(err)), -EINVAL);
	char want[600];
	snprintf(want, sizeof(want), "%s:2: ref/commit/super appears twice (first on line 1)",
		 path);
	cr_assert_str_eq(err, want);
	char *missing = tu_path(dir, "missing.plan");
	cr_assert_eq(fault_plan_parse_file(missing, &p, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", missing);
	cr_assert_str_eq(err, want);
	cr_assert_eq(fault_plan_parse_file(dir, &p, err, sizeof(err)), -EISDIR, "a directory: %s",
		     err);
	snprintf(want, sizeof(want), "%s: Is a directory", dir);
	cr_assert_str_eq(err, want);
	free(missing);
	unlink(path);
	free(path);
	tu_rmdir(dir);
}

Test(faults_plan, canonical_round_trip)
{
	expect_canonical("ref/commit/flush nth=2", "ref/commit/flush nth=2 errno=EIO\n");
	expect_canonical("ref/commit/flush nth=2 count=1", "ref/commit/flush nth=2 errno=EIO\n");
	expect_canonical("ref/commit/flush nth=2 count=5",
			 "ref/commit/flush nth=2 count=5 errno=EIO\n");
	expect_canonical("sim/write p=0.1", "sim/write p=0.1 errno=EIO\n");
	expect_canonical("sim/write p=1", "sim/write p=1 errno=EIO\n");
	expect_canonical("sim/write p=0", "sim/write p=0 errno=EIO\n");
	expect_canonical("sim/write p=0x1p-3 errno=ENOSPC", "sim/write p=0.125 errno=ENOSPC\n");
	expect_canonical("sim/write p=0.333333333333333314829616256247",
			 "sim/write p=0.3333333333333333 errno=EIO\n");
	expect_canonical("ref/io/write count=3", "ref/io/write nth=1 count=3 errno=EIO\n");
	expect_canonical("ref/alloc/data", "ref/alloc/data errno=ENOSPC\n");
	expect_canonical("  sim   flip-at-rest,disk=0,after=100,bits=3  # c",
			 "sim flip-at-rest,disk=0,after=100,bits=3\n");
	expect_canonical("sim misdirect,sector=5,shift=-3,p=0.25,count=2",
			 "sim misdirect,sector=5,p=0.25,count=2,shift=-3\n");
	expect_canonical("sim latent,disk=1,sector=0x10,n=4", "sim latent,disk=1,sector=16,n=4\n");
	expect_canonical("sim flaky,p=0", "sim flaky,p=0\n");
	/* Every point, every errno it gives. */
	size_t n;
	const struct fault_point *pts = fault_points(&n);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < FAULT_MAX_ERRNOS && pts[i].errnos[k]; k++) {
			char in[128], want[160];
			snprintf(in, sizeof(in), "%s nth=%zu errno=%s", pts[i].name, i + 1,
				 fault_errno_name(pts[i].errnos[k]));
			snprintf(want, sizeof(want), "%s\n", in);
			expect_canonical(in, want);
		}
}

Test(faults_plan, catalogue)
{
	size_t n;
	const struct fault_point *pts = fault_points(&n);
	cr_assert_geq(n, 24);
	for (size_t i = 0; i < n; i++) {
		cr_assert(!strncmp(pts[i].name, "ref/", 4) || !strncmp(pts[i].name, "sim/", 4),
			  "%s", pts[i].name);
		cr_assert_eq(fault_point_find(pts[i].name), &pts[i]);
		cr_assert(pts[i].where && pts[i].where[0] && pts[i].what && pts[i].what[0]);
		cr_assert_gt(pts[i].errnos[0], 0, "%s has a default errno", pts[i].name);
		for (size_t j = 0; j < i; j++)
			cr_assert_str_neq(pts[i].name, pts[j].name);
	}
	cr_assert_null(fault_point_find("ref/nope"));
	cr_assert_null(fault_point_find(NULL));
	cr_assert_str_eq(fault_errno_name(EIO), "EIO");
	cr_assert_str_eq(fault_errno_name(EUCLEAN), "EUCLEAN");
	cr_assert_eq(fault_errno_parse("ENOSPC"), ENOSPC);
	cr_assert_eq(fault_errno_parse("EUCLEAN"), EUCLEAN);
	cr_assert_eq(fault_errno_parse("ENOPE"), 0);
	cr_assert_eq(fault_errno_parse(""), 0);
	cr_assert_eq(fault_errno_parse(NULL), 0);
	cr_assert_null(fault_errno_name(0));
	cr_assert_null(fault_errno_name(-5));
}

/* ---- Arming, on sim's requests ---- */

#define SS   4096u
#define DISK (UINT64_C(8) << 20)

Test(faults_plan, arm_errors)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	struct fault_plan *p = parse_ok("sim/write nth=1\nsim lost-write,count=1\n");
	char err[256];
	cr_assert_eq(fault_plan_arm(p, 1, NULL, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "arm: the plan has 1 sim line and no volume to add it to");
	size_t n;
	cr_assert_null(fault_plan_counts(&n));
	cr_assert_eq(n, 0);
	cr_assert_eq(fault_plan_arm(NULL, 1, vol, err, sizeof(err)), -EINVAL);
	cr_assert_eq(fault_plan_arm(p, 1, vol, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fault_plan_arm(p, 1, vol, err, sizeof(err)), -EBUSY);
	cr_assert_str_eq(err, "arm: a fault plan is armed already (disarm it first)");
	fault_plan_disarm();
	fault_plan_disarm(); /* twice is fine */
	fault_plan_free(p);
	sim_fault_clear(vol);
	/* A sim line that does not fit the volume: nothing is armed. */
	p = parse_ok("sim/write nth=1\n\nsim latent,disk=3\n");
	cr_assert_eq(fault_plan_arm(p, 1, vol, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "t.plan:3: sim latent: no disk 3 (the volume has 1)");
	fault_plan_free(p);
	p = parse_ok("sim latent,sector=999999\n");
	cr_assert_eq(fault_plan_arm(p, 1, vol, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "t.plan:1: sim latent: sector 999999 is past the end of disk 0");
	fault_plan_free(p);
	cr_assert_null(fault_plan_counts(&n));
	tu_write_ok(vol, 0, 0, SS, 1, 0); /* no point and no sim fault fires */
	cr_assert_eq(fp_armed, 0);
	sim_volume_close(vol);
}

/* Writes number 1..n to sector i; returns a bit mask of the failed ones. */
static uint64_t write_round(sim_volume *vol, int n, int *errs)
{
	uint64_t mask = 0;
	for (int i = 0; i < n; i++) {
		int r = tu_write(vol, 0, (uint64_t)i * SS, SS, (uint64_t)i + 1, 0);
		if (r) {
			mask |= UINT64_C(1) << i;
			if (errs)
				errs[i] = r;
		}
	}
	return mask;
}

Test(faults_plan, nth_and_count)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	arm_ok("sim/write nth=3 count=2", 1, vol);
	int errs[8] = { 0 };
	cr_assert_eq(write_round(vol, 6, errs), 0x0c, "writes 3 and 4 fail");
	cr_assert_eq(errs[2], -EIO);
	cr_assert(strstr(sim_volume_error(vol), "fault point sim/write"), "%s",
		  sim_volume_error(vol));
	size_t n;
	const struct fault_count *c = fault_plan_counts(&n);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(c[0].point, "sim/write");
	cr_assert_eq(c[0].hits, 6);
	cr_assert_eq(c[0].fired, 2);
	cr_assert_eq(fault_plan_fired("sim/write"), 2);
	cr_assert_eq(fault_plan_fired("sim/read"), 0);
	/* The failed requests are logged as a flaky disk's: failed, nothing done. */
	const struct sim_io *w = tu_log_last(vol, SIM_IO_WRITE);
	cr_assert_eq(w->status, 0);
	size_t nlog;
	const struct sim_io *log = sim_volume_log(vol, &nlog);
	int failed = 0;
	for (size_t i = 0; i < nlog; i++)
		if (log[i].kind == SIM_IO_WRITE && log[i].status) {
			cr_assert_eq(log[i].status, -EIO);
			cr_assert_eq(log[i].fault, SIM_FAULT_FLAKY);
			failed++;
		}
	cr_assert_eq(failed, 2);
	cr_assert(tu_read_is(vol, 0, 2 * SS, SS, 0), "a failed write stored nothing");
	cr_assert(tu_read_is(vol, 0, 4 * SS, SS, 5));
	/* Disarmed: nothing fires, counts are gone; armed again: counted anew. */
	fault_plan_disarm();
	cr_assert_null(fault_plan_counts(&n));
	cr_assert_eq(write_round(vol, 6, NULL), 0);
	arm_ok("sim/write nth=2 errno=ENOSPC\nsim/flush\n", 1, vol);
	cr_assert_eq(write_round(vol, 3, errs), 0x2);
	cr_assert_eq(errs[1], -ENOSPC);
	cr_assert_eq(sim_flush(vol, 0), -EIO, "sim/flush alone fires on every hit");
	cr_assert_eq(sim_flush(vol, 0), -EIO);
	cr_assert_eq(fault_plan_fired("sim/flush"), 2);
	fault_plan_disarm();
	cr_assert_eq(sim_flush(vol, 0), 0);
	sim_volume_close(vol);
}

Test(faults_plan, completion_and_vanish)
{
	sim_volume *vol = tu_open(2, DISK, SS, 1);
	arm_ok("sim/write-done nth=2\nsim/read-done nth=1\nsim/flush-done nth=1\n", 1, vol);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	cr_assert_eq(tu_write(vol, 0, SS, SS, 2, 0), -EIO);
	cr_assert(strstr(sim_volume_error(vol), "completion failed (fault point sim/write-done)"),
		  "%s", sim_volume_error(vol));
	/* The disk did the write: its entry says so, a fault entry after it says
	 * the completion failed. */
	size_t nlog;
	const struct sim_io *log = sim_volume_log(vol, &nlog);
	cr_assert_geq(nlog, 3);
	cr_assert_eq(log[nlog - 2].kind, SIM_IO_WRITE);
	cr_assert_eq(log[nlog - 2].status, 0);
	cr_assert_eq(log[nlog - 1].kind, SIM_IO_FAULT);
	cr_assert_eq(log[nlog - 1].fault, SIM_FAULT_FLAKY);
	cr_assert_eq(log[nlog - 1].status, -EIO);
	cr_assert_eq(log[nlog - 1].fault_arg, log[nlog - 2].seq);
	uint8_t *buf = malloc(SS);
	cr_assert_eq(sim_read(vol, 0, SS, buf, SS), -EIO, "read-done");
	uint8_t *want = tu_pat(SS, 2);
	cr_assert_eq(memcmp(buf, want, SS), 0, "the read was served");
	cr_assert_eq(sim_flush(vol, 0), -EIO, "flush-done");
	cr_assert(tu_durable_is(vol, 0, SS, SS, 2), "the flush was served");
	fault_plan_disarm();
	/* A disk vanishes before the request that hits the point. */
	arm_ok("sim/device-vanish nth=3\n", 1, vol);
	tu_write_ok(vol, 1, 0, SS, 7, 0);
	tu_write_ok(vol, 0, 2 * SS, SS, 8, 0);
	cr_assert_not(sim_disk_is_lost(vol, 1));
	cr_assert_eq(tu_write(vol, 1, SS, SS, 9, 0), -EIO);
	cr_assert(sim_disk_is_lost(vol, 1));
	cr_assert_not(sim_disk_is_lost(vol, 0));
	cr_assert_eq(tu_log_last(vol, SIM_IO_FAULT)->fault, SIM_FAULT_DEVICE_LOSS);
	tu_write_ok(vol, 0, 3 * SS, SS, 10, 0);
	cr_assert_eq(fault_plan_fired(FP_SIM_DEVICE_VANISH), 1);
	fault_plan_disarm();
	free(buf);
	free(want);
	sim_volume_close(vol);
}

Test(faults_plan, sim_lines_and_discard)
{
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	tu_write_ok(vol, 0, 0, 4 * SS, 3, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	arm_ok("sim/discard nth=1\nsim/discard-done nth=1\nsim lost-write,count=1\n", 1, vol);
	cr_assert_eq(sim_discard(vol, 0, 0, SS), -EIO);
	cr_assert(tu_read_is(vol, 0, 0, SS, 3), "a failed discard did nothing");
	cr_assert_eq(sim_discard(vol, 0, SS, SS), -EIO, "discard-done: done, but failed");
	cr_assert(tu_read_is(vol, 0, SS, SS, 0), "the discard was done");
	cr_assert_eq(fault_plan_fired(FP_SIM_DISCARD), 1);
	cr_assert_eq(fault_plan_fired(FP_SIM_DISCARD_DONE), 1);
	/* The sim line: the next write is lost. */
	tu_write_ok(vol, 0, 8 * SS, SS, 4, 0);
	cr_assert(tu_read_is(vol, 0, 8 * SS, SS, 0));
	tu_write_ok(vol, 0, 9 * SS, SS, 5, 0);
	cr_assert(tu_read_is(vol, 0, 9 * SS, SS, 5));
	fault_plan_disarm();
	sim_volume_close(vol);
}

Test(faults_plan, probability_is_deterministic)
{
	uint64_t masks[3];
	uint64_t seeds[3] = { 42, 42, 43 };
	for (int k = 0; k < 3; k++) {
		sim_volume *vol = tu_open(1, DISK, SS, 1);
		arm_ok("sim/write p=0.3\nsim/read p=0.5 count=1\n", seeds[k], vol);
		masks[k] = write_round(vol, 64, NULL);
		cr_assert_eq(hits_of("sim/write"), 64);
		fault_plan_disarm();
		sim_volume_close(vol);
	}
	cr_assert_eq(masks[0], masks[1], "the same seed fails the same writes");
	cr_assert_neq(masks[0], masks[2], "another seed, other writes");
	int fails = __builtin_popcountll(masks[0]);
	cr_assert(fails >= 8 && fails <= 32, "%d of 64 failed at p=0.3", fails);
	/* p=1 always, p=0 never, count caps. */
	sim_volume *vol = tu_open(1, DISK, SS, 1);
	arm_ok("sim/write p=1 count=5\n", 9, vol);
	cr_assert_eq(write_round(vol, 8, NULL), 0x1f);
	fault_plan_disarm();
	arm_ok("sim/write p=0\n", 9, vol);
	cr_assert_eq(write_round(vol, 8, NULL), 0);
	cr_assert_eq(hits_of("sim/write"), 8);
	fault_plan_disarm();
	sim_volume_close(vol);
}

/* ---- Every point under a file-system workload ---- */

#define VOL_MIB  128u /* DUP metadata; a 12 MiB data chunk, so /huge needs another */
#define HUGE_MIB 14

struct mstate {
	bool exists;
	size_t size;
	uint8_t *data;
};

struct mfile {
	char path[32];
	struct mstate *st; /* every content it had, in order; st[0] absent */
	size_t nst;
	size_t ack; /* the state the last successful commit made durable */
};

struct model {
	struct mfile f[32];
	size_t nf;
	char first_err[256]; /* ref_error of the first call that failed */
	uint64_t mark;       /* the armed point's hits before the write that spans two chunks */
};

/* Notes the first failure's message. */
static void m_result(ref_fs *fs, struct model *m, long r)
{
	if (r < 0 && !m->first_err[0])
		snprintf(m->first_err, sizeof(m->first_err), "%s", ref_error(fs));
}

static struct mfile *mf(struct model *m, const char *path)
{
	for (size_t i = 0; i < m->nf; i++)
		if (!strcmp(m->f[i].path, path))
			return &m->f[i];
	cr_assert_lt(m->nf, 32);
	struct mfile *f = &m->f[m->nf++];
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->st = calloc(1, sizeof(*f->st));
	f->nst = 1;
	return f;
}

static struct mstate *cur(struct mfile *f)
{
	return &f->st[f->nst - 1];
}

/* A new state: a copy of the current one, resized. */
static struct mstate *push_state(struct mfile *f, bool exists, size_t size)
{
	f->st = realloc(f->st, (f->nst + 1) * sizeof(*f->st));
	cr_assert_not_null(f->st);
	struct mstate *prev = &f->st[f->nst - 1], *s = &f->st[f->nst++];
	s->exists = exists;
	s->size = exists ? size : 0;
	s->data = calloc(1, s->size + 1);
	if (exists && prev->exists)
		memcpy(s->data, prev->data, prev->size < size ? prev->size : size);
	return s;
}

static void m_free(struct model *m)
{
	for (size_t i = 0; i < m->nf; i++) {
		for (size_t k = 0; k < m->f[i].nst; k++)
			free(m->f[i].st[k].data);
		free(m->f[i].st);
	}
}

/* A commit made every file's latest state durable: the older ones go. */
static void m_ack(struct model *m)
{
	for (size_t i = 0; i < m->nf; i++) {
		struct mfile *f = &m->f[i];
		for (size_t k = 0; k + 1 < f->nst; k++)
			free(f->st[k].data);
		f->st[0] = f->st[f->nst - 1];
		f->nst = 1;
		f->ack = 0;
	}
}

static void m_create(ref_fs *fs, struct model *m, const char *path)
{
	struct mfile *f = mf(m, path);
	int r = ref_create(fs, path, 0644);
	m_result(fs, m, r);
	if (r == 0)
		push_state(f, true, 0);
}

static void m_write(ref_fs *fs, struct model *m, const char *path, uint64_t off, size_t len,
		    uint64_t tag)
{
	struct mfile *f = mf(m, path);
	uint8_t *buf = tu_pat(len, tag);
	ssize_t r = ref_write(fs, path, buf, len, off);
	m_result(fs, m, r);
	if (r == (ssize_t)len) {
		size_t size = cur(f)->size > off + len ? cur(f)->size : off + len;
		struct mstate *s = push_state(f, true, size);
		memcpy(s->data + off, buf, len);
	}
	free(buf);
}

static void m_truncate(ref_fs *fs, struct model *m, const char *path, uint64_t size)
{
	struct mfile *f = mf(m, path);
	int r = ref_truncate(fs, path, size);
	m_result(fs, m, r);
	if (r == 0)
		push_state(f, true, size);
}

static void m_fallocate(ref_fs *fs, struct model *m, const char *path, uint64_t off, uint64_t len)
{
	struct mfile *f = mf(m, path);
	int r = ref_fallocate(fs, path, 0, off, len);
	m_result(fs, m, r);
	if (r == 0) {
		size_t size = cur(f)->size > off + len ? cur(f)->size : off + len;
		push_state(f, true, size);
	}
}

static void m_unlink(ref_fs *fs, struct model *m, const char *path)
{
	struct mfile *f = mf(m, path);
	int r = ref_unlink(fs, path);
	m_result(fs, m, r);
	if (r == 0)
		push_state(f, false, 0);
}

static void m_rename(ref_fs *fs, struct model *m, const char *from, const char *to)
{
	struct mfile *a = mf(m, from), *b = mf(m, to);
	int r = ref_rename(fs, from, to, 0);
	m_result(fs, m, r);
	if (r == 0) {
		struct mstate *s = push_state(b, true, cur(a)->size);
		memcpy(s->data, cur(a)->data, cur(a)->size);
		push_state(a, false, 0);
	}
}

/* An fsync acknowledges its file's state (the log tree holds it; whether
 * ref committed instead does not matter to what it promised). */
static void m_fsync(ref_fs *fs, struct model *m, const char *path)
{
	int r = ref_fsync(fs, path);
	m_result(fs, m, r);
	if (r == 0) {
		struct mfile *f = mf(m, path);
		f->ack = f->nst - 1;
	}
}

/* Reads a file back while faults may fire: a failed read is allowed, wrong
 * data is not.  Until a failure the file is in its latest state; after one
 * (read-only now) readers see the last commit: a state from the acknowledged
 * one on. */
static void m_read(ref_fs *fs, struct model *m, const char *path, uint64_t off, size_t len)
{
	struct mfile *f = mf(m, path);
	struct ref_ino ino;
	int r = ref_lookup_path(fs, path, true, &ino);
	m_result(fs, m, r == -ENOENT ? 0 : r);
	if (r)
		return;
	uint8_t *buf = malloc(len + 1);
	ssize_t n = ref_pread(fs, &ino, buf, len, off);
	m_result(fs, m, n);
	bool ok = n <= 0;
	for (size_t k = f->ack; k < f->nst && !ok; k++) {
		const struct mstate *s = &f->st[k];
		size_t want = s->size > off ? s->size - off : 0;
		ok = s->exists && (size_t)n == (want < len ? want : len) &&
		     !memcmp(buf, s->data + off, (size_t)n);
	}
	cr_assert(ok, "%s: read back %zd bytes at %llu, wrong data", path, n,
		  (unsigned long long)off);
	free(buf);
}

static void workload(ref_fs *fs, struct model *m)
{
	m_create(fs, m, "/a");
	m_write(fs, m, "/a", 0, 3000, 1); /* unaligned: the bounce buffer */
	m_fsync(fs, m, "/a");
	m_result(fs, m, ref_mkdir(fs, "/d", 0755));
	m_create(fs, m, "/d/small");
	m_write(fs, m, "/d/small", 0, 100, 2); /* inline */
	m_create(fs, m, "/d/big");
	m_write(fs, m, "/d/big", 0, 1 << 20, 3);
	m_fsync(fs, m, "/d/big");
	m_write(fs, m, "/d/big", 5000, 10000, 4); /* reads the partial sectors back */
	m_read(fs, m, "/a", 0, 3000);
	char path[32];
	for (int i = 1; i <= 5; i++) {
		snprintf(path, sizeof(path), "/d/c%d", i);
		m_create(fs, m, path);
		m_write(fs, m, path, 0, 8192, 10 + (uint64_t)i);
	}
	m_fsync(fs, m, "/d/c3");
	m_truncate(fs, m, "/d/big", 300001);
	m_rename(fs, m, "/d/c1", "/d/c1r");
	m_unlink(fs, m, "/d/c2");
	m_fallocate(fs, m, "/d/c4", 0, 65536);
	m_read(fs, m, "/d/big", 4096, 20000);
	m_create(fs, m, "/huge"); /* more than the first data chunk holds */
	m_write(fs, m, "/huge", 0, HUGE_MIB << 19, 100);
	/* This one fills the first data chunk and goes on in the next: two
	 * extents.  The hits before it are marked, so that a fault can be aimed
	 * at its second extent. */
	size_t nc;
	const struct fault_count *c = fault_plan_counts(&nc);
	m->mark = nc ? c[0].hits : 0;
	m_write(fs, m, "/huge", HUGE_MIB << 19, HUGE_MIB << 19, 101);
	m_fsync(fs, m, "/huge");
	m_write(fs, m, "/a", 3000, 5000, 5);
	m_write(fs, m, "/d/small", 50, 100, 6);
	m_read(fs, m, "/huge", 3 << 20, 65536);
	int r = ref_sync(fs);
	m_result(fs, m, r);
	if (r == 0)
		m_ack(m);
	m_write(fs, m, "/d/c5", 4096, 4096, 7);
	m_unlink(fs, m, "/d/c3");
	/* After a failed commit ref_umount commits nothing and returns 0: whether
	 * the file system turned read-only is what fsync of a missing file says
	 * (EROFS before it looks the path up). */
	bool failed = ref_fsync(fs, "/no-such-file") == -EROFS;
	r = ref_umount(fs);
	if (r < 0 && !m->first_err[0])
		snprintf(m->first_err, sizeof(m->first_err), "umount: %s", strerror(-r));
	if (r == 0 && !failed)
		m_ack(m);
}

/* The file system on vol as a reader sees it: clean, and every file in one
 * of the states it had from its acknowledged one on. */
static void verify(sim_volume *vol, struct model *m, const char *what)
{
	ref_fs *fs;
	char err[256];
	struct ref_open_opts oo = { .super_mirror = -1 };
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s: open: %s", what, err);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct ref_check_opts co = { .out = out };
	long n = ref_check(fs, &co);
	fclose(out);
	cr_assert_eq(n, 0, "%s: ref_check:\n%s", what, text);
	free(text);
	for (size_t i = 0; i < m->nf; i++) {
		struct mfile *f = &m->f[i];
		struct ref_ino ino;
		int r = ref_lookup_path(fs, f->path, false, &ino);
		cr_assert(r == 0 || r == -ENOENT, "%s: %s: %s", what, f->path, ref_error(fs));
		uint8_t *buf = NULL;
		ssize_t got = 0;
		if (r == 0) {
			struct ref_stat st;
			cr_assert_eq(ref_stat(fs, &ino, &st), 0, "%s: %s", what, ref_error(fs));
			buf = malloc(st.size + 1);
			got = ref_pread(fs, &ino, buf, st.size + 1, 0);
			cr_assert_eq(got, (ssize_t)st.size, "%s: %s: read %zd: %s", what, f->path,
				     got, ref_error(fs));
		}
		bool ok = false;
		for (size_t k = f->ack; k < f->nst && !ok; k++) {
			const struct mstate *s = &f->st[k];
			ok = r == 0 ? s->exists && s->size == (size_t)got &&
					      !memcmp(buf, s->data, s->size)
				    : !s->exists;
		}
		cr_assert(ok, "%s: %s is %s (%zd bytes), none of its states %zu..%zu", what,
			  f->path, r ? "absent" : "present", got, f->ack, f->nst - 1);
		free(buf);
	}
	ref_close(fs);
}

/* A volume holding what vol's disks hold durably: power lost (volatile
 * writes gone), a vanished disk plugged back in. */
static sim_volume *durable_copy(sim_volume *vol)
{
	sim_volume *c = tu_open(1, sim_disk_size(vol, 0), SS, 2);
	size_t chunk = 1 << 20;
	uint8_t *buf = malloc(chunk), *zero = calloc(1, chunk);
	for (uint64_t off = 0; off < sim_disk_size(vol, 0); off += chunk) {
		cr_assert_eq(sim_read_durable(vol, 0, off, buf, chunk), 0);
		if (memcmp(buf, zero, chunk))
			cr_assert_eq(sim_write(c, 0, off, buf, chunk, 0), 0);
	}
	cr_assert_eq(sim_flush(c, 0), 0);
	free(buf);
	free(zero);
	return c;
}

/* After verifying: the file system mounts for writing and takes more. */
static void still_writable(sim_volume *vol, const char *what)
{
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s: mount: %s", what, err);
	WU_OK(fs, ref_create(fs, "/after", 0644));
	WU_OK(fs, ref_write(fs, "/after", "more", 4, 0));
	WU_OK(fs, ref_umount(fs));
	wu_expect_ref_clean(vol);
}

/* One run: the workload with `POINT spec` armed; returns the point's hits
 * (and in *mark those before the write that spans two chunks). */
static uint64_t run_case(const char *point, const char *spec, uint64_t *fired, uint64_t *mark)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, VOL_MIB, 0);
	char text[128], what[160];
	snprintf(text, sizeof(text), "%s %s\n", point, spec);
	snprintf(what, sizeof(what), "%s %s", point, spec);
	arm_ok(text, 1, vol);
	struct model m = { 0 };
	workload(fs, &m);
	uint64_t hits = hits_of(point);
	*fired = fault_plan_fired(point);
	if (mark)
		*mark = m.mark;
	fault_plan_disarm();
	/* A clean run fails nothing; a fault that surfaces says what fired. */
	if (!*fired)
		cr_assert_str_eq(m.first_err, "", "%s: a call failed: %s", what, m.first_err);
	else if (m.first_err[0] &&
		 strncmp(m.first_err, "umount: ", 8)) /* its message is gone with the fs */
		cr_assert(strstr(m.first_err, point) || (!strcmp(point, FP_SIM_DEVICE_VANISH) &&
							 strstr(m.first_err, "is lost")),
			  "%s: the first error does not name the fault: %s", what, m.first_err);
	if (getenv("FAULTS_SHOW"))
		fprintf(stderr, "%s: %s\n", what,
			m.first_err[0] ? m.first_err : "(no call failed)");
	char live[200], dur[200];
	snprintf(live, sizeof(live), "%s (the volume as it is)", what);
	snprintf(dur, sizeof(dur), "%s (its durable media)", what);
	if (!sim_disk_is_lost(vol, 0))
		verify(vol, &m, live);
	sim_volume *c = durable_copy(vol);
	verify(c, &m, dur);
	still_writable(c, dur);
	sim_volume_close(c);
	sim_volume_close(vol);
	m_free(&m);
	return hits;
}

static void sweep(const char *point)
{
	uint64_t fired, mark;
	uint64_t hits = run_case(point, "p=0", &fired, &mark);
	cr_assert_eq(fired, 0);
	cr_assert_gt(hits, 0, "%s: the workload never reaches it", point);
	/* The first hits, the one after the first extent of the write that spans
	 * two chunks (its second extent for the points hit once per extent), the
	 * middle one, the last one. */
	uint64_t nth[5] = { 1, 3, mark + 2, (hits + 1) / 2, hits };
	for (int i = 0; i < 5; i++) {
		bool seen = nth[i] > hits;
		for (int k = 0; k < i; k++)
			seen |= nth[k] == nth[i];
		if (seen)
			continue;
		char spec[32];
		snprintf(spec, sizeof(spec), "nth=%llu", (unsigned long long)nth[i]);
		run_case(point, spec, &fired, NULL);
		cr_assert_eq(fired, 1, "%s %s (of %llu hits) fired %llu times", point, spec,
			     (unsigned long long)hits, (unsigned long long)fired);
	}
}

/* The points the file-system workload reaches: each a test. */
#define POINT_TEST(id, name)                                                                       \
	Test(faults_points, id)                                                                    \
	{                                                                                          \
		sweep(name);                                                                       \
	}

POINT_TEST(ref_alloc_tree_block, FP_REF_ALLOC_TREE_BLOCK)
POINT_TEST(ref_alloc_data, FP_REF_ALLOC_DATA)
POINT_TEST(ref_alloc_chunk, FP_REF_ALLOC_CHUNK)
POINT_TEST(ref_alloc_reserve_meta, FP_REF_ALLOC_RESERVE_META)
POINT_TEST(ref_alloc_reserve_data, FP_REF_ALLOC_RESERVE_DATA)
POINT_TEST(ref_mem_block, FP_REF_MEM_BLOCK)
POINT_TEST(ref_mem_dref, FP_REF_MEM_DREF)
POINT_TEST(ref_mem_csum, FP_REF_MEM_CSUM)
POINT_TEST(ref_mem_write_buf, FP_REF_MEM_WRITE_BUF)
POINT_TEST(ref_commit_settle, FP_REF_COMMIT_SETTLE)
POINT_TEST(ref_commit_write_blocks, FP_REF_COMMIT_WRITE_BLOCKS)
POINT_TEST(ref_commit_flush, FP_REF_COMMIT_FLUSH)
POINT_TEST(ref_commit_super, FP_REF_COMMIT_SUPER)
POINT_TEST(ref_io_read, FP_REF_IO_READ)
POINT_TEST(ref_io_write, FP_REF_IO_WRITE)
POINT_TEST(sim_read, FP_SIM_READ)
POINT_TEST(sim_write, FP_SIM_WRITE)
POINT_TEST(sim_flush, FP_SIM_FLUSH)
POINT_TEST(sim_read_done, FP_SIM_READ_DONE)
POINT_TEST(sim_write_done, FP_SIM_WRITE_DONE)
POINT_TEST(sim_flush_done, FP_SIM_FLUSH_DONE)
POINT_TEST(sim_device_vanish, FP_SIM_DEVICE_VANISH)

/* Every point of the catalogue has its test: one of the above, or (the two
 * points ref never reaches, as it never discards) faults_plan/sim_lines_and_discard. */
Test(faults_points, catalogue_is_covered)
{
	static const char *const tested[] = {
		FP_REF_ALLOC_TREE_BLOCK,
		FP_REF_ALLOC_DATA,
		FP_REF_ALLOC_CHUNK,
		FP_REF_ALLOC_RESERVE_META,
		FP_REF_ALLOC_RESERVE_DATA,
		FP_REF_MEM_BLOCK,
		FP_REF_MEM_DREF,
		FP_REF_MEM_CSUM,
		FP_REF_MEM_WRITE_BUF,
		FP_REF_COMMIT_SETTLE,
		FP_REF_COMMIT_WRITE_BLOCKS,
		FP_REF_COMMIT_FLUSH,
		FP_REF_COMMIT_SUPER,
		FP_REF_IO_READ,
		FP_REF_IO_WRITE,
		FP_SIM_READ,
		FP_SIM_WRITE,
		FP_SIM_FLUSH,
		FP_SIM_READ_DONE,
		FP_SIM_WRITE_DONE,
		FP_SIM_FLUSH_DONE,
		FP_SIM_DEVICE_VANISH,
		FP_SIM_DISCARD,
		FP_SIM_DISCARD_DONE,
	};
	size_t n, nt = sizeof(tested) / sizeof(tested[0]);
	const struct fault_point *pts = fault_points(&n);
	cr_assert_eq(n, nt);
	for (size_t i = 0; i < n; i++) {
		bool found = false;
		for (size_t k = 0; k < nt; k++)
			found |= !strcmp(tested[k], pts[i].name);
		cr_assert(found, "%s has no test", pts[i].name);
	}
}

/* The same seed gives the same run under a random plan, byte for byte. */
Test(faults_points, same_seed_same_run)
{
	uint64_t hash[3], fired[3];
	uint64_t seeds[3] = { 5, 5, 6 };
	for (int k = 0; k < 3; k++) {
		sim_volume *vol;
		ref_fs *fs = wu_fresh(&vol, VOL_MIB, 0);
		arm_ok("ref/io/write p=0.02\nsim/write-done p=0.01\nref/alloc/tree-block p=0.002\n",
		       seeds[k], vol);
		struct model m = { 0 };
		workload(fs, &m);
		fired[k] = fault_plan_fired("ref/io/write") + fault_plan_fired("sim/write-done") +
			   fault_plan_fired("ref/alloc/tree-block");
		fault_plan_disarm();
		cr_assert_eq(sim_disk_durable_hash(vol, 0, &hash[k]), 0);
		m_free(&m);
		sim_volume_close(vol);
	}
	cr_assert_gt(fired[0], 0);
	cr_assert_eq(fired[0], fired[1]);
	cr_assert_eq(hash[0], hash[1], "the same seed, the same image");
	cr_assert(hash[0] != hash[2] || fired[0] != fired[2], "another seed, another run");
}
