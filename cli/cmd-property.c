/*
 * cmd-property.c - `btrsim property get|set|list`, the compression property
 * of files and directories as `btrfs property` (btrfs-progs 6.2) shows and
 * sets it (the xattr btrfs.compression; ref/compress/compress_prop.c has the
 * kernel's rules), and `btrsim lsattr` / `btrsim chattr` for the inode flags
 * c and m as e2fsprogs' lsattr and chattr show and set them.
 */
#include "cli/fsops.h"

#include <errno.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROP_XATTR "btrfs.compression"

static const char property_usage[] =
	"usage: btrsim property get IMG... PATH [compression]\n"
	"       btrsim property set IMG... PATH compression VALUE\n"
	"       btrsim property list IMG... PATH\n"
	"\n"
	"The compression property of a file or directory, as btrfs property: get\n"
	"prints compression=VALUE when it is set (nothing otherwise); set stores\n"
	"VALUE: zlib, lzo or zstd (new data of the file, and of files made in the\n"
	"directory later, is compressed with it, as the kernel's), no or none (never\n"
	"compressed), or \"\" (reset: the mount options decide).  Linux 6.18's rules:\n"
	"EINVAL for another value or on a nodatacow or nodatasum file, EROFS in a\n"
	"read-only snapshot; on a symlink or special file nothing is stored.  Other\n"
	"properties of btrfs property (ro, label) are not here.\n"
	"\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0, 1 on an error (one line naming the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_property;

struct find_prop {
	char value[256];
	bool found;
};

static int find_prop(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	struct find_prop *f = ctx;
	if (nlen == strlen(PROP_XATTR) && !memcmp(name, PROP_XATTR, nlen)) {
		size_t n = vlen < sizeof(f->value) - 1 ? vlen : sizeof(f->value) - 1;
		memcpy(f->value, value, n);
		f->value[n] = 0;
		f->found = true;
	}
	return 0;
}

static int prop_get(char **imgs, int nimg, const char *path)
{
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	sim_volume *vol;
	ref_fs *fs;
	int rc = cli_open_fs(&cli_cmd_property, imgs, nimg, &oo, &vol, &fs);
	if (rc)
		return rc;
	struct ref_ino ino;
	struct ref_stat st;
	struct find_prop f = { .found = false };
	if (!(rc = cli_resolve(&cli_cmd_property, fs, path, &ino, &st))) {
		int r = ref_listxattr(fs, &ino, find_prop, &f);
		if (r) {
			char es[96];
			rc = cli_fail(&cli_cmd_property, "%s: %s: %s", path, cli_errno_str(r, es, sizeof(es)),
				      ref_error(fs));
		} else if (f.found) {
			printf("compression=%s\n", f.value);
		}
	}
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

static int prop_set(char **imgs, int nimg, const char *path, const char *value)
{
	struct cli_mount m;
	int rc = cli_mount(&cli_cmd_property, imgs, nimg, &m);
	if (rc)
		return rc;
	int r = ref_setxattr(m.fs, path, PROP_XATTR, value, strlen(value), 0);
	if (r)
		return cli_op_fail(&m, path, r);
	return cli_umount(&m);
}

static int cmd_property(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(&cli_cmd_property);
		return cli_usage_error(&cli_cmd_property, "unknown option '%s'", argv[optind - 1]);
	}
	if (optind >= argc)
		return cli_usage_error(&cli_cmd_property, "needs get, set or list");
	const char *sub = argv[optind++];
	int n = argc - optind;
	char **args = argv + optind;
	if (!strcmp(sub, "list")) {
		if (n < 2)
			return cli_usage_error(&cli_cmd_property, "list needs at least one image and PATH");
		printf("compression         Set/get compression for a file or directory\n");
		return 0;
	}
	if (!strcmp(sub, "get")) {
		/* The last operand may be the property's name. */
		bool named = n >= 3 && !strcmp(args[n - 1], "compression");
		if (n < 2)
			return cli_usage_error(&cli_cmd_property, "get needs at least one image and PATH");
		if (!named && n >= 3 && strchr(args[n - 1], '/') == NULL && args[n - 1][0] != '.')
			return cli_usage_error(&cli_cmd_property,
					       "unknown property '%s' (compression is the one here)",
					       args[n - 1]);
		int np = named ? n - 1 : n;
		return prop_get(args, np - 1, args[np - 1]);
	}
	if (!strcmp(sub, "set")) {
		if (n < 4)
			return cli_usage_error(&cli_cmd_property,
					       "set needs at least one image, PATH, compression and VALUE");
		if (strcmp(args[n - 2], "compression"))
			return cli_usage_error(&cli_cmd_property,
					       "unknown property '%s' (compression is the one here)",
					       args[n - 2]);
		return prop_set(args, n - 3, args[n - 3], args[n - 1]);
	}
	return cli_usage_error(&cli_cmd_property, "unknown subcommand '%s'", sub);
}

const struct cli_cmd cli_cmd_property = {
	.name = "property",
	.summary = "get or set the compression property of a file or directory",
	.usage = property_usage,
	.run = cmd_property,
};

/* ---- lsattr and chattr ---- */

