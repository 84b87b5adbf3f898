/* cmd-stat.c - `btrsim stat`: an inode's fields, as stat(1) would show them. */
#include "cli/image.h"

#include <getopt.h>

#include <sys/stat.h>
#include <time.h>

static const char usage_text[] =
	"usage: btrsim stat [options] IMG... PATH\n"
	"\n"
	"Print the inode of PATH (from the top-level subvolume): type and mode, links,\n"
	"owner, size, bytes allocated, flags, generations and the four timestamps.\n"
	"\n"
	"      --degraded      open with devices missing\n"
	"      --usebackuproot open from a backup root if the root tree is unreadable\n"
	"      --nologreplay   show the last commit, not what the log tree adds\n"
	"  -h, --help          show this help\n";

const struct cli_cmd cli_cmd_stat;

static void print_time(const char *label, const struct timespec *t)
{
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&t->tv_sec, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s: %s.%09ld +0000 (%lld.%ld)\n", label, when, t->tv_nsec, (long long)t->tv_sec,
	       t->tv_nsec);
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "unknown";
	}
}

static int cmd_stat(int argc, char **argv)
{
	struct ref_open_opts oo;
	int rc = cli_parse_open_opts(&cli_cmd_stat, argc, argv, &oo);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_stat, "needs at least one image and a path");
	const char *path = argv[argc - 1];
	sim_volume *vol;
	ref_fs *fs;
	rc = cli_open_fs(&cli_cmd_stat, argv + optind, argc - optind - 1, &oo, &vol, &fs);
	if (rc)
		return rc;
	struct ref_ino ino;
	struct ref_stat st;
	if (!(rc = cli_resolve(&cli_cmd_stat, fs, path, &ino, &st))) {
		char mode[11];
		cli_mode_string(st.mode, mode);
		printf("  File: %s", path);
		char target[4096];
		if (S_ISLNK(st.mode) && ref_readlink(fs, &ino, target, sizeof(target)) >= 0)
			printf(" -> %s", target);
		printf("\n  Size: %-12llu Bytes: %-12llu %s\n", (unsigned long long)st.size,
		       (unsigned long long)st.nbytes, type_name(st.mode));
		printf("Subvolume: %-8llu Inode: %-10llu Links: %u\n", (unsigned long long)ino.subvol,
		       (unsigned long long)ino.ino, st.nlink);
		printf("Access: (%04o/%s)  Uid: %u  Gid: %u  Rdev: %llu\n", st.mode & 07777, mode,
		       st.uid, st.gid, (unsigned long long)st.rdev);
		printf("Flags: %#llx  Generation: %llu  Transid: %llu  Sequence: %llu\n",
		       (unsigned long long)st.flags, (unsigned long long)st.generation,
		       (unsigned long long)st.transid, (unsigned long long)st.sequence);
		print_time("Access", &st.atime);
		print_time("Modify", &st.mtime);
		print_time("Change", &st.ctime);
		print_time(" Birth", &st.otime);
	}
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_stat = {
	.name = "stat",
	.summary = "print an inode of an image",
	.usage = usage_text,
	.run = cmd_stat,
};
