/*
 * raidcamp.c - fault campaigns per profile (raidcamp.h).
 *
 * One run: n memory disks, `mkfs -d P -m P`, a workload of seeded files in
 * two halves (the first made durable by a sync, the second by the unmount),
 * the scenario's fault (or, for "disk lost in a balance", a full balance
 * during which disk 0 vanishes), then the verdict: the volume mounted (degraded when
 * a disk is gone), every acknowledged file read and compared with what was
 * written, a scrub (mounted for writing: it mends what it can), and the
 * counters.  Every random choice comes from the campaign's seed, mixed with
 * the run's profile, disk count and scenario.
 */
#include "traces/raidcamp.h"

#include "ref/mkfs.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MIB (UINT64_C(1) << 20)

static const struct {
	const char *name;
	uint64_t bit;
	unsigned devs_min;  /* as mkfs.btrfs counts them */
	unsigned tolerated; /* disks the profile may lose */
} profiles[] = {
	{ "single", 0, 1, 0 },
	{ "dup", BTRFS_BLOCK_GROUP_DUP, 1, 0 },
	{ "raid0", BTRFS_BLOCK_GROUP_RAID0, 2, 0 },
	{ "raid1", BTRFS_BLOCK_GROUP_RAID1, 2, 1 },
	{ "raid1c3", BTRFS_BLOCK_GROUP_RAID1C3, 3, 2 },
	{ "raid1c4", BTRFS_BLOCK_GROUP_RAID1C4, 4, 3 },
	{ "raid10", BTRFS_BLOCK_GROUP_RAID10, 2, 1 },
	{ "raid5", BTRFS_BLOCK_GROUP_RAID5, 2, 1 },
	{ "raid6", BTRFS_BLOCK_GROUP_RAID6, 3, 2 },
};
#define NPROFILES ((int)(sizeof(profiles) / sizeof(profiles[0])))

enum {
	SC_FLIP_REST,
	SC_FLIP_FLIGHT,
	SC_LATENT,
	SC_LOST_WRITE,
	SC_MISDIRECT,
	SC_DISK_LOST,
	SC_DISK_LOST_IN_COMMIT,
	SC_REPLACE,
	SC_DISK_LOST_IN_BALANCE,
	NSCENARIOS
};
static const char *const scenarios[NSCENARIOS] = {
	"bit flips at rest", "bit flips in flight", "latent sectors", "lost writes",
	"misdirected writes", "disks lost", "disk lost in a commit", "disk replaced",
	"disk lost in a balance",
};

const char *rc_profile_name(int i) { return i >= 0 && i < NPROFILES ? profiles[i].name : "?"; }
int rc_nprofiles(void) { return NPROFILES; }
const char *rc_scenario_name(int i) { return i >= 0 && i < NSCENARIOS ? scenarios[i] : "?"; }
int rc_nscenarios(void) { return NSCENARIOS; }

int rc_profile_lookup(const char *name)
{
	for (int i = 0; i < NPROFILES; i++)
		if (!strcmp(profiles[i].name, name))
			return i;
	return -1;
}

static uint64_t next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	uint64_t z = *s;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct file {
	char path[24];
	uint8_t *data;
	size_t len;
	bool acked; /* made durable by a sync or the unmount that returned 0 */
};

struct run {
	const struct rc_opts *o;
	int prof, sc;
	unsigned n;
	uint64_t rng;
	sim_volume *vol;
	struct file *files;
	unsigned nfiles;
	struct rc_row *row;
	char *err;
	size_t errlen;
};

static int failf(struct run *r, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -e;
}

static int mount(struct run *r, bool degraded, bool spares, ref_fs **fs)
{
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .degraded = degraded, .spares = spares },
				     .clock_start = 1700000000 };
	char err[256];
	return ref_mount(r->vol, &mo, fs, err, sizeof(err));
}

/* Files [from, to) of the workload written. */
static int write_files(struct run *r, ref_fs *fs, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		struct file *f = &r->files[i];
		int e = ref_create(fs, f->path, 0644);
		if (e >= 0)
			e = (int)ref_write(fs, f->path, f->data, f->len, 0);
		if (e < 0)
			return e;
	}
	return 0;
}

/* A physical place on disk 0 holding part of an acknowledged file's data (or
 * the fs tree's root block): 1 with it, 0 when the pick found none there. */