/* e2fsprogs' letters in lsattr's order (lib/e2p/pf.c). */
static const struct {
	uint32_t flag;
	char letter;
} letters[] = {
	{ FS_SECRM_FL, 's' },	 { FS_UNRM_FL, 'u' },	     { FS_SYNC_FL, 'S' },
	{ FS_DIRSYNC_FL, 'D' },	 { FS_IMMUTABLE_FL, 'i' },   { FS_APPEND_FL, 'a' },
	{ FS_NODUMP_FL, 'd' },	 { FS_NOATIME_FL, 'A' },     { FS_COMPR_FL, 'c' },
	{ FS_ENCRYPT_FL, 'E' },	 { FS_JOURNAL_DATA_FL, 'j' }, { FS_INDEX_FL, 'I' },
	{ FS_NOTAIL_FL, 't' },	 { FS_TOPDIR_FL, 'T' },	     { FS_EXTENT_FL, 'e' },
	{ FS_NOCOW_FL, 'C' },	 { 0x02000000, 'x' },	     { 0x40000000, 'F' },
	{ 0x10000000, 'N' },	 { FS_PROJINHERIT_FL, 'P' }, { 0x00100000, 'V' },
	{ FS_NOCOMP_FL, 'm' },
};
#define NLETTERS (sizeof(letters) / sizeof(letters[0]))

static const char lsattr_usage[] =
	"usage: btrsim lsattr IMG... PATH\n"
	"\n"
	"The inode flags of PATH (FS_IOC_GETFLAGS) in the layout of e2fsprogs'\n"
	"lsattr: c compress, m no compression, C no copy-on-write, and the others.\n"
	"\n"
	"  -h, --help   show this help\n";

const struct cli_cmd cli_cmd_lsattr;

static int cmd_lsattr(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return cli_help(&cli_cmd_lsattr);
	if (argc < 3)
		return cli_usage_error(&cli_cmd_lsattr, "needs at least one image and PATH");
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	sim_volume *vol;
	ref_fs *fs;
	int rc = cli_open_fs(&cli_cmd_lsattr, argv + 1, argc - 2, &oo, &vol, &fs);
	if (rc)
		return rc;
	const char *path = argv[argc - 1];
	struct ref_ino ino;
	struct ref_stat st;
	if (!(rc = cli_resolve(&cli_cmd_lsattr, fs, path, &ino, &st))) {
		uint32_t f = ref_inode_fsflags(st.flags);
		char s[NLETTERS + 1];
		for (size_t i = 0; i < NLETTERS; i++)
			s[i] = f & letters[i].flag ? letters[i].letter : '-';
		s[NLETTERS] = 0;
		printf("%s %s\n", s, path);
	}
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_lsattr = {
	.name = "lsattr",
	.summary = "print the inode flags of a file, as lsattr",
	.usage = lsattr_usage,
	.run = cmd_lsattr,
};

static const char chattr_usage[] =
	"usage: btrsim chattr IMG... [+-=]FLAGS... PATH\n"
	"\n"
	"Change the inode flags of PATH as chattr (FS_IOC_SETFLAGS): +c compress\n"
	"new data (the compression property becomes the mount's algorithm, zlib\n"
	"here), +m never compress (the property goes), -c / -m drop them, =FLAGS\n"
	"sets exactly those.  Linux 6.18's rules: c with m, or either with C, is\n"
	"EINVAL.  ref changes only c and m; asking for another flag is EOPNOTSUPP.\n"
	"\n"
	"  -h, --help   show this help\n";

const struct cli_cmd cli_cmd_chattr;

/* Applies one "+cm" / "-c" / "=m" word to *flags: 0, or -1 for a bad word. */
static int chattr_word(const char *w, uint32_t *flags)
{
	char op = w[0];
	if ((op != '+' && op != '-' && op != '=') || !w[1])
		return -1;
	uint32_t set = 0;
	for (const char *p = w + 1; *p; p++) {
		size_t i = 0;
		while (i < NLETTERS && letters[i].letter != *p)
			i++;
		if (i == NLETTERS)
			return -1;
		set |= letters[i].flag;
	}
	*flags = op == '+' ? *flags | set : op == '-' ? *flags & ~set : set;
	return 0;
}

static int cmd_chattr(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return cli_help(&cli_cmd_chattr);
	int first = argc - 2; /* the flag words come just before PATH */
	while (first > 1 && strchr("+-=", argv[first - 1][0]))
		first--;
	if (argc < 4 || first < 2 || !strchr("+-=", argv[first][0]))
		return cli_usage_error(&cli_cmd_chattr, "needs at least one image, FLAGS and PATH");
	const char *path = argv[argc - 1];
	struct cli_mount m;
	int rc = cli_mount(&cli_cmd_chattr, argv + 1, first - 1, &m);
	if (rc)
		return rc;
	uint32_t flags;
	int r = ref_getflags(m.fs, path, &flags);
	if (r)
		return cli_op_fail(&m, path, r);
	for (int i = first; i < argc - 1; i++)
		if (chattr_word(argv[i], &flags)) {
			cli_report(&m, argv[i], EINVAL, "not a flag change (+-= and lsattr's letters)");
			return cli_abort(&m);
		}
	if ((r = ref_setflags(m.fs, path, flags)))
		return cli_op_fail(&m, path, r);
	return cli_umount(&m);
}

const struct cli_cmd cli_cmd_chattr = {
	.name = "chattr",
	.summary = "set or clear the compression flags c and m of a file, as chattr",
	.usage = chattr_usage,
	.run = cmd_chattr,
};
