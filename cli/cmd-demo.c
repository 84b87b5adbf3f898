/*
 * cmd-demo.c - `btrsim demo`: a short tour of sim/ on a simulated volume.
 *
 * Writes and flushes data, writes more without flushing, injects a bit flip at
 * rest, a latent sector error, a lost write and a lost device, crashes every
 * disk with the random policy, then reads everything back and shows, slot by
 * slot, what survived.  It also checks that what survived is something the
 * simulator allows (flushed and FUA data intact unless a fault hit it), so a
 * non-zero exit means sim/ broke its own promise.
 */
#include "cli/cli.h"
#include "sim/sim.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#define SLOT (64u * 1024) /* bytes per slot: 16 sectors of 4 KiB, 128 of 512 */
#define NSLOTS 16
#define DISK_SIZE (UINT64_C(64) << 20)

static const char usage_text[] =
	"usage: btrsim demo [options]\n"
	"\n"
	"Run a short demonstration of the simulated block layer: writes, flushes, a\n"
	"crash with the random policy, a bit flip, a latent sector error, a lost write\n"
	"and a lost device, then show what survived on each disk.\n"
	"\n"
	"  --seed N            seed for every random choice (default: a fresh one, printed)\n"
	"  --disks N           number of disks, 1 to 16 (default 4)\n"
	"  --sector-size N     512 or 4096 (default 4096)\n"
	"  --report DIR        write summary.txt and iolog.txt into DIR\n"
	"  --save-images DIR   save each disk's durable image as DIR/diskN.img\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 when everything that survived is allowed, 1 otherwise.\n";

const struct cli_cmd cli_cmd_demo;

/* What the demo expects of a slot after the crash. */
struct slot_model {
	unsigned durable_v; /* version durable before the crash (0: zeros) */
	unsigned latest_v;  /* latest acknowledged version */
	char fault;         /* 'C' flipped, 'E' unreadable, 'L' lost write, 0 none */
};

struct demo {
	uint64_t seed;
	unsigned ndisks;
	uint32_t sector_size;
	sim_volume *vol;
	struct slot_model slot[16][NSLOTS];
	FILE *out; /* the summary, printed and saved */
};