static int pick_on_disk0(struct run *r, ref_fs *fs, uint64_t *sector)
{
	uint64_t logical = 0, len = 0;
	if (next(&r->rng) % 4 == 0) { /* metadata: the fs tree's root */
		struct ref_root root;
		if (ref_find_root(fs, BTRFS_FS_TREE_OBJECTID, &root))
			return 0;
		logical = root.bytenr;
		len = 4096;
	} else {
		struct file *f = &r->files[next(&r->rng) % r->nfiles];
		struct ref_ino ino;
		struct ref_root root;
		if (!f->acked || ref_lookup_path(fs, f->path, false, &ino) ||
		    ref_find_root(fs, ino.subvol, &root))
			return 0;
		struct ref_key k = { ino.ino, BTRFS_EXTENT_DATA_KEY, 0 };
		struct ref_path p;
		if (ref_search(fs, &root, &k, &p))
			return 0;
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		const struct btrfs_file_extent_item *fe = (const void *)d;
		if (k.objectid == ino.ino && k.type == BTRFS_EXTENT_DATA_KEY &&
		    size >= sizeof(*fe) && fe->type == BTRFS_FILE_EXTENT_REG && LE64(fe->disk_bytenr)) {
			logical = LE64(fe->disk_bytenr);
			len = LE64(fe->disk_num_bytes);
		}
		ref_path_release(fs, &p);
		if (!len)
			return 0;
	}
	uint64_t at = logical + next(&r->rng) % (len / 4096) * 4096;
	struct ref_phys ph[4];
	uint64_t run;
	int n = ref_map(fs, at, ph, 4, &run);
	for (int i = 0; i < n; i++)
		if (ph[i].disk == 0) {
			*sector = ph[i].physical / 4096;
			return 1;
		}
	return 0;
}

/* Bit flips or latent errors on 8 allocated sectors of disk 0. */
static int at_rest(struct run *r)
{
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *fs;
	char err[256];
	int e = ref_open(r->vol, &oo, &fs, err, sizeof(err));
	if (e)
		return failf(r, -e, "open before the faults: %s", err);
	for (int tries = 0; r->row->injected < 8 && tries < 200; tries++) {
		uint64_t sector;
		if (pick_on_disk0(r, fs, &sector) != 1)
			continue;
		if (r->sc == SC_LATENT)
			e = sim_disk_add_latent(r->vol, 0, sector, 1);
		else
			e = sim_disk_flip_bit(r->vol, 0, sector, (uint32_t)(next(&r->rng) % 32768));
		if (e) {
			ref_close(fs);
			return failf(r, -e, "injecting: %s", sim_volume_error(r->vol));
		}
		r->row->injected++;
	}
	ref_close(fs);
	return 0;
}

/* Devices the mounted file system lacks: a lost disk, found missing. */
static uint64_t missing_devices(ref_fs *fs)
{
	struct ref_dev_stats st[SIM_MAX_DISKS];
	size_t n = 0;
	ref_dev_stats(fs, st, SIM_MAX_DISKS, &n);
	uint64_t all = LE64(ref_super(fs)->num_devices);
	return all > n ? all - n : 0;
}

static uint64_t disk_faults(struct run *r)
{
	uint64_t t = 0;
	for (unsigned d = 0; d < r->n; d++) {
		struct sim_disk_stats st;
		if (!sim_disk_stats(r->vol, d, &st))
			t += st.faults;
	}
	return t;
}

