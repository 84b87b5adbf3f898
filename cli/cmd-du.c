/*
 * cmd-du.c - `btrsim du`: disk usage by compression type of the files under
 * paths of an image, in the output of compsize (kilobyte/compsize): the
 * EXTENT_DATA items of each regular file, each extent counted once across
 * every file named, what the files reference counted at each reference.
 */
#include "cli/extents.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: btrsim du [options] IMG... PATH...\n"
	"\n"
	"Disk usage of the regular files under each PATH (from the top-level\n"
	"subvolume, recursively; symlinks are not followed) by compression type, as\n"
	"compsize prints it: each extent is counted once across all the files\n"
	"(Disk Usage on disk, Uncompressed its whole size), Referenced what the files\n"
	"refer to, at each reference; inline extents count their payload; holes\n"
	"count nothing.  The operands are the images first (at least one; more while\n"
	"they are host files holding a Btrfs superblock), then the paths.\n"
	"\n"
	"  -b, --bytes           raw numbers in bytes instead of K, M, G, ...\n"
	"  -x, --one-file-system do not descend into other subvolumes\n"
	"      --degraded        open with devices missing\n"
	"      --usebackuproot   open from a backup root if the root tree is unreadable\n"
	"      --nologreplay     show the last commit, not what the log tree adds\n"
	"  -h, --help            show this help\n"
	"\n"
	"Exit status: 0; 1 when a PATH cannot be read (on stderr, the others still\n"
	"counted), or when nothing was counted: \"No files.\" (no regular file) or\n"
	"\"All empty or still-delalloced files.\" on stderr, as compsize; 2 bad usage.\n";

const struct cli_cmd cli_cmd_du;

/* compsize's buckets: the compression types (a u8), then preallocated extents. */
#define NBUCKETS (256 + 1)
#define PREALLOC 256
#define MAX_DEPTH 4096

/* The disk_bytenr of each extent counted: an open-addressing hash set (0 is
 * never a key: holes are not counted). */
struct seen {
	uint64_t *slot;
	size_t cap, n;
};

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return x;
}

/* 1 when key is new (and now in), 0 when it was in, -ENOMEM. */
static int seen_add(struct seen *s, uint64_t key)
{
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *slot = calloc(cap, sizeof(*slot));
		if (!slot)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slot[i])
				continue;
			size_t j = hash64(s->slot[i]) & (cap - 1);
			while (slot[j])
				j = (j + 1) & (cap - 1);
			slot[j] = s->slot[i];
		}
		free(s->slot);
		s->slot = slot;
		s->cap = cap;
	}
	size_t j = hash64(key) & (s->cap - 1);
	for (; s->slot[j]; j = (j + 1) & (s->cap - 1))
		if (s->slot[j] == key)
			return 0;
	s->slot[j] = key;
	s->n++;
	return 1;
}

struct du {
	ref_fs *fs;
	bool bytes, one_fs;
	uint64_t disk[NBUCKETS], uncomp[NBUCKETS], refd[NBUCKETS];
	uint64_t nfiles, nextents, nrefs, ninline, nfrag, fragend;
	struct seen seen;
	char err[320];
};

/* One file extent item, as compsize's parse_file_extent_item counts it. */
static int count_extent(void *ctx, const struct cli_fext *e)
{
	struct du *d = ctx;
	unsigned t = e->compression;
	if (e->type == BTRFS_FILE_EXTENT_INLINE) {
		d->disk[t] += e->item_size - offsetof(struct btrfs_file_extent_item, disk_bytenr);
		d->uncomp[t] += e->ram_bytes;
		d->refd[t] += e->ram_bytes;
		d->ninline++;
		d->nfrag++;
		d->fragend = UINT64_MAX;
		return 0;
	}
	if (e->type == BTRFS_FILE_EXTENT_PREALLOC)
		t = PREALLOC;
	if (e->disk_bytenr == 0) /* a hole */
		return 0;
	int r = seen_add(&d->seen, e->disk_bytenr);
	if (r < 0) {
		snprintf(d->err, sizeof(d->err), "out of memory");
		return r;
	}
	if (r) {
		d->disk[t] += e->disk_num_bytes;
		d->uncomp[t] += e->ram_bytes;
		d->nextents++;
	}
	d->refd[t] += e->num_bytes;
	d->nrefs++;
	if (e->disk_bytenr != d->fragend)
		d->nfrag++;
	d->fragend = e->disk_bytenr + e->disk_num_bytes;
	return 0;
}

