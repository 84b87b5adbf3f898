/*
 * test_determinism.c - the same seed and the same requests give the same IO log
 * and the same durable images, probabilistic faults and random crashes
 * included; another seed gives another outcome.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SS 4096u
#define DISK (UINT64_C(4) << 20) /* 1024 sectors */
#define NDISKS 3

static void add(sim_volume *vol, const char *text)
{
	struct sim_fault f;
	char err[128] = "";
	cr_assert_eq(sim_fault_parse(text, &f, err, sizeof(err)), 0, "%s: %s", text, err);
	cr_assert_eq(sim_fault_add(vol, &f), 0, "%s: %s", text, sim_volume_error(vol));
}

/* A workload with every probabilistic fault, then a random torn crash of the
 * volume.  The statuses of all requests go to st (nst entries). */
static sim_volume *run(uint64_t seed, int *st, size_t *nst)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, NDISKS, DISK, seed);
	cfg.disk[1].sector_size = 512;
	char err[256] = "";
	sim_volume *vol;
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	add(vol, "flaky,p=0.5,disk=0");
	add(vol, "flip-on-write,p=0.5,bits=2");
	add(vol, "flip-on-read,p=0.5");
	add(vol, "misdirect,p=0.5,disk=1");
	add(vol, "lost-write,p=0.5,disk=2");
	add(vol, "flip-at-rest,p=0.05");
	add(vol, "latent,p=0.02,n=2");

	/* The request sequence depends only on the loop index, never on outcomes. */
	uint8_t *buf = malloc(16 * SS);
	cr_assert_not_null(buf);
	size_t k = 0;
	for (unsigned i = 0; i < 300; i++) {
		unsigned d = i % NDISKS;
		uint32_t ss = d == 1 ? 512 : SS;
		uint64_t sector = (i * 37u) % 200;
		uint32_t n = 1 + i % 8;
		int r;
		switch (i % 6) {
		case 0:
		case 1:
		case 2:
			tu_fill(buf, (size_t)n * ss, 1000 + i);
			r = sim_write(vol, d, sector * ss, buf, (size_t)n * ss, i % 5 ? 0 : SIM_FUA);
			break;
		case 3:
			r = sim_read(vol, d, sector * ss, buf, (size_t)n * ss);
			break;
		case 4:
			r = i % 4 ? sim_flush(vol, d) : sim_discard(vol, d, sector * ss, ss);
			break;
		default:
			r = sim_read(vol, d, 0, buf, 16 * (size_t)ss);
			break;
		}
		cr_assert(r == 0 || r == -EIO, "request %u: %d %s", i, r, sim_volume_error(vol));
		st[k++] = r;
	}
	free(buf);
	struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM, .keep_probability = 0.5,
				       .tear_probability = 0.5 };
	struct sim_crash_result res[NDISKS];
	cr_assert_eq(sim_volume_crash(vol, &spec, res), 0);
	for (unsigned d = 0; d < NDISKS; d++) {
		st[k++] = (int)res[d].pending;
		st[k++] = (int)res[d].persisted;
		st[k++] = (int)res[d].torn;
		st[k++] = (int)res[d].sectors_persisted;
	}
	*nst = k;
	return vol;
}

static bool same_io(const struct sim_io *a, const struct sim_io *b)
{
	return a->seq == b->seq && a->epoch == b->epoch && a->sector == b->sector &&
	       a->csum == b->csum && a->fault_arg == b->fault_arg &&
	       a->sim_time_ns == b->sim_time_ns && a->nsectors == b->nsectors &&
	       a->disk == b->disk && a->kind == b->kind && a->fault == b->fault &&
	       a->status == b->status;
}

/* The number of log entries that differ (or the length difference). */
static size_t log_diff(sim_volume *a, sim_volume *b)
{
	size_t na, nb;
	const struct sim_io *la = sim_volume_log(a, &na), *lb = sim_volume_log(b, &nb);
	size_t diff = na > nb ? na - nb : nb - na;
	for (size_t i = 0; i < na && i < nb; i++)
		diff += !same_io(&la[i], &lb[i]);
	return diff;
}

