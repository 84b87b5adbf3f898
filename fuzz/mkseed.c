/*
 * mkseed.c - fuzz-mkseed: seed test cases for the harnesses.
 *
 *   fuzz-mkseed [--data BYTES] [--flags N] -o OUT IMG...
 *       the file system on the images (the disks of one file system, in
 *       devid order or any) as a compact image (fuzz/README.md): every
 *       valid superblock copy, every tree block reachable from the
 *       superblock (root tree, chunk tree, every tree of a ROOT_ITEM, the
 *       log tree), each copy where the chunk tree maps it, and file data
 *       extents up to --data bytes (256 KiB); walked with ref's read API.
 *   fuzz-mkseed --workload [--header B0,B1,B2,B3] [--plan PLAN] -o OUT FILE.wl
 *       a workload file (and the lines of a fault plan) in the workload
 *       harness's encoding; names outside its alphabet are renamed, what it
 *       cannot express is left out (the counts go to stderr).
 *
 * Exit status 0, 1 on failure (one line on stderr), 2 on bad usage.
 */
#include "fuzz/fuzz.h"
#include "faults/plan.h"
#include "ref/ref.h"
#include "traces/workload.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: fuzz-mkseed [--data BYTES] [--flags N] -o OUT IMG...\n"
	"       fuzz-mkseed --workload [--header B0,B1,B2,B3] [--plan PLAN] -o OUT FILE.wl\n"
	"A compact image of the file system on IMG... for fuzz-image, or a workload\n"
	"file encoded for fuzz-workload (fuzz/README.md).\n";

/* Prints "fuzz-mkseed: message" and returns r. */
static int failr(int r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failr(int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz-mkseed: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return r;
}
#define fail(...) failr(1, __VA_ARGS__)

/* ---- Image mode ---- */

struct extent {
	uint64_t logical, len;
	bool tree;
};

struct extents {
	struct extent *e;
	size_t n, cap;
};

static int add(struct extents *x, uint64_t logical, uint64_t len, bool tree)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		struct extent *p = realloc(x->e, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		x->e = p;
		x->cap = cap;
	}
	x->e[x->n++] = (struct extent){ logical, len, tree };
	return 0;
}

struct walker {
	ref_fs *fs;
	struct extents blocks, data;
	uint64_t data_left;
	size_t visited;
};

/* Every block of the tree below (bytenr, level): depth first. */
static int walk_tree(struct walker *w, uint64_t bytenr, int level, int depth)
{
	if (depth > BTRFS_MAX_TREE_LEVEL || ++w->visited > (1u << 22))
		return failr(-EUCLEAN, "tree deeper than %d levels or larger than 4M blocks at %llu",
			     BTRFS_MAX_TREE_LEVEL, (unsigned long long)bytenr);
	struct ref_block *b;
	int r = ref_read_block(w->fs, bytenr, 0, level, 0, &b);
	if (r)
		return failr(r, "tree block %llu: %s", (unsigned long long)bytenr, ref_error(w->fs));
	uint32_t nodesize = LE32(ref_super(w->fs)->nodesize);
	if (add(&w->blocks, bytenr, nodesize, true)) {
		ref_block_put(w->fs, b);
		return -ENOMEM;
	}
	const uint8_t *d = ref_block_data(b);
	const struct btrfs_header_disk *h = (const void *)d;
	uint32_t n = LE32(h->nritems);
	if (h->level > 0) {
		const struct btrfs_key_ptr_disk *kp = (const void *)(d + sizeof(*h));
		for (uint32_t i = 0; i < n && !r; i++)
			r = walk_tree(w, LE64(kp[i].blockptr), h->level - 1, depth + 1);
	} else {
		const struct btrfs_item_disk *it = (const void *)(d + sizeof(*h));
		for (uint32_t i = 0; i < n && !r; i++) {
			if (it[i].key.type != BTRFS_EXTENT_DATA_KEY)
				continue;
			const uint8_t *fe = d + sizeof(*h) + LE32(it[i].offset);
			uint32_t size = LE32(it[i].size);
			/* generation 8, ram_bytes 8, compression, encryption, other 2, type */
			if (size < 53 || fe[20] != BTRFS_FILE_EXTENT_REG)
				continue;
			uint64_t disk_bytenr = le64(fe + 21), disk_len = le64(fe + 29);
			if (!disk_bytenr || disk_len > w->data_left)
				continue;
			w->data_left -= disk_len;
			r = add(&w->data, disk_bytenr, disk_len, false);
		}
	}
	ref_block_put(w->fs, b);
	return r;
}

