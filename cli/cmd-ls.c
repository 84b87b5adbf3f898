/* cmd-ls.c - `btrsim ls`: list a directory of an image, in DIR_INDEX order. */
#include "cli/image.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char usage_text[] =
	"usage: btrsim ls [options] IMG... PATH\n"
	"\n"
	"List the directory PATH (from the top-level subvolume) of the file system\n"
	"on the images, in the order of its DIR_INDEX items.\n"
	"\n"
	"  -l                  long listing: mode, links, owner, group, size, mtime\n"
	"  -R                  recursive, into subdirectories and subvolumes\n"
	"  -i                  print each entry's inode number (subvolume:inode)\n"
	"      --degraded      open with devices missing\n"
	"      --usebackuproot open from a backup root if the root tree is unreadable\n"
	"      --nologreplay   show the last commit, not what the log tree adds\n"
	"  -h, --help          show this help\n";

const struct cli_cmd cli_cmd_ls;

struct ls {
	ref_fs *fs;
	bool longfmt, recursive, inodes;
	int errors;
};

static void print_entry(struct ls *ls, const char *dir, const struct ref_dentry *e)
{
	if (ls->inodes)
		printf("%llu:%llu ", (unsigned long long)e->ino.subvol, (unsigned long long)e->ino.ino);
	if (!ls->longfmt) {
		printf("%s\n", e->name);
		return;
	}
	struct ref_stat st;
	if (ref_stat(ls->fs, &e->ino, &st)) {
		fprintf(stderr, "btrsim ls: %s/%s: %s\n", dir, e->name, ref_error(ls->fs));
		ls->errors++;
		return;
	}
	char mode[11], when[32];
	cli_mode_string(st.mode, mode);
	struct tm tm;
	time_t t = st.mtime.tv_sec;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M", gmtime_r(&t, &tm) ? &tm : &(struct tm){ 0 });
	printf("%s %3u %5u %5u %10llu %s %s", mode, st.nlink, st.uid, st.gid,
	       (unsigned long long)st.size, when, e->name);
	if (S_ISLNK(st.mode)) {
		char target[4096];
		if (ref_readlink(ls->fs, &e->ino, target, sizeof(target)) >= 0)
			printf(" -> %s", target);
	}
	printf("\n");
}

static void list_dir(struct ls *ls, const char *path, const struct ref_ino *dir, int depth)
{
	struct ref_dentries l;
	int r = ref_dentries_read(ls->fs, dir, &l);
	if (r) {
		fprintf(stderr, "btrsim ls: %s: %s\n", path,
			r == -ENOMEM ? "out of memory" : ref_error(ls->fs));
		ls->errors++;
	}
	if (ls->recursive)
		printf("%s:\n", path);
	for (size_t i = 0; i < l.n; i++)
		print_entry(ls, path, &l.e[i]);
	if (ls->recursive && depth < 4096) {
		for (size_t i = 0; i < l.n; i++) {
			if (l.e[i].type != BTRFS_FT_DIR)
				continue;
			char *sub;
			if (asprintf(&sub, "%s/%s", strcmp(path, "/") ? path : "", l.e[i].name) < 0)
				continue;
			printf("\n");
			list_dir(ls, sub, &l.e[i].ino, depth + 1);
			free(sub);
		}
	}
	ref_dentries_free(&l);
}

static int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "degraded", no_argument, NULL, 'D' },
		{ "usebackuproot", no_argument, NULL, 'U' },
		{ "nologreplay", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	struct ls ls = { 0 };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "lRih", opts, NULL)) != -1) {
		switch (c) {
		case 'l': ls.longfmt = true; break;
		case 'R': ls.recursive = true; break;
		case 'i': ls.inodes = true; break;
		case 'D': oo.degraded = true; break;
		case 'U': oo.usebackuproot = true; break;
		case 'N': oo.nologreplay = true; break;
		case 'h': return cli_help(&cli_cmd_ls);
		default: return cli_usage_error(&cli_cmd_ls, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_ls, "needs at least one image and a path");
	const char *path = argv[argc - 1];
	sim_volume *vol;
	int rc = cli_open_fs(&cli_cmd_ls, argv + optind, argc - optind - 1, &oo, &vol, &ls.fs);
	if (rc)
		return rc;
	struct ref_ino dir;
	struct ref_stat st;
	if ((rc = cli_resolve(&cli_cmd_ls, ls.fs, path, &dir, &st))) {
		/* said why */
	} else if (!S_ISDIR(st.mode)) {
		const char *base = strrchr(path, '/');
		char *name = (char *)(base ? base + 1 : path);
		struct ref_dentry e = { .name = name, .len = strlen(name), .ino = dir };
		print_entry(&ls, path, &e);
	} else {
		list_dir(&ls, path, &dir, 0);
	}
	ref_close(ls.fs);
	sim_volume_close(vol);
	return rc ? rc : ls.errors ? 1 : 0;
}

const struct cli_cmd cli_cmd_ls = {
	.name = "ls",
	.summary = "list a directory of an image",
	.usage = usage_text,
	.run = cmd_ls,
};