static int du_file(struct du *d, const char *path, const struct ref_ino *ino)
{
	d->nfiles++;
	d->fragend = UINT64_MAX;
	int r = cli_file_extents(d->fs, ino, count_extent, d, d->err, sizeof(d->err));
	if (r)
		return cli_path_fail(&cli_cmd_du, path, r, d->err);
	return 0;
}

/* A directory's entries, then what they hold: directories and regular files
 * only (compsize enters DT_DIR, DT_REG and DT_UNKNOWN entries). */
static int du_dir(struct du *d, const char *path, const struct ref_ino *dir, int depth)
{
	if (depth >= MAX_DEPTH)
		return cli_path_fail(&cli_cmd_du, path, ELOOP, "directories nested too deep");
	struct ref_dentries l;
	int r = ref_dentries_read(d->fs, dir, &l);
	if (r) {
		ref_dentries_free(&l);
		return cli_path_fail(&cli_cmd_du, path, r, r == -ENOMEM ? NULL : ref_error(d->fs));
	}
	int rc = 0;
	for (size_t i = 0; i < l.n && !rc; i++) {
		const struct ref_dentry *e = &l.e[i];
		if (e->type != BTRFS_FT_DIR && e->type != BTRFS_FT_REG_FILE &&
		    e->type != BTRFS_FT_UNKNOWN)
			continue;
		/* -x: a subvolume has its own st_dev, as another file system. */
		if (d->one_fs && e->ino.subvol != dir->subvol)
			continue;
		char *sub;
		size_t pl = strlen(path);
		if (asprintf(&sub, pl && path[pl - 1] == '/' ? "%s%s" : "%s/%s", path, e->name) < 0) {
			rc = cli_fail(&cli_cmd_du, "out of memory");
			break;
		}
		struct ref_stat st;
		if ((r = ref_stat_in(d->fs, dir, &e->ino, &st)))
			rc = cli_path_fail(&cli_cmd_du, sub, r, ref_error(d->fs));
		else if (S_ISDIR(st.mode))
			rc = du_dir(d, sub, &e->ino, depth + 1);
		else if (S_ISREG(st.mode))
			rc = du_file(d, sub, &e->ino);
		free(sub);
	}
	ref_dentries_free(&l);
	return rc;
}

static void human(const struct du *d, uint64_t x, char out[24])
{
	static const char units[] = "BKMGTPE";
	int u = 0;
	if (d->bytes) {
		snprintf(out, 24, "%llu", (unsigned long long)x);
		return;
	}
	while (x >= 10240) {
		u++;
		x >>= 10;
	}
	if (x >= 1024)
		snprintf(out, 24, " %llu.%llu%c", (unsigned long long)(x >> 10),
			 (unsigned long long)(x * 10 / 1024 % 10), units[u + 1]);
	else
		snprintf(out, 24, "%4llu%c", (unsigned long long)x, units[u]);
}

static void row(const struct du *d, const char *type, uint64_t disk, uint64_t uncomp, uint64_t refd)
{
	char perc[16], du[24], un[24], rf[24];
	snprintf(perc, sizeof(perc), "%3u%%", (uint32_t)(disk * 100 / uncomp));
	human(d, disk, du);
	human(d, uncomp, un);
	human(d, refd, rf);
	printf("%-10s %-8s %-12s %-12s %-12s\n", type, perc, du, un, rf);
}