static int walk_all(struct walker *w)
{
	ref_fs *fs = w->fs;
	struct ref_root root, chunk;
	int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	if (!r)
		r = ref_find_root(fs, BTRFS_CHUNK_TREE_OBJECTID, &chunk);
	if (r)
		return failr(r, "%s", ref_error(fs));
	if ((r = walk_tree(w, chunk.bytenr, chunk.level, 0)) || (r = walk_tree(w, root.bytenr, root.level, 0)))
		return r;
	/* Every tree with a ROOT_ITEM. */
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	int s = ref_search(fs, &root, &key, &path);
	struct ref_root *trees = NULL;
	size_t n = 0, cap = 0;
	while (s == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.type == BTRFS_ROOT_ITEM_KEY && size >= btrfs_legacy_root_item_size()) {
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				struct ref_root *p = realloc(trees, cap * sizeof(*p));
				if (!p) {
					free(trees);
					ref_path_release(fs, &path);
					return -ENOMEM;
				}
				trees = p;
			}
			const struct btrfs_root_item *ri = (const void *)data;
			trees[n++] = (struct ref_root){ k.objectid, LE64(ri->bytenr), 0, ri->level };
		}
		s = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	if (s < 0) {
		free(trees);
		return failr(s, "root tree: %s", ref_error(fs));
	}
	for (size_t i = 0; i < n && !r; i++)
		r = walk_tree(w, trees[i].bytenr, trees[i].level, 0);
	free(trees);
	uint64_t log = LE64(ref_super(fs)->log_root);
	if (!r && log)
		r = walk_tree(w, log, ref_super(fs)->log_root_level, 0);
	return r;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;
	return x->logical < y->logical ? -1 : x->logical > y->logical;
}

/* Sorted, each logical address once. */
static void uniq(struct extents *x)
{
	if (!x->n)
		return;
	qsort(x->e, x->n, sizeof(*x->e), cmp_extent);
	size_t o = 1;
	for (size_t i = 1; i < x->n; i++)
		if (x->e[i].logical != x->e[o - 1].logical)
			x->e[o++] = x->e[i];
	x->n = o;
}

/* Records for every copy of [logical, logical + len), cut at stripe
 * boundaries and at 1 MiB. */
static int put_copies(ref_fs *fs, sim_volume *vol, struct fzi_out *o, enum fzi_kind kind,
		      uint64_t logical, uint64_t len, uint8_t *buf)
{
	for (uint64_t done = 0; done < len;) {
		struct ref_phys ph[8];
		uint64_t run;
		int nc = ref_map(fs, logical + done, ph, 8, &run);
		if (nc < 0)
			return failr(-EIO, "logical %llu is not mapped: %s",
				     (unsigned long long)(logical + done), ref_error(fs));
		uint64_t piece = len - done;
		if (piece > run)
			piece = run;
		if (piece > (uint64_t)FZI_MAX_RECORD_UNITS * FZI_UNIT)
			piece = (uint64_t)FZI_MAX_RECORD_UNITS * FZI_UNIT;
		if (kind == FZI_TREE && piece < len) /* a tree block must be one record */
			return 0;
		uint64_t rounded = (piece + FZI_UNIT - 1) / FZI_UNIT * FZI_UNIT;
		for (int c = 0; c < nc; c++) {
			if (ph[c].disk < 0 || ph[c].physical % FZI_UNIT)
				continue;
			uint64_t dsize = sim_disk_size(vol, (unsigned)ph[c].disk);
			if (ph[c].physical + rounded > dsize)
				continue;
			if (sim_read(vol, (unsigned)ph[c].disk, ph[c].physical, buf, rounded))
				return failr(-EIO, "reading disk %d at %llu: %s", ph[c].disk,
					     (unsigned long long)ph[c].physical, sim_volume_error(vol));
			int r = fzi_put_record(o, kind, (unsigned)ph[c].disk, ph[c].physical, buf,
					       (uint32_t)rounded);
			if (r)
				return r;
		}
		done += piece;
	}
	return 0;
}