Test(determinism, same_seed_same_log_and_images)
{
	int sa[400], sb[400];
	size_t na, nb;
	sim_volume *a = run(12345, sa, &na), *b = run(12345, sb, &nb);
	cr_assert_eq(na, nb);
	cr_assert_eq(memcmp(sa, sb, na * sizeof(int)), 0, "same statuses and crash results");
	size_t n;
	const struct sim_io *log = sim_volume_log(a, &n);
	cr_assert(n > 300);
	cr_assert_eq(log_diff(a, b), 0, "identical IO logs");

	/* The workload really exercised the faults and the crash. */
	unsigned faults[SIM_FAULT_KIND_COUNT] = { 0 }, eio = 0, crashes = 0;
	for (size_t i = 0; i < n; i++) {
		faults[log[i].fault]++;
		eio += log[i].status == -EIO;
		crashes += log[i].kind == SIM_IO_CRASH;
	}
	cr_assert(faults[SIM_FAULT_FLAKY] > 0);
	cr_assert(faults[SIM_FAULT_FLIP_ON_WRITE] > 0);
	cr_assert(faults[SIM_FAULT_FLIP_ON_READ] > 0);
	cr_assert(faults[SIM_FAULT_MISDIRECT] > 0);
	cr_assert(faults[SIM_FAULT_LOST_WRITE] > 0);
	cr_assert(faults[SIM_FAULT_FLIP_AT_REST] > 0);
	cr_assert(eio > 0);
	cr_assert_eq(crashes, NDISKS);
	unsigned torn = 0;
	for (unsigned d = 0; d < NDISKS; d++)
		torn += (unsigned)sa[na - 4 * NDISKS + 4 * d + 2];
	cr_assert(torn > 0, "the crash tore some writes");

	for (unsigned d = 0; d < NDISKS; d++) {
		uint64_t ha, hb;
		cr_assert_eq(sim_disk_durable_hash(a, d, &ha), 0);
		cr_assert_eq(sim_disk_durable_hash(b, d, &hb), 0);
		cr_assert_eq(ha, hb, "disk %u", d);
		cr_assert_eq(sim_disk_durable_cmp(a, d, b, d), 0, "disk %u", d);
		cr_assert_eq(sim_disk_epoch(a, d), sim_disk_epoch(b, d));
	}
	cr_assert_eq(sim_volume_sim_time_ns(a), sim_volume_sim_time_ns(b));
	cr_assert(sim_volume_sim_time_ns(a) > 0, "sim_config_init's latency model runs");
	sim_volume_close(a);
	sim_volume_close(b);
}

Test(determinism, another_seed_another_outcome)
{
	int sa[400], sb[400];
	size_t na, nb;
	sim_volume *a = run(12345, sa, &na), *b = run(54321, sb, &nb);
	cr_assert(log_diff(a, b) > 0, "the logs differ");
	cr_assert_neq(memcmp(sa, sb, (na < nb ? na : nb) * sizeof(int)), 0);
	unsigned differ = 0;
	for (unsigned d = 0; d < NDISKS; d++) {
		uint64_t ha, hb;
		cr_assert_eq(sim_disk_durable_hash(a, d, &ha), 0);
		cr_assert_eq(sim_disk_durable_hash(b, d, &hb), 0);
		int c = sim_disk_durable_cmp(a, d, b, d);
		cr_assert(c == 0 || c == 1);
		cr_assert_eq(c == 1, ha != hb, "hash and compare agree on disk %u", d);
		differ += c;
	}
	cr_assert(differ > 0, "the durable images differ");
	sim_volume_close(a);
	sim_volume_close(b);
}

Test(determinism, a_clone_replays_like_its_origin)
{
	int s[400];
	size_t n;
	sim_volume *a = run(777, s, &n);
	sim_volume_log_clear(a);
	sim_volume *b;
	cr_assert_eq(sim_volume_clone(a, &b), 0);
	/* Same further requests on both: same entries, same media. */
	uint8_t buf[4 * SS];
	for (unsigned i = 0; i < 60; i++) {
		unsigned d = i % NDISKS;
		uint32_t ss = d == 1 ? 512 : SS;
		tu_fill(buf, 4 * (size_t)ss, i + 1);
		int ra = sim_write(a, d, (uint64_t)i * ss, buf, 4 * (size_t)ss, 0);
		int rb = sim_write(b, d, (uint64_t)i * ss, buf, 4 * (size_t)ss, 0);
		cr_assert_eq(ra, rb);
		ra = sim_read(a, d, (uint64_t)i * ss, buf, 4 * (size_t)ss);
		rb = sim_read(b, d, (uint64_t)i * ss, buf, 4 * (size_t)ss);
		cr_assert_eq(ra, rb);
	}
	struct sim_crash_spec spec = { .policy = SIM_CRASH_RANDOM, .tear_probability = 1.0 };
	cr_assert_eq(sim_volume_crash(a, &spec, NULL), 0);
	cr_assert_eq(sim_volume_crash(b, &spec, NULL), 0);
	cr_assert_eq(log_diff(a, b), 0);
	for (unsigned d = 0; d < NDISKS; d++)
		cr_assert_eq(sim_disk_durable_cmp(a, d, b, d), 0);
	sim_volume_close(a);
	sim_volume_close(b);
}

Test(determinism, disks_draw_from_independent_streams)
{
	/* Requests on disk 1 do not change the random choices on disk 0. */
	sim_volume *a = tu_open(2, DISK, SS, 99), *b = tu_open(2, DISK, SS, 99);
	struct sim_fault f = { .kind = SIM_FAULT_FLAKY, .disk = SIM_ANY_DISK,
			       .sector = SIM_ANY_SECTOR, .probability = 0.5 };
	cr_assert_eq(sim_fault_add(a, &f), 0);
	cr_assert_eq(sim_fault_add(b, &f), 0);
	uint8_t buf[SS];
	int ra[100], rb[100];
	for (int i = 0; i < 100; i++) {
		ra[i] = sim_read(a, 0, 0, buf, SS);
		sim_read(b, 1, 0, buf, SS); /* extra traffic on disk 1 */
		sim_read(b, 1, 0, buf, SS);
		rb[i] = sim_read(b, 0, 0, buf, SS);
	}
	cr_assert_eq(memcmp(ra, rb, sizeof(ra)), 0);
	sim_volume_close(a);
	sim_volume_close(b);
}
