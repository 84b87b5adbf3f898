/*
 * cmd-filesystem.c - `btrsim filesystem defragment` (alias defrag), with the
 * options, messages and exit status of btrfs-progs' `btrfs filesystem
 * defragment`, on ref_defrag (ref/defrag/).
 */
#include "cli/fsops.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: btrsim filesystem defragment [options] IMG... PATH...\n"
	"\n"
	"Defragment files of the file system on the images, as btrfs filesystem\n"
	"defragment asks Linux 6.18 to (BTRFS_IOC_DEFRAG_RANGE): in each PATH, the\n"
	"ranges of extents smaller than the target size that a neighbour makes worth\n"
	"merging are written anew into large extents (holes, preallocated extents and\n"
	"extents already at their largest left alone), then the images are committed.\n"
	"Extents the file shares with snapshots or other files are rewritten too: the\n"
	"file then stops sharing them and takes space of its own, as with the kernel.\n"
	"A directory PATH without -r defragments its subvolume's tree (leaves lying\n"
	"apart are copied anew), not its files; with -r, the regular files below it\n"
	"in the same subvolume (symlinks not followed).  As many images as the file\n"
	"system has devices (the first image's superblock says), then the PATHs.\n"
	"\n"
	"  -r                 defragment the files under directories, recursively\n"
	"  -c[ALG]            compress every extent of the range with ALG (zlib, the\n"
	"                     default, lzo or zstd), whatever the mount and the file say\n"
	"  -L, --level N      the compression level for -c (default: the algorithm's)\n"
	"      --nocomp       rewrite every extent of the range uncompressed\n"
	"  -f                 flush the data after each file (accepted: ref writes at once)\n"
	"  -s START           defragment from START (default 0)\n"
	"  -l LEN             only LEN bytes (default: to the end)\n"
	"  -t SIZE            target extent size: extents at least this long are left\n"
	"                     alone (default 32M, as btrfs-progs)\n"
	"      --step SIZE    defragment in steps of SIZE (at least 256K)\n"
	"  -v                 print each file's path\n"
	"  -h, --help         show this help\n"
	"\n"
	"Sizes take K, M, G or T suffixes (powers of 1024).\n"
	"\n"
	"Exit status: 0, 1 when any file failed (\"defrag failed on PATH\", then \"total\n"
	"N failures\"), 2 bad usage.\n";

const struct cli_cmd cli_cmd_filesystem;

struct dfg {
	struct cli_mount *m;
	struct ref_defrag d;
	uint64_t step;
	bool verbose;
	unsigned failures;
	bool dead; /* the file system failed: stop */
};

static void failed(struct dfg *g, const char *path, int err)
{
	cli_report(g->m, path, err, NULL);
	fprintf(stderr, "btrsim filesystem defragment: defrag failed on %s\n", path);
	g->failures++;
	if (ref_failed(g->m->fs))
		g->dead = true;
}

static void one(struct dfg *g, const char *path)
{
	if (g->verbose)
		printf("%s\n", path);
	int r = 0;
	if (!g->step) {
		r = ref_defrag(g->m->fs, path, &g->d, NULL);
	} else {
		struct ref_stat st;
		r = ref_stat_path(g->m->fs, path, true, &st);
		uint64_t end = g->d.len && g->d.start + g->d.len > g->d.start ? g->d.start + g->d.len
									       : UINT64_MAX;
		for (uint64_t at = g->d.start; !r && at < end && at < st.size; at += g->step) {
			struct ref_defrag d = g->d;
			d.start = at;
			d.len = g->step;
			r = ref_defrag(g->m->fs, path, &d, NULL);
			if (at + g->step < at)
				break;
		}
	}
	if (r)
		failed(g, path, r);
}