static void fill(uint8_t *buf, size_t len, uint64_t seed, unsigned disk, unsigned slot,
		 unsigned version)
{
	if (!version) {
		memset(buf, 0, len);
		return;
	}
	uint64_t x = seed ^ (disk * UINT64_C(0x9e3779b97f4a7c15)) ^ ((uint64_t)slot << 32) ^ version;
	for (size_t i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
}

static int write_slot(struct demo *dm, unsigned disk, unsigned slot, unsigned flags)
{
	struct slot_model *m = &dm->slot[disk][slot];
	uint8_t *buf = malloc(SLOT);
	if (!buf)
		return -ENOMEM;
	unsigned v = m->latest_v + 1;
	fill(buf, SLOT, dm->seed, disk, slot, v);
	int r = sim_write(dm->vol, disk, (uint64_t)slot * SLOT, buf, SLOT, flags);
	free(buf);
	if (r == 0) {
		m->latest_v = v;
		if (flags & SIM_FUA)
			m->durable_v = v;
	}
	return r;
}

/* Phase 1: slots 0-9 on every disk, flushed. */
static int phase_durable(struct demo *dm)
{
	for (unsigned d = 0; d < dm->ndisks; d++) {
		for (unsigned s = 0; s < 10; s++) {
			int r = write_slot(dm, d, s, 0);
			if (r)
				return r;
		}
		int r = sim_flush(dm->vol, d);
		if (r)
			return r;
		for (unsigned s = 0; s < 10; s++)
			dm->slot[d][s].durable_v = dm->slot[d][s].latest_v;
	}
	return 0;
}

static int add_fault(struct demo *dm, const char *spec)
{
	char err[128];
	struct sim_fault f;
	int r = sim_fault_parse(spec, &f, err, sizeof(err));
	if (r)
		return r;
	if ((r = sim_fault_add(dm->vol, &f)))
		return r;
	fprintf(dm->out, "  fault %s\n", spec);
	return 0;
}

/* Before phase 2: disk 3 dies halfway through it, and disk 0 loses a FUA write. */
static int schedule_write_faults(struct demo *dm, uint64_t loss_at)
{
	char spec[160];
	int r = 0;
	if (dm->ndisks > 3) {
		snprintf(spec, sizeof(spec), "device-loss,disk=3,after=%" PRIu64, loss_at);
		r = add_fault(dm, spec);
		for (unsigned s = 0; s < NSLOTS; s++)
			dm->slot[3][s].fault = 'E';
	}
	if (!r) {
		snprintf(spec, sizeof(spec), "lost-write,disk=0,sector=%" PRIu64 ",count=1",
			 15 * (uint64_t)(SLOT / dm->sector_size));
		r = add_fault(dm, spec);
		dm->slot[0][15].fault = 'L';
	}
	return r;
}

/* After the crash: bit rot in slot 2 of disk 1 and a latent error in slot 3 of
 * disk 2, which act when a read next touches them. */
static int schedule_media_faults(struct demo *dm)
{
	char spec[160];
	uint64_t spslot = SLOT / dm->sector_size;
	int r = 0;
	if (dm->ndisks > 1) {
		snprintf(spec, sizeof(spec), "flip-at-rest,disk=1,sector=%" PRIu64 ",count=1",
			 2 * spslot + 1);
		r = add_fault(dm, spec);
		dm->slot[1][2].fault = 'C';
	}
	if (!r && dm->ndisks > 2) {
		snprintf(spec, sizeof(spec), "latent,disk=2,sector=%" PRIu64 ",n=2,count=1",
			 3 * spslot + 4);
		r = add_fault(dm, spec);
		dm->slot[2][3].fault = 'E';
	}
	return r;
}

/* Phase 2: overwrite 0-5, write 10-13 (volatile), 14 and 15 with FUA. */
static int phase_volatile(struct demo *dm)
{
	static const unsigned slots[] = { 0, 1, 2, 3, 4, 5, 10, 11, 12, 13 };
	for (unsigned i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		for (unsigned d = 0; d < dm->ndisks; d++) {
			int r = write_slot(dm, d, slots[i], 0);
			if (r && !(r == -EIO && sim_disk_is_lost(dm->vol, d)))
				return r;
		}
	}
	for (unsigned d = 0; d < dm->ndisks; d++)
		for (unsigned s = 14; s < 16; s++) {
			int r = write_slot(dm, d, s, SIM_FUA);
			if (r && !(r == -EIO && sim_disk_is_lost(dm->vol, d)))
				return r;
		}
	return 0;
}

/* N new, O old, T torn, C corrupt, E read error, '.' never written. */
static char classify(struct demo *dm, unsigned d, unsigned s, const uint8_t *got)
{
	const struct slot_model *m = &dm->slot[d][s];
	if (m->latest_v == 0) {
		for (size_t i = 0; i < SLOT; i++)
			if (got[i])
				return 'C';
		return '.';
	}
	uint8_t *nw = malloc(SLOT), *old = malloc(SLOT);
	char c = '?';
	if (nw && old) {
		fill(nw, SLOT, dm->seed, d, s, m->latest_v);
		fill(old, SLOT, dm->seed, d, s, m->latest_v - 1);
		unsigned n_new = 0, n_old = 0, n_bad = 0, ss = dm->sector_size;
		for (size_t off = 0; off < SLOT; off += ss) {
			if (!memcmp(got + off, nw + off, ss))
				n_new++;
			else if (!memcmp(got + off, old + off, ss))
				n_old++;
			else
				n_bad++;
		}
		c = n_bad ? 'C' : !n_old ? 'N' : !n_new ? 'O' : 'T';
	}
	free(nw);
	free(old);
	return c;
}

/* Is state c allowed for this slot? */
static bool allowed(const struct slot_model *m, char c)
{
	if (m->fault == 'E' || m->fault == 'C')
		return c == m->fault;
	if (m->fault == 'L')
		return c == 'O'; /* the lost write never arrived */
	if (m->latest_v == 0)
		return c == '.';
	if (m->durable_v == m->latest_v)
		return c == 'N';
	return c == 'N' || c == 'O' || c == 'T';
}

static int verify(struct demo *dm, unsigned *violations)
{
	uint8_t *buf = malloc(SLOT);
	if (!buf)
		return -ENOMEM;
	fprintf(dm->out, "\nafter the crash (N new, O old, T torn, C corrupt, E read error, . never written):\n");
	fprintf(dm->out, "  slot     0123456789abcdef\n");
	for (unsigned d = 0; d < dm->ndisks; d++) {
		char row[NSLOTS + 1] = { 0 };
		for (unsigned s = 0; s < NSLOTS; s++) {
			int r = sim_read(dm->vol, d, (uint64_t)s * SLOT, buf, SLOT);
			row[s] = r == -EIO ? 'E' : r ? '?' : classify(dm, d, s, buf);
			if (!allowed(&dm->slot[d][s], row[s])) {
				(*violations)++;
				fprintf(dm->out, "  VIOLATION: disk %u slot %u is '%c'\n", d, s, row[s]);
			}
		}
		fprintf(dm->out, "  disk %-2u  %s%s\n", d, row,
			sim_disk_is_lost(dm->vol, d) ? "  (device lost)" : "");
	}
	free(buf);
	return 0;
}

static int save_log(struct demo *dm, const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/iolog.txt", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	size_t n;
	const struct sim_io *log = sim_volume_log(dm->vol, &n);
	fprintf(f, "# btrsim demo --seed %" PRIu64 ": IO log\n"
		   "#      seq disk kind         sector+n     epoch status xxh3-64 [fault:arg]\n",
		dm->seed);
	char line[256];
	for (size_t i = 0; i < n; i++) {
		sim_io_format(&log[i], line, sizeof(line));
		fprintf(f, "%s\n", line);
	}
	return fclose(f) ? -errno : 0;
}

static int mkdir_p(const char *dir)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, 0755) && errno != EEXIST ? -errno : 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int run_demo(struct demo *dm, unsigned *violations)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, dm->ndisks, DISK_SIZE, dm->seed);
	for (unsigned d = 0; d < dm->ndisks; d++)
		cfg.disk[d].sector_size = dm->sector_size;
	char err[256];
	int r = sim_volume_open(&cfg, &dm->vol, err, sizeof(err));
	if (r) {
		fprintf(stderr, "btrsim demo: %s\n", err);
		return r;
	}
	fprintf(dm->out, "volume: %u memory disks of %" PRIu64 " MiB, %u-byte sectors\n",
		dm->ndisks, DISK_SIZE >> 20, dm->sector_size);
	if ((r = phase_durable(dm)))
		return r;
	fprintf(dm->out, "phase 1: slots 0-9 (64 KiB each) written on every disk and flushed\n");
	/* The device loss lands halfway through phase 2. */
	r = schedule_write_faults(dm, sim_volume_next_seq(dm->vol) + 5 * dm->ndisks);
	if (r || (r = phase_volatile(dm)))
		return r;
	fprintf(dm->out, "phase 2: slots 0-5 overwritten and 10-13 written without a flush; "
			 "14 and 15 written with FUA\n");
	struct sim_crash_spec spec = {
		.policy = SIM_CRASH_RANDOM, .keep_probability = 0.5, .tear_probability = 0.5
	};
	struct sim_crash_result res[16];
	if ((r = sim_volume_crash(dm->vol, &spec, res)))
		return r;
	fprintf(dm->out, "crash: random policy, each volatile write kept with p=0.5, torn with p=0.5\n");
	for (unsigned d = 0; d < dm->ndisks; d++)
		fprintf(dm->out, "  disk %-2u %2zu volatile writes, %2zu persisted (%zu torn)\n", d,
			res[d].pending, res[d].persisted, res[d].torn);
	if ((r = schedule_media_faults(dm)))
		return r;
	return verify(dm, violations);
}