static int write_out(const char *path, const struct fzi_out *o)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
	if (!f)
		return fail("%s: %s", path, strerror(errno));
	size_t n = fwrite(o->p, 1, o->len, f);
	int bad = n != o->len || fflush(f) || ferror(f);
	if (f != stdout)
		bad |= fclose(f);
	if (bad)
		return fail("%s: cannot write: %s", path, strerror(errno));
	return 0;
}

static int image_mode(char **paths, int n, uint64_t data_budget, uint8_t flags, const char *out)
{
	if (n > FZI_MAX_DISKS)
		return fail("at most %d images, not %d", FZI_MAX_DISKS, n);
	struct sim_volume_config cfg;
	sim_config_init(&cfg, (unsigned)n, 0, 1);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	uint64_t biggest = 0;
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st))
			return fail("%s: %s", paths[i], strerror(errno));
		if (st.st_size % FZI_UNIT)
			return fail("%s: size %lld is not a multiple of 4 KiB", paths[i],
				    (long long)st.st_size);
		if ((uint64_t)st.st_size > biggest)
			biggest = (uint64_t)st.st_size;
		cfg.disk[i].image_path = paths[i];
		cfg.disk[i].sector_size = 4096;
		cfg.disk[i].read_only = true;
	}
	uint64_t mib = (biggest + (1 << 20) - 1) >> 20;
	if (mib > FZI_MAX_DISK_MIB)
		return fail("%s...: %llu MiB, the compact format holds disks of at most %u MiB",
			    paths[0], (unsigned long long)mib, FZI_MAX_DISK_MIB);
	char err[512];
	sim_volume *vol;
	if (sim_volume_open(&cfg, &vol, err, sizeof(err)))
		return fail("%s", err);
	ref_fs *fs;
	struct ref_open_opts oo = { .super_mirror = -1 };
	if (ref_open(vol, &oo, &fs, err, sizeof(err))) {
		sim_volume_close(vol);
		return fail("%s: %s", paths[0], err);
	}
	struct walker w = { .fs = fs, .data_left = data_budget };
	struct fzi_out o = { 0 };
	struct fzi_header h = { (unsigned)n, (uint32_t)mib, flags };
	uint8_t *buf = malloc((size_t)FZI_MAX_RECORD_UNITS * FZI_UNIT);
	int r = buf ? walk_all(&w) : -ENOMEM;
	if (!r)
		r = fzi_put_header(&o, &h);
	/* Every valid superblock copy, disk by disk. */
	for (int d = 0; !r && d < n; d++)
		for (int m = 0; !r && m < BTRFS_SUPER_MIRRORS; m++) {
			struct btrfs_super_disk sb;
			bool valid;
			if (ref_read_super(vol, (unsigned)d, m, &sb, &valid) || !valid)
				continue;
			memset(buf, 0, FZI_UNIT);
			memcpy(buf, &sb, sizeof(sb));
			r = fzi_put_record(&o, FZI_SUPER, (unsigned)d, btrfs_super_offset(m), buf,
					   FZI_UNIT);
		}
	uniq(&w.blocks);
	uniq(&w.data);
	for (size_t i = 0; !r && i < w.blocks.n; i++)
		r = put_copies(fs, vol, &o, FZI_TREE, w.blocks.e[i].logical, w.blocks.e[i].len, buf);
	for (size_t i = 0; !r && i < w.data.n; i++)
		r = put_copies(fs, vol, &o, FZI_RAW, w.data.e[i].logical, w.data.e[i].len, buf);
	if (r == -ENOMEM)
		fail("out of memory");
	if (!r) {
		r = write_out(out, &o);
		if (!r)
			fprintf(stderr, "%s: %zu tree blocks, %zu data extents, %zu bytes\n", out,
				w.blocks.n, w.data.n, o.len);
	}
	free(buf);
	free(o.p);
	free(w.blocks.e);
	free(w.data.e);
	ref_close(fs);
	sim_volume_close(vol);
	return r ? 1 : 0;
}

