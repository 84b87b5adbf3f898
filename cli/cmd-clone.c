/*
 * cmd-clone.c - `btrsim clone` (FICLONE / FICLONERANGE, as xfs_io's reflink
 * command) and `btrsim cp` (cp(1) of coreutils 9 for regular files: a
 * reflink, or with --reflink=auto, the default, a copy of the bytes when
 * the clone is refused) on the file system in images (ref_clone_range,
 * ref/reflink/).
 */
#include "cli/cli.h"
#include "cli/fsops.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define OPT_END { NULL, 0, NULL, 0 }
#define OPT_HELP { "help", no_argument, NULL, 'h' }
#define COPY_CHUNK ((size_t)1 << 20)

/* DST opened as cp and xfs_io -f open it: created with mode (less the
 * umask) when missing, else truncated to 0 when asked. */
static int open_dst(ref_fs *fs, const char *dst, uint32_t mode, bool trunc)
{
	int r = ref_create(fs, dst, mode);
	if (r == -EEXIST)
		r = trunc ? ref_truncate(fs, dst, 0) : 0;
	return r;
}

/* ---- clone ---- */

static const char clone_usage[] =
	"usage: btrsim clone [options] IMG... SRC DST\n"
	"\n"
	"Make DST share SRC's extents (FICLONE: the whole file, DST taking its size),\n"
	"or with --range the LEN bytes of SRC at SRC_OFF at DST_OFF of DST\n"
	"(FICLONERANGE; LEN 0: up to SRC's end), in the file system on the images, as\n"
	"Linux 6.18's btrfs clones: offsets multiples of the sector, LEN too unless\n"
	"the range ends where SRC ends at or past DST's end, no overlap within one\n"
	"file (EINVAL), DST writable (EROFS in a read-only snapshot), both regular\n"
	"files (EISDIR, EINVAL).  DST is created (0644 less the umask) when missing.\n"
	"Then commit.\n"
	"\n"
	"  --range SRC_OFF LEN DST_OFF   a range (K, M, G, T suffixes: powers of 1024)\n"
	"  -h, --help                    show this help\n"
	"\n"
	"Exit status: 0, 1 when the clone or the commit failed (one line naming the\n"
	"errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_clone;

static int cmd_clone(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "range", required_argument, NULL, 'r' }, OPT_HELP, OPT_END,
	};
	uint64_t v[3] = { 0, 0, 0 };
	bool range = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			/* SRC_OFF is optarg, LEN and DST_OFF the next two words */
			if (optind + 1 >= argc || cli_parse_u64(optarg, &v[0], 1) ||
			    cli_parse_u64(argv[optind], &v[1], 1) ||
			    cli_parse_u64(argv[optind + 1], &v[2], 1))
				return cli_usage_error(&cli_cmd_clone,
						       "--range needs SRC_OFF LEN DST_OFF, numbers");
			optind += 2;
			range = true;
			break;
		case 'h': return cli_help(&cli_cmd_clone);
		default:
			return cli_usage_error(&cli_cmd_clone, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 3)
		return cli_usage_error(&cli_cmd_clone, "needs at least one image, SRC and DST");
	const char *src = argv[argc - 2], *dst = argv[argc - 1];
	struct cli_mount m;
	int rc = cli_mount(&cli_cmd_clone, argv + optind, argc - optind - 2, &m);
	if (rc)
		return rc;
	int r = open_dst(m.fs, dst, 0644, false);
	if (!r)
		r = range ? ref_clone_range(m.fs, src, v[0], v[1], dst, v[2])
			  : ref_clone(m.fs, src, dst);
	return r ? cli_op_fail(&m, dst, r) : cli_umount(&m);
}

const struct cli_cmd cli_cmd_clone = {
	.name = "clone",
	.summary = "share a file's extents with another (FICLONE, FICLONERANGE)",
	.usage = clone_usage,
	.run = cmd_clone,
};

/* ---- cp ---- */

static const char cp_usage[] =
	"usage: btrsim cp [options] IMG... SRC DST\n"
	"\n"
	"Copy the regular file SRC to DST in the file system on the images, as cp(1)\n"
	"of coreutils 9: DST an existing directory means DST/NAME of SRC; an existing\n"
	"file is truncated; a new one gets SRC's permission bits (less the umask).\n"
	"The copy is a reflink (FICLONE: DST shares SRC's extents); --reflink=auto,\n"
	"the default, copies the bytes instead when the clone is refused (holes\n"
	"stay holes), --reflink[=always] fails then, --reflink=never always copies.\n"
	"Then commit.\n"
	"\n"
	"  --reflink[=WHEN]   always (the default of --reflink), auto, never\n"
	"  -h, --help         show this help\n"
	"\n"
	"Exit status: 0, 1 when the copy or the commit failed (one line naming the\n"
	"errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_cp;

