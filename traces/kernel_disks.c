/*
 * kernel_disks.c - the disks of a sim volume served as files through FUSE
 * (libfuse3), so that a loop device over such a file shows btrsim every
 * request the kernel makes to it.
 *
 * Each open file is in direct-IO mode and the connection has no writeback
 * cache: every read and write the loop driver makes reaches this server as
 * it happens, and nothing of the kernel's sits in a page cache between them.
 * The loop driver turns a flush into an fsync of its backing file (and a
 * FUA write, which it does not pass on, into a write and a flush), and a
 * discard into a hole punched: here those are sim_flush and sim_discard.
 * Requests not on sector boundaries (mkfs.btrfs writing the file itself)
 * are read-modify-written.
 *
 * One thread serves the requests one at a time (fuse_loop): the sim volume
 * is single-threaded, and the order in which this thread serves them is the
 * order of the IO log.  The server only touches memory, so it never waits
 * on the devices it serves.
 */
#define FUSE_USE_VERSION 31

#include "traces/kernel.h"

#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

struct kdisks {
	sim_volume *vol;
	enum kdisk_mode mode;
	unsigned ndisks;
	struct fuse *fuse;
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* KDISK_STALL: a stalled flush waits for the abort */
	bool aborted;
	uint64_t errors;
	/* KDISK_NOFUA: writes since each disk's last flush */
	uint64_t since_flush[SIM_MAX_DISKS];
	char path[SIM_MAX_DISKS][4096 + 16];
	char mnt[4096];
	char abort_path[96]; /* the connection's abort file in the fuse control fs */
};

static const char *const mode_names[KDISK_NMODES] = { "honest", "no-flush", "no-fua", "tear",
						       "stall" };

const char *kdisk_mode_name(enum kdisk_mode m)
{
	return (unsigned)m < KDISK_NMODES ? mode_names[m] : NULL;
}

int kdisk_mode_parse(const char *name)
{
	for (int m = 0; m < KDISK_NMODES; m++)
		if (!strcmp(name, mode_names[m]))
			return m;
	return -1;
}

static struct kdisks *self(void)
{
	return fuse_get_context()->private_data;
}

/* "/diskN" with N below ndisks: N; else -1. */
static int disk_of(const struct kdisks *k, const char *path)
{
	if (strncmp(path, "/disk", 5) || !path[5])
		return -1;
	char *end;
	unsigned long n = strtoul(path + 5, &end, 10);
	if (*end || n >= k->ndisks || (path[5] == '0' && path[6]))
		return -1;
	return (int)n;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Every write must reach the server as the kernel makes it. */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* The loop driver's requests up to 1 MiB arrive whole (the kernel's
	 * default would cut them at 128 KiB). */
	conn->max_write = 1u << 20;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->attr_timeout = 3600;
	cfg->entry_timeout = 3600;
	cfg->use_ino = 1;
	return fuse_get_context()->private_data;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	struct kdisks *k = self();
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		st->st_ino = 1;
		return 0;
	}
	int d = disk_of(k, path);
	if (d < 0)
		return -ENOENT;
	pthread_mutex_lock(&k->lock);
	st->st_size = (off_t)sim_disk_size(k->vol, (unsigned)d);
	pthread_mutex_unlock(&k->lock);
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = 1;
	st->st_ino = (ino_t)d + 2;
	st->st_blksize = 4096;
	st->st_blocks = st->st_size / 512;
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	struct kdisks *k = self();
	if (strcmp(path, "/"))
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (unsigned d = 0; d < k->ndisks; d++) {
		char name[32];
		snprintf(name, sizeof(name), "disk%u", d);
		fill(buf, name, NULL, 0, 0);
	}
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	int d = disk_of(self(), path);
	if (d < 0)
		return -ENOENT;
	fi->fh = (uint64_t)d;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

/* A failed sim request: counted, and the kernel sees its errno. */
static int failed(struct kdisks *k, int r)
{
	k->errors++;
	return r;
}

/* Reads [off, off + len) of disk d into buf: whole sectors straight, the
 * ragged ends through a sector buffer.  0 or -errno; the lock is held. */