/* ---- Workload mode ---- */

static int workload_mode(const char *file, const char *plan_file, const uint8_t hdr[4],
			 const char *out)
{
	struct wl_workload w = { 0 };
	char err[512];
	if (wl_parse_file(file, &w, err, sizeof(err)))
		return fail("%s", err);
	char *plan = NULL;
	if (plan_file) {
		struct fault_plan *p;
		int r = fault_plan_parse_file(plan_file, &p, err, sizeof(err));
		if (!r) {
			r = fault_plan_format(p, &plan);
			fault_plan_free(p);
			if (r)
				snprintf(err, sizeof(err), "out of memory");
		}
		if (r) {
			wl_free(&w);
			return fail("%s", err);
		}
	}
	struct fzi_out o = { 0 };
	size_t encoded, faults;
	int r = fzw_encode(&w, plan, hdr, &o, &encoded, &faults);
	if (r)
		r = fail("out of memory");
	else
		r = write_out(out, &o);
	if (!r)
		fprintf(stderr, "%s: %zu of %zu operations and %zu fault lines encoded, %zu bytes\n",
			out, encoded, w.n, faults, o.len);
	free(plan);
	free(o.p);
	wl_free(&w);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },   { "flags", required_argument, NULL, 'f' },
		{ "workload", no_argument, NULL, 'w' },     { "header", required_argument, NULL, 'H' },
		{ "plan", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	uint64_t data = 256 << 10;
	unsigned long flags = 0;
	bool workload = false;
	/* seed 1; max-subset 2, samples 1, torn 1; one disk, 16 KiB nodes; all crash points */
	uint8_t hdr[4] = { 0, 2 | 1 << 2 | 1 << 5, 0, 0 };
	const char *out = NULL, *plan = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'd':
			data = strtoull(optarg, &end, 0);
			if (*end || optarg[0] == '-')
				return fprintf(stderr, "fuzz-mkseed: --data takes a byte count\n%s",
					       usage_text), 2;
			break;
		case 'f':
			flags = strtoul(optarg, &end, 0);
			if (*end || flags > 255)
				return fprintf(stderr, "fuzz-mkseed: --flags takes 0 to 255\n%s",
					       usage_text), 2;
			break;
		case 'w': workload = true; break;
		case 'p': plan = optarg; break;
		case 'H': {
			unsigned v[4];
			int used = 0;
			if (sscanf(optarg, "%u,%u,%u,%u%n", &v[0], &v[1], &v[2], &v[3], &used) != 4 ||
			    optarg[used] || v[0] > 255 || v[1] > 255 || v[2] > 255 || v[3] > 255)
				return fprintf(stderr, "fuzz-mkseed: --header takes four bytes, "
						       "B0,B1,B2,B3\n%s", usage_text), 2;
			for (int i = 0; i < 4; i++)
				hdr[i] = (uint8_t)v[i];
			break;
		}
		case 'o': out = optarg; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (plan && !workload)
		return fprintf(stderr, "fuzz-mkseed: --plan goes with --workload\n%s", usage_text), 2;
	if (!out || optind >= argc || (workload && argc - optind != 1)) {
		fprintf(stderr, "fuzz-mkseed: %s\n%s",
			!out ? "-o OUT is required" : workload ? "--workload takes one workload file"
							       : "no image given", usage_text);
		return 2;
	}
	char err[256];
	if (fuzz_process_init(err, sizeof(err)))
		return fail("%s", err);
	if (workload)
		return workload_mode(argv[optind], plan, hdr, out);
	return image_mode(argv + optind, argc - optind, data, (uint8_t)flags, out);
}
