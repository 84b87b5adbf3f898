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
	"                      csum, quota, uuid, free-space, block-group, data-reloc,\n"
	"                      log (or tree-log: the log root tree and each log tree)\n"
	"  -b, --block BYTENR  only this tree block (may be repeated)\n"
	"      --follow        with --block, also every block below it\n"
	"      --bfs           breadth first: a tree's nodes level by level (default)\n"
	"      --dfs           depth first, each block followed by its children\n"
	"      --hide-names    print HIDDEN for file names, subvolume names, xattrs\n"
	"      --csum-headers  print the checksum in each block header\n"
	"      --csum-items    print every checksum of EXTENT_CSUM items\n"
	"  -s, --super N       use superblock copy N (0, 1, 2) instead of the newest\n"
	"      --degraded      open with devices missing\n"
	"      --usebackuproot open from a backup root if the root tree is unreadable\n"
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
	{ "tree-log", BTRFS_TREE_LOG_OBJECTID, "log tree" },
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
	bool dfs;
	int errors;
};

/* A child to print: where it is and what its parent expects of it. */
struct pending_block {
	uint64_t bytenr, gen;
	int level;
};

static void block_error(struct dump *dp)
{
	fprintf(stderr, "btrsim dump-tree: %s\n", ref_error(dp->fs));
	dp->errors++;
}

/* Prints one block; appends its children (when it is a node) to *kids. */
static void print_one(struct dump *dp, const struct pending_block *pb, struct pending_block **kids,
		      size_t *nkids, size_t *cap)
{
	struct ref_block *b;
	if (ref_read_block(dp->fs, pb->bytenr, pb->gen, pb->level, 0, &b)) {
		block_error(dp);
		return;
	}
	const uint8_t *d = ref_block_data(b);
	ref_print_block(stdout, &dp->ctx, d);
	const struct btrfs_header_disk *h = (const void *)d;
	uint32_t n = h->level ? LE32(h->nritems) : 0;
	const struct btrfs_key_ptr_disk *ptrs = (const void *)(d + sizeof(*h));
	for (uint32_t i = 0; kids && i < n; i++) {
		if (*nkids == *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			struct pending_block *p = realloc(*kids, ncap * sizeof(*p));
			if (!p) {
				fprintf(stderr, "btrsim dump-tree: out of memory\n");
				dp->errors++;
				break;
			}
			*kids = p;
			*cap = ncap;
		}
		(*kids)[(*nkids)++] = (struct pending_block){ LE64(ptrs[i].blockptr),
							      LE64(ptrs[i].generation), h->level - 1 };
	}
	ref_block_put(dp->fs, b);
}

/* Depth first: a block, then each child's whole subtree. */
static void dump_dfs(struct dump *dp, const struct pending_block *pb)
{
	struct pending_block *kids = NULL;
	size_t n = 0, cap = 0;
	print_one(dp, pb, &kids, &n, &cap);
	for (size_t i = 0; i < n; i++)
		dump_dfs(dp, &kids[i]);
	free(kids);
}

/* Breadth first, as btrfs-progs prints by default: level by level. */
static void dump_bfs(struct dump *dp, const struct pending_block *root)
{
	struct pending_block *cur = malloc(sizeof(*cur)), *next = NULL;
	size_t ncur = 1, nnext = 0, cap = 0;
	if (!cur)
		return;
	cur[0] = *root;
	while (ncur) {
		for (size_t i = 0; i < ncur; i++)
			print_one(dp, &cur[i], &next, &nnext, &cap);
		free(cur);
		cur = next;
		ncur = nnext;
		next = NULL;
		nnext = cap = 0;
	}
	free(cur);
}

/* Prints a block and, when follow is set, every block below it. */
static void dump_block(struct dump *dp, uint64_t bytenr, uint64_t gen, int level, bool follow)
{
	struct pending_block pb = { bytenr, gen, level };
	if (!follow)
		print_one(dp, &pb, NULL, NULL, NULL);
	else if (dp->dfs)
		dump_dfs(dp, &pb);
	else
		dump_bfs(dp, &pb);
}

static void dump_root(struct dump *dp, const struct ref_root *root)
{
	dump_block(dp, root->bytenr, root->gen, root->level, true);
}

static void print_totals(struct dump *dp)
{
	const struct btrfs_super_disk *sb = ref_super(dp->fs);
	printf("total bytes %llu\nbytes used %llu\nuuid ", (unsigned long long)LE64(sb->total_bytes),
	       (unsigned long long)LE64(sb->bytes_used));
	ref_print_uuid(stdout, sb->fsid);
	printf("\n");
}