static int parse_args(struct demo *dm, int argc, char **argv, const char **report,
		      const char **images)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "disks", required_argument, NULL, 'd' },
		{ "sector-size", required_argument, NULL, 'S' },
		{ "report", required_argument, NULL, 'r' },
		{ "save-images", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_seed = false;
	uint64_t v;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_u64(optarg, &dm->seed, 0))
				return cli_usage_error(&cli_cmd_demo, "bad seed '%s'", optarg);
			have_seed = true;
			break;
		case 'd':
			if (cli_parse_u64(optarg, &v, 0) || v < 1 || v > 16)
				return cli_usage_error(&cli_cmd_demo, "--disks takes 1 to 16, not '%s'",
						       optarg);
			dm->ndisks = (unsigned)v;
			break;
		case 'S':
			if (cli_parse_u64(optarg, &v, 1) || (v != 512 && v != 4096))
				return cli_usage_error(&cli_cmd_demo,
						       "--sector-size takes 512 or 4096, not '%s'", optarg);
			dm->sector_size = (uint32_t)v;
			break;
		case 'r':
			*report = optarg;
			break;
		case 'i':
			*images = optarg;
			break;
		case 'h':
			return -1;
		default:
			return cli_usage_error(&cli_cmd_demo, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cli_cmd_demo, "unexpected argument '%s'", argv[optind]);
	if (!have_seed && getrandom(&dm->seed, sizeof(dm->seed), 0) != sizeof(dm->seed))
		dm->seed = (uint64_t)time(NULL);
	return 0;
}

