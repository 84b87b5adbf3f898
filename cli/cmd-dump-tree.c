/*
 * cmd-dump-tree.c - `btrsim dump-tree`: print trees or single blocks as
 * `btrfs inspect-internal dump-tree` does.  A block that fails to read or
 * validate is reported on stderr and skipped; the walk goes on.
 */
#include "cli/image.h"
#include "ref/print.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage_text[] =
	"usage: btrsim dump-tree [options] IMG...\n"
	"\n"
	"Print the trees of a file system, as 'btrfs inspect-internal dump-tree'.\n"
	"The images are the disks of one file system, in any order.\n"
	"\n"
	"  -t, --tree ID       only this tree: a number or root, chunk, extent, dev, fs,\n"
	"                      csum, quota, uuid, free-space, block-group, data-reloc\n"
	"  -b, --block BYTENR  only this tree block (may be repeated)\n"
	"      --follow        with --block, also every block below it\n"
	"  -s, --super N       use superblock copy N (0, 1, 2) instead of the newest\n"
	"      --degraded      open with devices missing\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0, or 1 when the file system cannot be opened or a block is bad.\n";

const struct cli_cmd cli_cmd_dump_tree;

static const struct {
	const char *name;
	uint64_t id;
	const char *title;
} trees[] = {
	{ "root", BTRFS_ROOT_TREE_OBJECTID, "root tree" },
	{ "extent", BTRFS_EXTENT_TREE_OBJECTID, "extent tree" },
	{ "chunk", BTRFS_CHUNK_TREE_OBJECTID, "chunk tree" },
	{ "dev", BTRFS_DEV_TREE_OBJECTID, "device tree" },
	{ "fs", BTRFS_FS_TREE_OBJECTID, "fs tree" },
	{ "csum", BTRFS_CSUM_TREE_OBJECTID, "checksum tree" },
	{ "quota", BTRFS_QUOTA_TREE_OBJECTID, "quota tree" },
	{ "uuid", BTRFS_UUID_TREE_OBJECTID, "uuid tree" },
	{ "free-space", BTRFS_FREE_SPACE_TREE_OBJECTID, "free space tree" },
	{ "block-group", BTRFS_BLOCK_GROUP_TREE_OBJECTID, "block group tree" },
	{ "data-reloc", BTRFS_DATA_RELOC_TREE_OBJECTID, "data reloc tree" },
	{ "tree-reloc", BTRFS_TREE_RELOC_OBJECTID, "tree reloc tree" },
	{ "log", BTRFS_TREE_LOG_OBJECTID, "log tree" },
};

static const char *tree_title(uint64_t id)
{
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++)
		if (trees[i].id == id)
			return trees[i].title;
	return id >= BTRFS_FIRST_FREE_OBJECTID && id <= BTRFS_LAST_FREE_OBJECTID ? "file tree"
										  : "tree";
}

static int parse_tree(const char *s, uint64_t *id)
{
	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++)
		if (!strcasecmp(s, trees[i].name)) {
			*id = trees[i].id;
			return 0;
		}
	if (s[0] == '-') { /* negative objectids, e.g. -9 */
		uint64_t v;
		if (cli_parse_u64(s + 1, &v, 0) || !v)
			return -1;
		*id = (uint64_t)0 - v;
		return 0;
	}
	return cli_parse_u64(s, id, 0);
}

struct dump {
	ref_fs *fs;
	struct ref_print_ctx ctx;
	int errors;
};

static void block_error(struct dump *dp)
{
	fprintf(stderr, "btrsim dump-tree: %s\n", ref_error(dp->fs));
	dp->errors++;
}

/* Prints a block and, when follow is set, every block below it, depth first. */
static void dump_block(struct dump *dp, uint64_t bytenr, uint64_t gen, int level, bool follow)
{
	struct ref_block *b;
	if (ref_read_block(dp->fs, bytenr, gen, level, 0, &b)) {
		block_error(dp);
		return;
	}
	const uint8_t *d = ref_block_data(b);
	ref_print_block(stdout, &dp->ctx, d);
	const struct btrfs_header_disk *h = (const void *)d;
	if (follow && h->level) {
		/* Copy the pointers: the block may leave the cache while we recurse. */
		uint32_t n = LE32(h->nritems);
		struct btrfs_key_ptr_disk *ptrs = malloc((size_t)n * sizeof(*ptrs));
		if (ptrs)
			memcpy(ptrs, d + sizeof(*h), (size_t)n * sizeof(*ptrs));
		int child_level = h->level - 1;
		ref_block_put(dp->fs, b);
		if (!ptrs) {
			fprintf(stderr, "btrsim dump-tree: out of memory\n");
			dp->errors++;
			return;
		}
		for (uint32_t i = 0; i < n; i++)
			dump_block(dp, LE64(ptrs[i].blockptr), LE64(ptrs[i].generation), child_level,
				   true);
		free(ptrs);
		return;
	}
	ref_block_put(dp->fs, b);
}

static void dump_root(struct dump *dp, const struct ref_root *root)
{
	dump_block(dp, root->bytenr, root->gen, root->level, true);
}