/* compsize's print_stats: 0, or 1 when nothing was counted. */
static int print_stats(const struct du *d)
{
	static const char *const names[] = { "none", "zlib", "lzo", "zstd" };
	uint64_t disk = 0, uncomp = 0, refd = 0;
	for (int t = 0; t < NBUCKETS; t++) {
		disk += d->disk[t];
		uncomp += d->uncomp[t];
		refd += d->refd[t];
	}
	if (!uncomp) {
		fprintf(stderr, "%s\n",
			d->nfiles ? "All empty or still-delalloced files." : "No files.");
		return 1;
	}
	printf("Processed %llu file%s, %llu regular extents (%llu refs), %llu inline, "
	       "%llu fragments.\n",
	       (unsigned long long)d->nfiles, d->nfiles > 1 ? "s" : "",
	       (unsigned long long)d->nextents, (unsigned long long)d->nrefs,
	       (unsigned long long)d->ninline, (unsigned long long)d->nfrag);
	printf("%-10s %-8s %-12s %-12s %-12s\n", "Type", "Perc", "Disk Usage", "Uncompressed",
	       "Referenced");
	row(d, "TOTAL", disk, uncomp, refd);
	for (int t = 0; t < NBUCKETS; t++) {
		if (!d->uncomp[t])
			continue;
		char unknown[16];
		const char *name = t == PREALLOC ? "prealloc" : t < 4 ? names[t] : NULL;
		if (!name) {
			snprintf(unknown, sizeof(unknown), "?%d", t);
			name = unknown;
		}
		row(d, name, d->disk[t], d->uncomp[t], d->refd[t]);
	}
	return 0;
}

static int cmd_du(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bytes", no_argument, NULL, 'b' },
		{ "one-file-system", no_argument, NULL, 'x' },
		{ "degraded", no_argument, NULL, 'D' },
		{ "usebackuproot", no_argument, NULL, 'U' },
		{ "nologreplay", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	struct du *d = calloc(1, sizeof(*d));
	if (!d)
		return cli_fail(&cli_cmd_du, "out of memory");
	int c, rc = 0;
	optind = 1;
	opterr = 0;
	while (!rc && (c = getopt_long(argc, argv, "bxh", opts, NULL)) != -1) {
		switch (c) {
		case 'b': d->bytes = true; break;
		case 'x': d->one_fs = true; break;
		case 'D': oo.degraded = true; break;
		case 'U': oo.usebackuproot = true; break;
		case 'N': oo.nologreplay = true; break;
		case 'h': free(d); return cli_help(&cli_cmd_du);
		default: rc = cli_usage_error(&cli_cmd_du, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!rc && argc - optind < 2)
		rc = cli_usage_error(&cli_cmd_du, "needs at least one image and a path");
	if (rc) {
		free(d);
		return rc;
	}
	char **ops = argv + optind;
	int nops = argc - optind, nimg = cli_split_operands(ops, nops);
	sim_volume *vol;
	if ((rc = cli_open_fs(&cli_cmd_du, ops, nimg, &oo, &vol, &d->fs))) {
		free(d);
		return rc;
	}
	/* A path that is not there is said and skipped; a read that fails (a
	 * damaged image) stops everything, nothing printed, as compsize dies. */
	int errors = 0;
	bool fatal = false;
	for (int i = nimg; i < nops && !fatal; i++) {
		const char *path = ops[i], *detail;
		struct ref_ino ino;
		struct ref_stat st;
		int r = cli_path_walk(d->fs, path, false, &ino, &st, &detail);
		if (r) {
			cli_path_fail(&cli_cmd_du, path, r, detail);
			errors++;
			fatal = detail != NULL;
			continue;
		}
		/* A symlink (O_NOFOLLOW: ELOOP) and special files count nothing. */
		if (S_ISDIR(st.mode))
			r = du_dir(d, path, &ino, 0);
		else if (S_ISREG(st.mode))
			r = du_file(d, path, &ino);
		if (r) {
			errors++;
			fatal = true;
		}
	}
	if (!fatal)
		rc = print_stats(d);
	if (errors)
		rc = 1;
	ref_close(d->fs);
	sim_volume_close(vol);
	free(d->seen.slot);
	free(d);
	return rc;
}

const struct cli_cmd cli_cmd_du = {
	.name = "du",
	.summary = "disk usage by compression type of files of an image, as compsize",
	.usage = usage_text,
	.run = cmd_du,
};