/* The workload, with the scenario's faults where they belong. */
static int workload(struct run *r)
{
	ref_fs *fs;
	int e = mount(r, false, false, &fs);
	if (e)
		return failf(r, -e, "mount after mkfs failed");
	if (r->sc == SC_FLIP_FLIGHT || r->sc == SC_LOST_WRITE || r->sc == SC_MISDIRECT) {
		struct sim_fault f = { .disk = 0, .sector = SIM_ANY_SECTOR, .probability = 0.05, .bits = 1 };
		f.kind = r->sc == SC_FLIP_FLIGHT ? SIM_FAULT_FLIP_ON_WRITE
			 : r->sc == SC_LOST_WRITE ? SIM_FAULT_LOST_WRITE
						  : SIM_FAULT_MISDIRECT;
		if ((e = sim_fault_add(r->vol, &f)))
			return failf(r, -e, "fault: %s", sim_volume_error(r->vol));
	}
	unsigned half = r->nfiles / 2;
	if ((e = write_files(r, fs, 0, half)) || (e = ref_sync(fs))) {
		ref_umount(fs);
		return failf(r, -e, "workload: %s", ref_error(fs));
	}
	for (unsigned i = 0; i < half; i++)
		r->files[i].acked = true;
	if ((e = write_files(r, fs, half, r->nfiles))) {
		ref_umount(fs);
		return failf(r, -e, "workload: %s", ref_error(fs));
	}
	if (r->sc == SC_DISK_LOST_IN_COMMIT) { /* disk 0 vanishes a few requests into the commit */
		struct sim_fault f = { .kind = SIM_FAULT_DEVICE_LOSS, .disk = 0, .sector = SIM_ANY_SECTOR,
				       .after_seq = sim_volume_next_seq(r->vol) + 4 + next(&r->rng) % 8,
				       .probability = 1, .count = 1 };
		if ((e = sim_fault_add(r->vol, &f)))
			return failf(r, -e, "fault: %s", sim_volume_error(r->vol));
	}
	/* An unmount that fails (the commit met the fault) acknowledges nothing. */
	if (ref_umount(fs) == 0)
		for (unsigned i = half; i < r->nfiles; i++)
			r->files[i].acked = true;
	sim_fault_clear(r->vol);
	r->row->injected += disk_faults(r);
	return 0;
}

/* A full balance (every block group relocated) and its unmount: how many
 * requests they make, on a copy of the volume (0 when it cannot tell). */
static uint64_t balance_requests(struct run *r)
{
	sim_volume *keep = r->vol, *copy;
	if (sim_volume_clone(keep, &copy))
		return 0;
	r->vol = copy;
	ref_fs *fs;
	uint64_t n = 0, from = sim_volume_next_seq(copy);
	if (!mount(r, false, false, &fs)) {
		struct ref_balance b = { .flags = BTRFS_BALANCE_TYPE_MASK };
		struct ref_balance_stats st;
		ref_balance(fs, &b, &st);
		ref_umount(fs);
		n = sim_volume_next_seq(copy) - from;
	}
	r->vol = keep;
	sim_volume_close(copy);
	return n;
}

/* A full balance (every block group relocated) during which disk 0
 * vanishes, at a seeded request of those the balance makes. */
static int lost_in_balance(struct run *r)
{
	uint64_t span = balance_requests(r);
	ref_fs *fs;
	int e = mount(r, false, false, &fs);
	if (e)
		return failf(r, -e, "mount before the balance failed");
	struct sim_fault f = { .kind = SIM_FAULT_DEVICE_LOSS, .disk = 0, .sector = SIM_ANY_SECTOR,
			       .after_seq = sim_volume_next_seq(r->vol) + next(&r->rng) % (span ? span : 1),
			       .probability = 1, .count = 1 };
	if ((e = sim_fault_add(r->vol, &f))) {
		ref_umount(fs);
		return failf(r, -e, "fault: %s", sim_volume_error(r->vol));
	}
	struct ref_balance b = { .flags = BTRFS_BALANCE_TYPE_MASK };
	struct ref_balance_stats st;
	ref_balance(fs, &b, &st); /* it may fail: the verdict judges what is left */
	ref_umount(fs);
	sim_fault_clear(r->vol);
	r->row->injected += disk_faults(r);
	return 0;
}

static int after(struct run *r)
{
	unsigned lose = profiles[r->prof].tolerated ? profiles[r->prof].tolerated : 1;
	if (lose >= r->n)
		lose = r->n - 1;
	switch (r->sc) {
	case SC_FLIP_REST:
	case SC_LATENT: return at_rest(r);
	case SC_DISK_LOST:
		for (unsigned d = 0; d < lose; d++)
			sim_disk_lose(r->vol, d);
		r->row->injected += lose;
		return 0;
	case SC_DISK_LOST_IN_BALANCE: return lost_in_balance(r);
	case SC_REPLACE: {
		sim_disk_lose(r->vol, 0);
		sim_disk_replace(r->vol, 0);
		r->row->injected++;
		ref_fs *fs;
		if (mount(r, true, true, &fs))
			return 0; /* not mountable: the verdict counts the loss */
		r->row->detected += missing_devices(fs);
		struct ref_replace_stats st;
		ref_device_replace(fs, 1, 0, false, &st); /* mkfs gave disk 0 devid 1 */
		ref_umount(fs);
		return 0;
	}
	default: return 0;
	}
}