enum reflink_when { RL_AUTO, RL_ALWAYS, RL_NEVER };

/* The bytes of src copied to dst, whole zero sectors left as holes. */
static int copy_bytes(ref_fs *fs, const char *src, const char *dst)
{
	struct ref_ino ino;
	struct ref_stat st;
	int r = ref_lookup_path(fs, src, true, &ino);
	if (r || (r = ref_stat(fs, &ino, &st)))
		return r;
	uint8_t *buf = malloc(COPY_CHUNK), zero[4096] = { 0 };
	if (!buf)
		return -ENOMEM;
	for (uint64_t at = 0; at < st.size && !r;) {
		size_t n = st.size - at < COPY_CHUNK ? (size_t)(st.size - at) : COPY_CHUNK;
		ssize_t got = ref_pread(fs, &ino, buf, n, at);
		if (got < 0) {
			r = (int)got;
			break;
		}
		/* each run of sectors that are not all zeros in one write */
		for (size_t o = 0; o < (size_t)got && !r;) {
			size_t end = o;
			while (end < (size_t)got) {
				size_t k = (size_t)got - end < sizeof(zero) ? (size_t)got - end
									 : sizeof(zero);
				if (k == sizeof(zero) && !memcmp(buf + end, zero, k))
					break;
				end += k;
			}
			if (end > o) {
				ssize_t w = ref_write(fs, dst, buf + o, end - o, at + o);
				r = w < 0 ? (int)w : 0;
			}
			o = end + (end < (size_t)got ? sizeof(zero) : 0);
		}
		at += (uint64_t)got;
		if (!got)
			break;
	}
	free(buf);
	return r ? r : ref_truncate(fs, dst, st.size);
}

static int cmd_cp(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reflink", optional_argument, NULL, 'r' }, OPT_HELP, OPT_END,
	};
	enum reflink_when when = RL_AUTO;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (!optarg || !strcmp(optarg, "always"))
				when = RL_ALWAYS;
			else if (!strcmp(optarg, "auto"))
				when = RL_AUTO;
			else if (!strcmp(optarg, "never"))
				when = RL_NEVER;
			else
				return cli_usage_error(&cli_cmd_cp, "--reflink: '%s' is not always, "
								    "auto or never", optarg);
			break;
		case 'h': return cli_help(&cli_cmd_cp);
		default: return cli_usage_error(&cli_cmd_cp, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 3)
		return cli_usage_error(&cli_cmd_cp, "needs at least one image, SRC and DST");
	const char *src = argv[argc - 2];
	char *dst = strdup(argv[argc - 1]);
	if (!dst)
		return cli_fail(&cli_cmd_cp, "out of memory");
	struct cli_mount m;
	int rc = cli_mount(&cli_cmd_cp, argv + optind, argc - optind - 2, &m);
	if (rc) {
		free(dst);
		return rc;
	}
	struct ref_stat s, d;
	struct ref_ino ino;
	int r = ref_lookup_path(m.fs, src, true, &ino);
	if (!r)
		r = ref_stat(m.fs, &ino, &s);
	if (!r && S_ISDIR(s.mode)) {
		cli_report(&m, src, EISDIR, "-r not specified; omitting directory");
		ref_close(m.fs);
		sim_volume_close(m.vol);
		free(dst);
		return 1;
	}
	/* DST a directory: DST/NAME of SRC */
	if (!r && !ref_lookup_path(m.fs, dst, true, &ino) && !ref_stat(m.fs, &ino, &d) &&
	    S_ISDIR(d.mode)) {
		const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
		char *joined = NULL;
		if (asprintf(&joined, "%s%s%s", dst, dst[strlen(dst) - 1] == '/' ? "" : "/", base) < 0)
			r = -ENOMEM;
		free(dst);
		dst = joined;
	}
	if (!r)
		r = open_dst(m.fs, dst, s.mode & 0777, true);
	if (!r && when != RL_NEVER) {
		r = ref_clone(m.fs, src, dst);
		if (r && when == RL_AUTO)
			r = copy_bytes(m.fs, src, dst);
	} else if (!r) {
		r = copy_bytes(m.fs, src, dst);
	}
	rc = r ? cli_op_fail(&m, dst ? dst : argv[argc - 1], r) : cli_umount(&m);
	free(dst);
	return rc;
}

const struct cli_cmd cli_cmd_cp = {
	.name = "cp",
	.summary = "copy a file, sharing its extents (cp --reflink)",
	.usage = cp_usage,
	.run = cmd_cp,
};