/* The trees the log root tree points to (one per subvolume with fsynced changes). */
static void dump_log_trees(struct dump *dp, const struct ref_root *log)
{
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	int r = ref_search(dp->fs, log, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.type == BTRFS_ROOT_ITEM_KEY && size >= btrfs_legacy_root_item_size()) {
			const struct btrfs_root_item *ri = (const void *)data;
			struct pending_block pb = { LE64(ri->bytenr), LE64(ri->generation), ri->level };
			printf("log tree key ");
			ref_print_key(stdout, &k);
			printf(" \n");
			/* Print from a copy: the walk below may push this leaf out of the cache. */
			struct ref_key next = k;
			ref_path_release(dp->fs, &path);
			if (pb.level < BTRFS_MAX_TREE_LEVEL)
				dump_block(dp, pb.bytenr, pb.gen, pb.level, true);
			next.offset++;
			if (!next.offset) {
				next.type++;
			}
			r = ref_search(dp->fs, log, &next, &path);
			continue;
		}
		r = ref_next(dp->fs, &path);
	}
	ref_path_release(dp->fs, &path);
	if (r < 0)
		block_error(dp);
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
	const struct btrfs_super_disk *sb = ref_super(dp->fs);
	struct ref_root log = { BTRFS_TREE_LOG_OBJECTID, LE64(sb->log_root), 0, sb->log_root_level };
	if (log.bytenr) {
		printf("log root tree\n");
		dump_root(dp, &log);
	}
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
	if (log.bytenr)
		dump_log_trees(dp, &log);
	print_totals(dp);
}


/* One tree, with the title line progs prints for it. */
static void dump_one_tree(struct dump *dp, uint64_t id)
{
	struct ref_root root;
	if (id == BTRFS_TREE_LOG_OBJECTID) {
		/* The log trees live outside the root tree: the superblock names
		 * the log root tree, whose ROOT_ITEMs name one log per subvolume. */
		const struct btrfs_super_disk *sb = ref_super(dp->fs);
		struct ref_root log = { id, LE64(sb->log_root), 0, sb->log_root_level };
		if (!log.bytenr) {
			fprintf(stderr, "btrsim dump-tree: no log tree (the superblock's log_root is 0)\n");
			dp->errors++;
			return;
		}
		printf("log root tree\n");
		dump_root(dp, &log);
		dump_log_trees(dp, &log);
		print_totals(dp);
		return;
	}
	if (ref_find_root(dp->fs, id, &root)) {
		block_error(dp);
		return;
	}
	if (id == BTRFS_ROOT_TREE_OBJECTID || id == BTRFS_CHUNK_TREE_OBJECTID) {
		printf("%s\n", tree_title(id));
		dump_root(dp, &root);
		return;
	}
	/* The ROOT_ITEM's key: its offset is the snapshot's creation transid. */
	struct ref_key key = { id, BTRFS_ROOT_ITEM_KEY, 0 };
	struct ref_root tree_root;
	struct ref_path path;
	if (ref_find_root(dp->fs, BTRFS_ROOT_TREE_OBJECTID, &tree_root) == 0 &&
	    ref_search(dp->fs, &tree_root, &key, &path) == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid == id && k.type == BTRFS_ROOT_ITEM_KEY)
			key = k;
		ref_path_release(dp->fs, &path);
	}
	printf("%s key ", tree_title(id));
	ref_print_key(stdout, &key);
	printf(" \n");
	dump_root(dp, &root);
	print_totals(dp);
}

static int cmd_dump_tree(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tree", required_argument, NULL, 't' },  { "block", required_argument, NULL, 'b' },
		{ "follow", no_argument, NULL, 'F' },      { "super", required_argument, NULL, 's' },
		{ "bfs", no_argument, NULL, 'B' },         { "dfs", no_argument, NULL, 'P' },
		{ "hide-names", no_argument, NULL, 'N' },  { "csum-headers", no_argument, NULL, 'H' },
		{ "csum-items", no_argument, NULL, 'I' },  { "usebackuproot", no_argument, NULL, 'U' },
		{ "degraded", no_argument, NULL, 'D' },    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* The blocks as they are on disk: a log tree is printed, not replayed. */
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr, .nologreplay = true };
	uint64_t tree = 0, blocks[64], v;
	bool have_tree = false, follow = false, dfs = false;
	unsigned mode = 0;
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
		case 'B': dfs = false; break;
		case 'P': dfs = true; break;
		case 'N': mode |= REF_PRINT_HIDE_NAMES; break;
		case 'H': mode |= REF_PRINT_CSUM_HEADERS; break;
		case 'I': mode |= REF_PRINT_CSUM_ITEMS; break;
		case 's':
			if (cli_parse_u64(optarg, &v, 0) || v > 2)
				return cli_usage_error(&cli_cmd_dump_tree, "--super takes 0, 1 or 2, not '%s'",
						       optarg);
			oo.super_mirror = (int)v;
			break;
		case 'D': oo.degraded = true; break;
		case 'U': oo.usebackuproot = true; break;
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
					 .nodesize = LE32(sb->nodesize), .mode = mode };
	dp.dfs = dfs;
	if (nblocks) {
		for (int i = 0; i < nblocks; i++)
			dump_block(&dp, blocks[i], 0, -1, follow);
	} else if (have_tree) {
		dump_one_tree(&dp, tree);
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