static int read_span(struct kdisks *k, unsigned d, uint64_t off, uint8_t *buf, size_t len)
{
	uint32_t ss = sim_disk_sector_size(k->vol, d);
	uint8_t sec[4096];
	while (len) {
		uint64_t in = off % ss;
		if (in || len < ss) {
			size_t n = ss - in < len ? ss - in : len;
			int r = sim_read(k->vol, d, off - in, sec, ss);
			if (r)
				return r;
			memcpy(buf, sec + in, n);
			off += n;
			buf += n;
			len -= n;
			continue;
		}
		size_t n = len - len % ss;
		if (n > SIM_MAX_IO_BYTES)
			n = SIM_MAX_IO_BYTES;
		int r = sim_read(k->vol, d, off, buf, n);
		if (r)
			return r;
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

static int fs_read(const char *path, char *buf, size_t len, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	struct kdisks *k = self();
	unsigned d = (unsigned)fi->fh;
	pthread_mutex_lock(&k->lock);
	uint64_t size = sim_disk_size(k->vol, d);
	int r = 0;
	if (off < 0)
		r = -EINVAL;
	else if ((uint64_t)off >= size)
		len = 0;
	else if (len > size - (uint64_t)off)
		len = (size_t)(size - (uint64_t)off);
	if (!r && len && (r = read_span(k, d, (uint64_t)off, (uint8_t *)buf, len)))
		r = failed(k, r);
	pthread_mutex_unlock(&k->lock);
	return r ? r : (int)len;
}

/* One write of whole sectors.  The lock is held. */
static int write_sectors(struct kdisks *k, unsigned d, uint64_t off, const uint8_t *buf,
			 size_t len)
{
	while (len) {
		size_t n = len > SIM_MAX_IO_BYTES ? SIM_MAX_IO_BYTES : len;
		int r = sim_write(k->vol, d, off, buf, n, 0);
		if (r)
			return r;
		k->since_flush[d]++;
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

static int fs_write(const char *path, const char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	(void)path;
	struct kdisks *k = self();
	unsigned d = (unsigned)fi->fh;
	pthread_mutex_lock(&k->lock);
	uint64_t size = sim_disk_size(k->vol, d);
	uint32_t ss = sim_disk_sector_size(k->vol, d);
	int r = 0;
	if (off < 0 || (uint64_t)off >= size || len > size - (uint64_t)off) {
		r = -ENOSPC; /* a disk does not grow */
	} else if ((uint64_t)off % ss == 0 && len % ss == 0) {
		r = write_sectors(k, d, (uint64_t)off, (const uint8_t *)buf, len);
	} else {
		/* Ragged: the covering sectors, read, patched, written whole. */
		uint64_t lo = (uint64_t)off - (uint64_t)off % ss;
		uint64_t hi = (uint64_t)off + len;
		hi += (ss - hi % ss) % ss;
		uint8_t *tmp = malloc((size_t)(hi - lo));
		if (!tmp)
			r = -ENOMEM;
		else if (!(r = read_span(k, d, lo, tmp, (size_t)(hi - lo)))) {
			memcpy(tmp + ((uint64_t)off - lo), buf, len);
			r = write_sectors(k, d, lo, tmp, (size_t)(hi - lo));
		}
		free(tmp);
	}
	if (r)
		r = failed(k, r);
	pthread_mutex_unlock(&k->lock);
	return r ? r : (int)len;
}

static int flush_disk(struct kdisks *k, unsigned d)
{
	pthread_mutex_lock(&k->lock);
	int r = 0;
	bool lone = k->since_flush[d] == 1;
	if (k->mode == KDISK_STALL) {
		while (!k->aborted)
			pthread_cond_wait(&k->wake, &k->lock);
		r = -EIO;
	} else if (k->mode == KDISK_NOFLUSH || (k->mode == KDISK_NOFUA && lone)) {
		/* acknowledged, nothing made durable */
	} else if ((r = sim_flush(k->vol, d))) {
		r = failed(k, r);
	}
	k->since_flush[d] = 0;
	pthread_mutex_unlock(&k->lock);
	return r;
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	return flush_disk(self(), (unsigned)fi->fh);
}

static int fs_flush(const char *path, struct fuse_file_info *fi)
{
	/* close(2) of the file: not a cache flush (no disk flushes on close) */
	(void)path;
	(void)fi;
	return 0;
}

static int fs_fallocate(const char *path, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	(void)path;
	struct kdisks *k = self();
	unsigned d = (unsigned)fi->fh;
	/* The loop driver's discard and write-zeroes: a hole punched (or
	 * zeroed) in its file, inside the disk. */
	const int punch = 0x02 /* FALLOC_FL_PUNCH_HOLE */, keep = 0x01, zero = 0x10;
	if (!(mode & (punch | zero)))
		return mode & ~keep ? -EOPNOTSUPP : 0; /* preallocation: nothing to do */
	pthread_mutex_lock(&k->lock);
	uint64_t size = sim_disk_size(k->vol, d);
	uint32_t ss = sim_disk_sector_size(k->vol, d);
	int r = 0;
	if (off < 0 || len <= 0 || (uint64_t)off >= size || (uint64_t)len > size - (uint64_t)off) {
		r = -EINVAL;
	} else {
		/* Whole sectors are discarded; the ragged ends written as zeros. */
		uint64_t a = (uint64_t)off, e = a + (uint64_t)len;
		uint64_t lo = a + (ss - a % ss) % ss, hi = e - e % ss;
		static const uint8_t zeros[4096];
		if (lo >= hi) {
			lo = hi = a;
		}
		uint8_t *tmp = NULL;
		for (int end = 0; end < 2 && !r; end++) {
			uint64_t s = end ? hi : a, t = end ? e : lo;
			if (s >= t)
				continue;
			uint64_t base = s - s % ss;
			if (!tmp && !(tmp = malloc(ss))) {
				r = -ENOMEM;
				break;
			}
			if (!(r = read_span(k, d, base, tmp, ss))) {
				memcpy(tmp + (s - base), zeros, (size_t)(t - s));
				r = write_sectors(k, d, base, tmp, ss);
			}
		}
		free(tmp);
		for (uint64_t p = lo; !r && p < hi;) {
			uint64_t n = hi - p > SIM_MAX_IO_BYTES ? SIM_MAX_IO_BYTES : hi - p;
			r = sim_discard(k->vol, d, p, (size_t)n);
			p += n;
		}
		if (r)
			r = failed(k, r);
	}
	pthread_mutex_unlock(&k->lock);
	return r;
}

static const struct fuse_operations kdisk_ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.fsync = fs_fsync,
	.fallocate = fs_fallocate,
};

static bool fusectl_mounted(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char line[512];
	bool yes = false;
	while (f && !yes && fgets(line, sizeof(line), f))
		yes = strstr(line, " /sys/fs/fuse/connections fusectl ") != NULL;
	if (f)
		fclose(f);
	return yes;
}

static void *serve(void *arg)
{
	struct kdisks *k = arg;
	fuse_loop(k->fuse);
	return NULL;
}

int kdisks_start(sim_volume *vol, const char *mountpoint, enum kdisk_mode mode,
		 struct kdisks **out, char *err, size_t errlen)
{
	struct kdisks *k = calloc(1, sizeof(*k));
	if (!k) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	k->vol = vol;
	k->mode = mode;
	k->ndisks = sim_volume_ndisks(vol);
	snprintf(k->mnt, sizeof(k->mnt), "%s", mountpoint);
	for (unsigned d = 0; d < k->ndisks; d++)
		snprintf(k->path[d], sizeof(k->path[d]), "%s/disk%u", mountpoint, d);
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->wake, NULL);
	char *argv[] = { "btrsim-disks", "-o", "allow_other", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	k->fuse = fuse_new(&args, &kdisk_ops, sizeof(kdisk_ops), k);
	fuse_opt_free_args(&args);
	if (!k->fuse) {
		snprintf(err, errlen, "starting the FUSE server failed (libfuse3: fuse_new)");
		free(k);
		return -EIO;
	}
	if (fuse_mount(k->fuse, mountpoint)) {
		snprintf(err, errlen, "mounting the FUSE disks at %s failed (is /dev/fuse there?)",
			 mountpoint);
		fuse_destroy(k->fuse);
		free(k);
		return -EIO;
	}
	kreg_mount(mountpoint);
	int r = pthread_create(&k->thread, NULL, serve, k);
	if (r) {
		snprintf(err, errlen, "starting the FUSE thread: %s", strerror(r));
		fuse_unmount(k->fuse);
		kunreg_mount(mountpoint);
		fuse_destroy(k->fuse);
		free(k);
		return -r;
	}
	k->running = true;
	/* The connection's abort file lives in the fuse control file system,
	 * which systemd mounts; where nobody did, it is mounted here (and left:
	 * it is the system's, shared by every FUSE connection). */
	if (!fusectl_mounted())
		mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
	/* (a stat of the mount point is a request to this server: after it
	 * started) */
	struct stat st;
	if (stat(mountpoint, &st) == 0)
		snprintf(k->abort_path, sizeof(k->abort_path), "/sys/fs/fuse/connections/%u/abort",
			 minor(st.st_dev));
	kreg_fuse(fuse_session_fd(fuse_get_session(k->fuse)), k->abort_path[0] ? k->abort_path : NULL);
	*out = k;
	return 0;
}

const char *kdisks_path(const struct kdisks *k, unsigned disk)
{
	return disk < k->ndisks ? k->path[disk] : NULL;
}

void kdisks_lock(struct kdisks *k)
{
	pthread_mutex_lock(&k->lock);
}

void kdisks_unlock(struct kdisks *k)
{
	pthread_mutex_unlock(&k->lock);
}

void kdisks_abort(struct kdisks *k)
{
	pthread_mutex_lock(&k->lock);
	k->aborted = true;
	pthread_cond_broadcast(&k->wake);
	pthread_mutex_unlock(&k->lock);
	FILE *f = k->abort_path[0] ? fopen(k->abort_path, "w") : NULL;
	if (f) {
		fputs("1\n", f);
		fclose(f);
	}
}

void kdisks_set_mode(struct kdisks *k, enum kdisk_mode mode)
{
	pthread_mutex_lock(&k->lock);
	k->mode = mode;
	pthread_mutex_unlock(&k->lock);
}

uint64_t kdisks_errors(const struct kdisks *k)
{
	return k->errors;
}

void kdisks_stop(struct kdisks *k)
{
	if (!k)
		return;
	if (k->running) {
		/* A stalled request lets go; the unmount ends the connection:
		 * fuse_loop returns. */
		pthread_mutex_lock(&k->lock);
		k->aborted = true;
		pthread_cond_broadcast(&k->wake);
		pthread_mutex_unlock(&k->lock);
		fuse_exit(k->fuse);
		fuse_unmount(k->fuse);
		pthread_join(k->thread, NULL);
	}
	kunreg_mount(k->mnt);
	kunreg_fuse(k->abort_path[0] ? k->abort_path : NULL);
	fuse_destroy(k->fuse);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->wake);
	free(k);
}