/* -r: the regular files below dir (in its subvolume), depth first. */
static void walk(struct dfg *g, const char *dir, const struct ref_ino *di)
{
	struct ref_dentries ents = { 0 };
	int r = ref_dentries_read(g->m->fs, di, &ents);
	if (r) {
		failed(g, dir, r);
		ref_dentries_free(&ents);
		return;
	}
	size_t dl = strlen(dir);
	for (size_t i = 0; i < ents.n && !g->dead; i++) {
		const struct ref_dentry *e = &ents.e[i];
		if (e->ino.subvol != di->subvol) /* another subvolume: FTW_MOUNT */
			continue;
		char *p = malloc(dl + e->len + 2);
		if (!p) {
			failed(g, dir, -ENOMEM);
			break;
		}
		sprintf(p, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", e->name);
		if (e->type == BTRFS_FT_DIR)
			walk(g, p, &e->ino);
		else if (e->type == BTRFS_FT_REG_FILE)
			one(g, p);
		free(p);
	}
	ref_dentries_free(&ents);
}

static int parse_size(const char *opt, const char *arg, uint64_t *v)
{
	if (cli_parse_u64(arg, v, 1))
		return cli_usage_error(&cli_cmd_filesystem, "%s: '%s' is not a size", opt, arg);
	return 0;
}

static int defragment(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "level", required_argument, NULL, 'L' }, { "nocomp", no_argument, NULL, 'N' },
		{ "step", required_argument, NULL, 'S' },  { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dfg g = { .d = { .extent_thresh = 32u << 20 } };
	bool recursive = false;
	int c, rc;
	uint64_t v;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vrc::L:fs:l:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'v': g.verbose = true; break;
		case 'r': recursive = true; break;
		case 'c':
			if (g.d.flags & REF_DEFRAG_NOCOMPRESS)
				return cli_usage_error(&cli_cmd_filesystem,
						       "cannot use compression with --nocomp");
			g.d.flags |= REF_DEFRAG_COMPRESS;
			g.d.compress = REF_COMPRESS_ZLIB;
			if (optarg) {
				uint8_t t = 0;
				for (uint8_t i = REF_COMPRESS_ZLIB; i <= REF_COMPRESS_ZSTD; i++)
					if (!strcasecmp(optarg, ref_compress_name(i)))
						t = i;
				if (!t)
					return cli_usage_error(&cli_cmd_filesystem,
							       "unknown compression type: %s", optarg);
				g.d.compress = t;
			}
			break;
		case 'L': {
			char *end;
			long l = strtol(optarg, &end, 10);
			if (!*optarg || *end)
				return cli_usage_error(&cli_cmd_filesystem, "--level takes a number");
			g.d.level = (int8_t)(l < -128 ? -128 : l > 127 ? 127 : l);
			break;
		}
		case 'N':
			if (g.d.flags & REF_DEFRAG_COMPRESS)
				return cli_usage_error(&cli_cmd_filesystem,
						       "cannot use --nocomp with compression set");
			g.d.flags |= REF_DEFRAG_NOCOMPRESS;
			break;
		case 'f': break;
		case 's':
			if ((rc = parse_size("-s", optarg, &g.d.start)))
				return rc;
			break;
		case 'l':
			if ((rc = parse_size("-l", optarg, &g.d.len)))
				return rc;
			break;
		case 't':
			if ((rc = parse_size("-t", optarg, &v)))
				return rc;
			if (v > UINT32_MAX) {
				fprintf(stderr, "WARNING: target extent size %llu too big, trimmed to %u\n",
					(unsigned long long)v, UINT32_MAX);
				v = UINT32_MAX;
			}
			g.d.extent_thresh = (uint32_t)v;
			break;
		case 'S':
			if ((rc = parse_size("--step", optarg, &g.step)))
				return rc;
			if (g.step < (256u << 10)) {
				fprintf(stderr, "WARNING: step %llu too small, adjusting to 256KiB\n",
					(unsigned long long)g.step);
				g.step = 256u << 10;
			}
			break;
		case 'h': return cli_help(&cli_cmd_filesystem);
		default:
			return cli_usage_error(&cli_cmd_filesystem, "unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_filesystem, "needs at least one image and one PATH");
	int ndev = cli_volume_devices(&cli_cmd_filesystem, argv[optind], &rc);
	if (ndev < 0)
		return rc;
	int first = optind + (ndev ? ndev : 1);
	if (first >= argc)
		return cli_usage_error(&cli_cmd_filesystem,
				       "the file system has %d device%s: give %d image%s and PATHs",
				       ndev, ndev == 1 ? "" : "s", ndev, ndev == 1 ? "" : "s");
	struct cli_mount m;
	if ((rc = cli_mount(&cli_cmd_filesystem, argv + optind, first - optind, &m)))
		return rc;
	g.m = &m;
	bool warned = false;
	for (int i = first; i < argc && !g.dead; i++) {
		struct ref_stat st;
		int r = ref_stat_path(m.fs, argv[i], true, &st);
		if (r) {
			failed(&g, argv[i], r);
			continue;
		}
		if (S_ISDIR(st.mode) && recursive) {
			struct ref_ino di;
			if ((r = ref_lookup_path(m.fs, argv[i], true, &di)))
				failed(&g, argv[i], r);
			else
				walk(&g, argv[i], &di);
			continue;
		}
		if (S_ISDIR(st.mode)) {
			fprintf(stderr,
				"WARNING: directory specified but recursive mode not requested: %s\n",
				argv[i]);
			warned = true;
		} else if (!S_ISREG(st.mode)) {
			fprintf(stderr, "ERROR: %s is not a directory or a regular file\n", argv[i]);
			g.failures++;
			continue;
		}
		one(&g, argv[i]);
	}
	if (warned)
		fprintf(stderr, "WARNING: a directory passed to the defrag ioctl will not process "
				"the files\nrecursively but will defragment the subvolume tree.\nIf "
				"this is not intended, please use option -r .\n");
	rc = g.dead ? cli_abort(&m) : cli_umount(&m);
	if (g.failures)
		fprintf(stderr, "total %u failures\n", g.failures);
	return rc || g.failures ? 1 : 0;
}

static int cmd_filesystem(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(&cli_cmd_filesystem, "needs a subcommand (defragment)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cli_help(&cli_cmd_filesystem);
	if (!strcmp(argv[1], "defragment") || !strcmp(argv[1], "defrag"))
		return defragment(argc - 1, argv + 1);
	return cli_usage_error(&cli_cmd_filesystem, "unknown subcommand '%s' (defragment)",
			       argv[1]);
}

const struct cli_cmd cli_cmd_filesystem = {
	.name = "filesystem",
	.summary = "defragment files or a subvolume's tree (btrfs filesystem defragment)",
	.usage = usage_text,
	.run = cmd_filesystem,
};
