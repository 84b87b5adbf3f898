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
	bool dry;             /* the workload on a copy, with no fault (flight_writes) */
	uint64_t disk0_writes; /* write requests the workload makes to disk 0 */
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
	if (!r->dry && (r->sc == SC_FLIP_FLIGHT || r->sc == SC_LOST_WRITE || r->sc == SC_MISDIRECT)) {
		/* Each write to disk 0 hit with probability 5%, and one seeded
		 * write of them for certain (a workload may make few).  DUP keeps
		 * both copies on disk 0: two hits can take both copies of one
		 * block, more than it tolerates, so it takes the certain one alone. */
		struct sim_fault f = { .disk = 0, .sector = SIM_ANY_SECTOR, .probability = 0.05, .bits = 1 };
		f.kind = r->sc == SC_FLIP_FLIGHT ? SIM_FAULT_FLIP_ON_WRITE
			 : r->sc == SC_LOST_WRITE ? SIM_FAULT_LOST_WRITE
						  : SIM_FAULT_MISDIRECT;
		struct sim_fault one = f;
		one.probability = 1;
		one.count = 1;
		one.skip = (uint32_t)(next(&r->rng) % (r->disk0_writes ? r->disk0_writes : 1));
		bool dup = profiles[r->prof].bit == BTRFS_BLOCK_GROUP_DUP;
		if ((!dup && (e = sim_fault_add(r->vol, &f))) ||
		    (r->disk0_writes && (e = sim_fault_add(r->vol, &one))))
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
	if (!r->dry && r->sc == SC_DISK_LOST_IN_COMMIT) {
		/* Disk 0 vanishes at one of its first three requests of the
		 * unmount's commit (every commit flushes it and writes its two
		 * superblocks at least). */
		struct sim_fault f = { .kind = SIM_FAULT_DEVICE_LOSS, .disk = 0, .sector = SIM_ANY_SECTOR,
				       .after_seq = sim_volume_next_seq(r->vol), .skip = (uint32_t)(next(&r->rng) % 3),
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

/* The workload on a copy of the volume, with no fault: how many write
 * requests it makes to disk 0 (r->disk0_writes), so that a fault in flight
 * can pick one of them for certain. */
static void count_disk0_writes(struct run *r)
{
	sim_volume *keep = r->vol, *copy;
	r->disk0_writes = 0;
	if (sim_volume_clone(keep, &copy))
		return;
	bool *acked = calloc(r->nfiles, sizeof(*acked));
	if (!acked) {
		sim_volume_close(copy);
		return;
	}
	for (unsigned i = 0; i < r->nfiles; i++)
		acked[i] = r->files[i].acked;
	struct rc_row row = *r->row;
	size_t before = 0, n = 0;
	sim_volume_log(copy, &before);
	r->vol = copy;
	r->dry = true;
	int e = workload(r);
	r->dry = false;
	r->vol = keep;
	*r->row = row;
	for (unsigned i = 0; i < r->nfiles; i++)
		r->files[i].acked = acked[i];
	free(acked);
	const struct sim_io *log = sim_volume_log(copy, &n);
	for (size_t i = before; !e && i < n; i++)
		r->disk0_writes += log[i].disk == 0 &&
				   (log[i].kind == SIM_IO_WRITE || log[i].kind == SIM_IO_WRITE_FUA);
	sim_volume_close(copy);
}

/* A full balance (every block group relocated) and its unmount, on a copy of
 * the volume: *offset is a seeded one of the requests they make to disk 0,
 * counted from the volume's next request.  false when they make none (a
 * balance that never touches disk 0, as on a single-profile volume whose
 * chunks lie elsewhere, cannot lose it "during" the balance). */
static bool balance_disk0_request(struct run *r, uint64_t *offset)
{
	sim_volume *keep = r->vol, *copy;
	if (sim_volume_clone(keep, &copy))
		return false;
	r->vol = copy;
	ref_fs *fs;
	uint64_t from = sim_volume_next_seq(copy), hits = 0;
	size_t before = 0, n = 0;
	sim_volume_log(copy, &before);
	if (!mount(r, false, false, &fs)) {
		struct ref_balance b = { .flags = BTRFS_BALANCE_TYPE_MASK };
		struct ref_balance_stats st;
		ref_balance(fs, &b, &st);
		ref_umount(fs);
	}
	const struct sim_io *log = sim_volume_log(copy, &n);
	for (size_t i = before; i < n; i++)
		hits += log[i].disk == 0 && log[i].kind != SIM_IO_FAULT && log[i].kind != SIM_IO_CRASH;
	uint64_t pick = hits ? next(&r->rng) % hits : 0;
	bool found = false;
	for (size_t i = before; i < n && !found; i++) {
		if (log[i].disk != 0 || log[i].kind == SIM_IO_FAULT || log[i].kind == SIM_IO_CRASH)
			continue;
		if (pick-- == 0) {
			*offset = log[i].seq - from;
			found = true;
		}
	}
	r->vol = keep;
	sim_volume_close(copy);
	return found;
}

/* A full balance (every block group relocated) during which disk 0
 * vanishes, at a seeded one of the requests the balance makes to it. */
static int lost_in_balance(struct run *r)
{
	uint64_t offset;
	if (!balance_disk0_request(r, &offset)) {
		r->row->not_injected = "the balance makes no request to disk 0";
		return 0;
	}
	ref_fs *fs;
	int e = mount(r, false, false, &fs);
	if (e)
		return failf(r, -e, "mount before the balance failed");
	struct sim_fault f = { .kind = SIM_FAULT_DEVICE_LOSS, .disk = 0, .sector = SIM_ANY_SECTOR,
			       .after_seq = sim_volume_next_seq(r->vol) + offset,
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
	if (!r->row->injected)
		r->row->not_injected = "the balance ended before its request to disk 0";
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
		/* The refusal to mount is how the loss is reported: detected. */
		row->lost = row->files;
		row->detected++;
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
	if (!e && (sc == SC_FLIP_FLIGHT || sc == SC_LOST_WRITE || sc == SC_MISDIRECT))
		count_disk0_writes(&r);
	if (!e && !(e = workload(&r)) && !(e = after(&r))) {
		if (!row->injected && !row->not_injected)
			row->not_injected = sc == SC_FLIP_REST || sc == SC_LATENT
						    ? "disk 0 holds none of the files' data nor the fs tree's root"
						    : "the workload makes no write request to disk 0";
		verdict(&r);
	}
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
				char why[96];
				if (o->progress)
					fprintf(o->progress, "%-8s %u disks  %-22s injected %llu detected %llu repaired %llu lost %llu wrong %llu%s%s\n",
						profiles[p].name, n, scenarios[sc], (unsigned long long)row->injected,
						(unsigned long long)row->detected, (unsigned long long)row->repaired,
						(unsigned long long)row->lost, (unsigned long long)row->wrong,
						rc_row_failed(row) || row->not_injected ? "  " : "",
						rc_row_failed(row) || row->not_injected
							? rc_row_verdict(row, why, sizeof(why))
							: "");
			}
		}
	}
	return 0;
}

bool rc_row_failed(const struct rc_row *r)
{
	return r->wrong || (r->within && (r->lost || !r->mounted));
}

const char *rc_row_verdict(const struct rc_row *r, char *buf, size_t len)
{
	if (rc_row_failed(r))
		snprintf(buf, len, "FAILED");
	else if (r->not_injected)
		snprintf(buf, len, "not injected: %s", r->not_injected);
	else if (!r->mounted)
		snprintf(buf, len, "lost, mount refused");
	else if (r->lost)
		snprintf(buf, len, r->detected ? "lost, detected" : "lost, reads failed with EIO");
	else
		snprintf(buf, len, "ok");
	return buf;
}

void rc_report(FILE *out, const struct rc_opts *o, const struct rc_row *rows, size_t nrows)
{
	size_t failed = 0, skipped = 0;
	for (size_t i = 0; i < nrows; i++) {
		failed += rc_row_failed(&rows[i]);
		skipped += !rc_row_failed(&rows[i]) && rows[i].not_injected;
	}
	fprintf(out, "# RAID fault campaign\n\n");
	fprintf(out, "Seed %llu; %u files per run (1 byte to 2 MiB, half made durable by a sync, the rest by the unmount); %zu runs, %zu failed, %zu whose fault could not be injected (neither passed nor failed: the verdict says why).\n\n",
		(unsigned long long)o->seed, o->files, nrows, failed, skipped);
	fprintf(out, "Each run: a new volume (`mkfs -d P -m P`), the workload, the fault, then every acknowledged file read back (mounted degraded when a disk is gone) and a scrub that mends. "
		     "*injected*: fault events that acted on the disks (a flipped bit, a latent sector, a lost or misdirected write request, a disk lost); *detected*: what the devices' error counters hold after the reads and the scrub (read, write and flush errors of requests, corrupted sectors), the parity and superblock sectors the scrub found wrong, the devices found missing, and a mount refused (1); *repaired*: sectors rewritten by read repair and the scrub; *lost*: acknowledged files unreadable (EIO, or the volume not mountable); *wrong*: files read back with wrong bytes. "
		     "*within*: the fault stays within what the profile tolerates (then nothing may be lost); *wrong* must be 0 everywhere. "
		     "Faults in flight and at rest act on disk 0: in flight, each write to it with probability 5%% and one seeded write for certain (DUP: that one alone, its two copies sharing the disk); disks lost are the first ones (as many as the profile tolerates, at least one).\n");
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
			char v[128];
			fprintf(out, "| %u | %s | %s | %llu | %llu | %llu | %llu of %llu%s | %llu | %s%s%s |\n", r->disks,
				scenarios[r->scenario], r->within ? "yes" : "no", (unsigned long long)r->injected,
				(unsigned long long)r->detected, (unsigned long long)r->repaired,
				(unsigned long long)r->lost, (unsigned long long)r->files,
				r->mounted ? "" : " (no mount)", (unsigned long long)r->wrong,
				rc_row_failed(r) ? "**" : "", rc_row_verdict(r, v, sizeof(v)),
				rc_row_failed(r) ? "**" : "");
		}
	}
}