/* Every acknowledged file read and compared; then a scrub that mends. */
static void verdict(struct run *r)
{
	struct rc_row *row = r->row;
	ref_fs *fs;
	for (unsigned i = 0; i < r->nfiles; i++)
		row->files += r->files[i].acked;
	if (mount(r, true, false, &fs)) {
		row->lost = row->files;
		return;
	}
	row->mounted = true;
	row->detected += missing_devices(fs);
	uint8_t *buf = malloc(2 * MIB + 1);
	for (unsigned i = 0; i < r->nfiles && buf; i++) {
		struct file *f = &r->files[i];
		if (!f->acked)
			continue;
		struct ref_ino ino;
		ssize_t got = ref_lookup_path(fs, f->path, false, &ino) ? -1
			      : ref_pread(fs, &ino, buf, 2 * MIB + 1, 0);
		if (got < 0)
			row->lost++;
		else if ((size_t)got != f->len || memcmp(buf, f->data, f->len))
			row->wrong++;
	}
	free(buf);
	/* Detected: what the devices' error counters hold by now (every read,
	 * write and flush error and every corruption met since mkfs, the
	 * scrub's included), with the parity and superblock errors the scrub
	 * found (which the counters leave out). */
	struct ref_scrub_dev devs[SIM_MAX_DISKS];
	size_t nd = 0;
	if (!ref_scrub(fs, false, devs, &nd))
		for (size_t i = 0; i < nd; i++) {
			row->detected += devs[i].parity_errors + devs[i].super_errors;
			row->repaired += devs[i].corrected_errors;
		}
	row->repaired += ref_read_rewritten(fs);
	struct ref_dev_stats st[SIM_MAX_DISKS];
	size_t ns = 0;
	ref_dev_stats(fs, st, SIM_MAX_DISKS, &ns);
	for (size_t i = 0; i < ns; i++)
		for (int v = 0; v < BTRFS_DEV_STAT_VALUES_MAX; v++)
			row->detected += st[i].values[v];
	ref_umount(fs);
}

static int run_one(const struct rc_opts *o, int prof, unsigned n, int sc, struct rc_row *row,
		   char *err, size_t errlen)
{
	struct run r = { o, prof, sc, n, o->seed ^ ((uint64_t)prof << 40 | (uint64_t)n << 20 | (uint64_t)sc),
			 NULL, NULL, o->files, row, err, errlen };
	*row = (struct rc_row){ .profile = prof, .disks = n, .scenario = sc };
	unsigned tol = profiles[prof].tolerated;
	row->within = sc == SC_DISK_LOST || sc == SC_DISK_LOST_IN_COMMIT || sc == SC_REPLACE ||
				      sc == SC_DISK_LOST_IN_BALANCE
			      ? tol >= 1
		      : tol >= 1 || profiles[prof].bit == BTRFS_BLOCK_GROUP_DUP;
	struct sim_volume_config cfg;
	sim_config_init(&cfg, n, 128 * MIB, next(&r.rng));
	cfg.latency = (struct sim_latency){ 0 };
	int e = sim_volume_open(&cfg, &r.vol, err, errlen);
	if (e)
		return e;
	struct ref_mkfs_opts mo;
	ref_mkfs_defaults(&mo);
	mo.seed = next(&r.rng);
	mo.time = 1700000000;
	mo.data_profile = mo.meta_profile = profiles[prof].bit;
	if ((e = ref_mkfs(r.vol, &mo, NULL, err, errlen))) {
		sim_volume_close(r.vol);
		return e;
	}
	r.files = calloc(r.nfiles, sizeof(*r.files));
	for (unsigned i = 0; r.files && i < r.nfiles; i++) {
		struct file *f = &r.files[i];
		snprintf(f->path, sizeof(f->path), "/f%u", i);
		f->len = 1 + next(&r.rng) % (2 * MIB);
		if (!(f->data = malloc(f->len)))
			break;
		for (size_t b = 0; b < f->len; b += 8) {
			uint64_t v = next(&r.rng);
			memcpy(f->data + b, &v, f->len - b < 8 ? f->len - b : 8);
		}
	}
	if (!r.files || !r.files[r.nfiles - 1].data)
		e = -ENOMEM;
	if (!e && !(e = workload(&r)) && !(e = after(&r)))
		verdict(&r);
	for (unsigned i = 0; r.files && i < r.nfiles; i++)
		free(r.files[i].data);
	free(r.files);
	sim_volume_close(r.vol);
	return e;
}