/* Each disk's durable image as DIR/diskN.img. */
static int save_images(struct demo *dm, const char *dir)
{
	char path[4096];
	int r = mkdir_p(dir);
	if (r)
		return cli_fail(&cli_cmd_demo, "cannot create %s: %s", dir, strerror(-r));
	for (unsigned d = 0; d < dm->ndisks; d++) {
		snprintf(path, sizeof(path), "%s/disk%u.img", dir, d);
		if (sim_disk_save_image(dm->vol, d, path))
			return cli_fail(&cli_cmd_demo, "%s", sim_volume_error(dm->vol));
	}
	printf("images: %s/disk0.img ... disk%u.img\n", dir, dm->ndisks - 1);
	return 0;
}

/* DIR/summary.txt (the text printed) and DIR/iolog.txt. */
static int write_report(struct demo *dm, const char *dir, const char *text)
{
	char path[4096];
	int r = mkdir_p(dir);
	FILE *f = NULL;
	snprintf(path, sizeof(path), "%s/summary.txt", dir);
	if (!r && !(f = fopen(path, "w")))
		r = -errno;
	if (f) {
		bool ok = fputs(text, f) >= 0;
		if (fclose(f) || !ok)
			r = -EIO;
	}
	if (!r)
		r = save_log(dm, dir);
	if (r)
		return cli_fail(&cli_cmd_demo, "cannot write the report in %s: %s", dir, strerror(-r));
	printf("report: %s/summary.txt, %s/iolog.txt\n", dir, dir);
	return 0;
}

static int cmd_demo(int argc, char **argv)
{
	struct demo dm = { .ndisks = 4, .sector_size = 4096 };
	const char *report = NULL, *images = NULL;
	int rc = parse_args(&dm, argc, argv, &report, &images);
	if (rc)
		return rc < 0 ? cli_help(&cli_cmd_demo) : rc;
	char *text = NULL;
	size_t text_len = 0;
	dm.out = open_memstream(&text, &text_len);
	if (!dm.out)
		return cli_fail(&cli_cmd_demo, "%s", strerror(errno));
	fprintf(dm.out, "seed %" PRIu64 " (rerun: btrsim demo --seed %" PRIu64, dm.seed, dm.seed);
	if (dm.ndisks != 4)
		fprintf(dm.out, " --disks %u", dm.ndisks);
	if (dm.sector_size != 4096)
		fprintf(dm.out, " --sector-size %u", dm.sector_size);
	fprintf(dm.out, ")\n");
	double t0 = now_ms();
	unsigned violations = 0;
	int r = run_demo(&dm, &violations);
	if (!r) {
		fprintf(dm.out, "\nsimulated time %.1f ms, real time %.1f ms\n",
			(double)sim_volume_sim_time_ns(dm.vol) / 1e6, now_ms() - t0);
		fprintf(dm.out, "verdict: %s\n",
			violations ? "sim/ broke a promise (see VIOLATION lines)"
				   : "every disk holds a state the simulator allows");
	}
	fclose(dm.out);
	fputs(text, stdout);
	if (r)
		rc = cli_fail(&cli_cmd_demo, "%s", dm.vol ? sim_volume_error(dm.vol) : strerror(-r));
	if (!rc && report)
		rc = write_report(&dm, report, text);
	if (!rc && images)
		rc = save_images(&dm, images);
	free(text);
	sim_volume_close(dm.vol);
	return rc ? rc : violations ? 1 : 0;
}

const struct cli_cmd cli_cmd_demo = {
	.name = "demo",
	.summary = "a short tour of the simulated disks: writes, a crash, faults",
	.usage = usage_text,
	.run = cmd_demo,
};