/* Every tree with a ROOT_ITEM in the root tree, in key order. */
static void dump_all(struct dump *dp)
{
	struct ref_root root;
	ref_find_root(dp->fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	printf("root tree\n");
	dump_root(dp, &root);
	ref_find_root(dp->fs, BTRFS_CHUNK_TREE_OBJECTID, &root);
	printf("chunk tree\n");
	dump_root(dp, &root);
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	ref_find_root(dp->fs, BTRFS_ROOT_TREE_OBJECTID, &root);
	/* Collect first: dumping a tree must not hold the root tree's path. */
	struct ref_key *keys = NULL;
	struct ref_root *roots = NULL;
	size_t n = 0, cap = 0;
	int r = ref_search(dp->fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.type == BTRFS_ROOT_ITEM_KEY && size >= btrfs_legacy_root_item_size()) {
			if (n == cap) {
				cap = cap ? cap * 2 : 32;
				keys = realloc(keys, cap * sizeof(*keys));
				roots = realloc(roots, cap * sizeof(*roots));
				if (!keys || !roots)
					break;
			}
			const struct btrfs_root_item *ri = (const void *)data;
			keys[n] = k;
			roots[n] = (struct ref_root){ k.objectid, LE64(ri->bytenr), LE64(ri->generation),
						      ri->level };
			n++;
		}
		r = ref_next(dp->fs, &path);
	}
	ref_path_release(dp->fs, &path);
	if (r < 0)
		block_error(dp);
	for (size_t i = 0; keys && roots && i < n; i++) {
		printf("%s key ", tree_title(keys[i].objectid));
		ref_print_key(stdout, &keys[i]);
		printf(" \n");
		if (roots[i].level >= BTRFS_MAX_TREE_LEVEL) {
			fprintf(stderr, "btrsim dump-tree: tree %llu: root level %u\n",
				(unsigned long long)roots[i].id, roots[i].level);
			dp->errors++;
			continue;
		}
		dump_root(dp, &roots[i]);
	}
	free(keys);
	free(roots);
	const struct btrfs_super_disk *sb = ref_super(dp->fs);
	printf("total bytes %llu\nbytes used %llu\nuuid ", (unsigned long long)LE64(sb->total_bytes),
	       (unsigned long long)LE64(sb->bytes_used));
	ref_print_uuid(stdout, sb->fsid);
	printf("\n");
}

static int cmd_dump_tree(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tree", required_argument, NULL, 't' },  { "block", required_argument, NULL, 'b' },
		{ "follow", no_argument, NULL, 'F' },      { "super", required_argument, NULL, 's' },
		{ "degraded", no_argument, NULL, 'D' },    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	uint64_t tree = 0, blocks[64], v;
	bool have_tree = false, follow = false;
	int nblocks = 0, c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "t:b:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_tree(optarg, &tree))
				return cli_usage_error(&cli_cmd_dump_tree, "unknown tree '%s'", optarg);
			have_tree = true;
			break;
		case 'b':
			if (cli_parse_u64(optarg, &v, 0) || nblocks == 64)
				return cli_usage_error(&cli_cmd_dump_tree, "bad block '%s'", optarg);
			blocks[nblocks++] = v;
			break;
		case 'F': follow = true; break;
		case 's':
			if (cli_parse_u64(optarg, &v, 0) || v > 2)
				return cli_usage_error(&cli_cmd_dump_tree, "--super takes 0, 1 or 2, not '%s'",
						       optarg);
			oo.super_mirror = (int)v;
			break;
		case 'D': oo.degraded = true; break;
		case 'h': return cli_help(&cli_cmd_dump_tree);
		default:
			return cli_usage_error(&cli_cmd_dump_tree, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (have_tree && nblocks)
		return cli_usage_error(&cli_cmd_dump_tree, "--tree and --block do not go together");
	sim_volume *vol;
	struct dump dp = { 0 };
	int rc = cli_open_fs(&cli_cmd_dump_tree, argv + optind, argc - optind, &oo, &vol, &dp.fs);
	if (rc)
		return rc;
	const struct btrfs_super_disk *sb = ref_super(dp.fs);
	dp.ctx = (struct ref_print_ctx){ .csum_type = LE16(sb->csum_type),
					 .sectorsize = LE32(sb->sectorsize),
					 .nodesize = LE32(sb->nodesize) };
	if (nblocks) {
		for (int i = 0; i < nblocks; i++)
			dump_block(&dp, blocks[i], 0, -1, follow);
	} else if (have_tree) {
		struct ref_root root;
		if (ref_find_root(dp.fs, tree, &root))
			block_error(&dp);
		else
			dump_root(&dp, &root);
	} else {
		dump_all(&dp);
	}
	ref_close(dp.fs);
	sim_volume_close(vol);
	return dp.errors ? 1 : 0;
}

const struct cli_cmd cli_cmd_dump_tree = {
	.name = "dump-tree",
	.summary = "print trees and tree blocks, as btrfs inspect-internal dump-tree",
	.usage = usage_text,
	.run = cmd_dump_tree,
};
