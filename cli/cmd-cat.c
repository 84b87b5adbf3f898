/* cmd-cat.c - `btrsim cat`: write a file of an image to stdout, checksums verified. */
#include "cli/image.h"

#include <getopt.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim cat [options] IMG... PATH\n"
	"\n"
	"Write the file PATH (from the top-level subvolume) to standard output.\n"
	"Data checksums are verified; a bad copy is replaced by a good one and\n"
	"reported on stderr; with no good copy the command fails (never wrong data).\n"
	"\n"
	"      --degraded      open with devices missing\n"
	"      --usebackuproot open from a backup root if the root tree is unreadable\n"
	"      --nologreplay   show the last commit, not what the log tree adds\n"
	"  -h, --help          show this help\n";

const struct cli_cmd cli_cmd_cat;

#define CHUNK (1u << 20)

static int cmd_cat(int argc, char **argv)
{
	struct ref_open_opts oo;
	int rc = cli_parse_open_opts(&cli_cmd_cat, argc, argv, &oo);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_cat, "needs at least one image and a path");
	const char *path = argv[argc - 1];
	sim_volume *vol;
	ref_fs *fs;
	rc = cli_open_fs(&cli_cmd_cat, argv + optind, argc - optind - 1, &oo, &vol, &fs);
	if (rc)
		return rc;
	struct ref_ino ino;
	struct ref_stat st;
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		rc = cli_fail(&cli_cmd_cat, "out of memory");
	else if ((rc = cli_resolve(&cli_cmd_cat, fs, path, &ino, &st)))
		;
	else if (S_ISDIR(st.mode))
		rc = cli_fail(&cli_cmd_cat, "%s: is a directory", path);
	for (uint64_t off = 0; !rc;) {
		ssize_t n = ref_pread(fs, &ino, buf, CHUNK, off);
		if (n < 0) {
			rc = cli_fail(&cli_cmd_cat, "%s: %s", path, ref_error(fs));
			break;
		}
		if (n == 0)
			break;
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
			rc = cli_fail(&cli_cmd_cat, "write error on standard output");
			break;
		}
		off += (uint64_t)n;
	}
	if (!rc && fflush(stdout))
		rc = cli_fail(&cli_cmd_cat, "write error on standard output");
	free(buf);
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_cat = {
	.name = "cat",
	.summary = "write a file of an image to standard output",
	.usage = usage_text,
	.run = cmd_cat,
};