int rc_run(const struct rc_opts *o, struct rc_row **rows, size_t *nrows, char *err, size_t errlen)
{
	*rows = NULL;
	*nrows = 0;
	size_t cap = 0;
	for (int p = 0; p < NPROFILES; p++) {
		if (o->profiles && !(o->profiles >> p & 1))
			continue;
		for (size_t d = 0; d < o->ndisks; d++) {
			unsigned n = o->disks[d];
			if (n < profiles[p].devs_min)
				continue;
			for (int sc = 0; sc < NSCENARIOS; sc++) {
				if (*nrows == cap) {
					cap = cap ? 2 * cap : 64;
					void *np = realloc(*rows, cap * sizeof(**rows));
					if (!np)
						return snprintf(err, errlen, "out of memory"), -ENOMEM;
					*rows = np;
				}
				struct rc_row *row = &(*rows)[*nrows];
				int e = run_one(o, p, n, sc, row, err, errlen);
				if (e)
					return e;
				(*nrows)++;
				if (o->progress)
					fprintf(o->progress, "%-8s %u disks  %-22s injected %llu detected %llu repaired %llu lost %llu wrong %llu%s\n",
						profiles[p].name, n, scenarios[sc], (unsigned long long)row->injected,
						(unsigned long long)row->detected, (unsigned long long)row->repaired,
						(unsigned long long)row->lost, (unsigned long long)row->wrong,
						rc_row_failed(row) ? "  FAILED" : "");
			}
		}
	}
	return 0;
}

bool rc_row_failed(const struct rc_row *r)
{
	return r->wrong || (r->within && (r->lost || !r->mounted));
}

void rc_report(FILE *out, const struct rc_opts *o, const struct rc_row *rows, size_t nrows)
{
	size_t failed = 0;
	for (size_t i = 0; i < nrows; i++)
		failed += rc_row_failed(&rows[i]);
	fprintf(out, "# RAID fault campaign\n\n");
	fprintf(out, "Seed %llu; %u files per run (1 byte to 2 MiB, half made durable by a sync, the rest by the unmount); %zu runs, %zu failed.\n\n",
		(unsigned long long)o->seed, o->files, nrows, failed);
	fprintf(out, "Each run: a new volume (`mkfs -d P -m P`), the workload, the fault, then every acknowledged file read back (mounted degraded when a disk is gone) and a scrub that mends. "
		     "*injected*: fault events that acted on the disks (a flipped bit, a latent sector, a lost or misdirected write request, a disk lost); *detected*: what the devices' error counters hold after the reads and the scrub (read, write and flush errors of requests, corrupted sectors), the parity and superblock sectors the scrub found wrong, and the devices found missing; *repaired*: sectors rewritten by read repair and the scrub; *lost*: acknowledged files unreadable (EIO, or the volume not mountable); *wrong*: files read back with wrong bytes. "
		     "*within*: the fault stays within what the profile tolerates (then nothing may be lost); *wrong* must be 0 everywhere. "
		     "Faults in flight and at rest act on disk 0; disks lost are the first ones (as many as the profile tolerates, at least one).\n");
	for (int p = 0; p < NPROFILES; p++) {
		bool any = false;
		for (size_t i = 0; i < nrows && !any; i++)
			any = rows[i].profile == p;
		if (!any)
			continue;
		fprintf(out, "\n## %s\n\n| disks | fault | within | injected | detected | repaired | lost | wrong | verdict |\n|---|---|---|---|---|---|---|---|---|\n",
			profiles[p].name);
		for (size_t i = 0; i < nrows; i++) {
			const struct rc_row *r = &rows[i];
			if (r->profile != p)
				continue;
			fprintf(out, "| %u | %s | %s | %llu | %llu | %llu | %llu of %llu%s | %llu | %s |\n", r->disks,
				scenarios[r->scenario], r->within ? "yes" : "no", (unsigned long long)r->injected,
				(unsigned long long)r->detected, (unsigned long long)r->repaired,
				(unsigned long long)r->lost, (unsigned long long)r->files,
				r->mounted ? "" : " (no mount)", (unsigned long long)r->wrong,
				rc_row_failed(r) ? "**FAILED**" : r->lost ? "lost, detected" : "ok");
		}
	}
}
