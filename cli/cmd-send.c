/*
 * cmd-send.c - `btrsim send [-f OUTFILE] [--proto 1|2] [--no-data] IMG...
 * SUBVOL...`: full send streams of read-only subvolumes (ref_send), as
 * `btrfs send` writes them without -p or -c: several subvolumes make one
 * stream (one header, one end command), which `btrfs receive` and `btrsim
 * receive` apply.
 */
#include "cli/cli.h"
#include "cli/extents.h"
#include "cli/fsops.h"
#include "ref/send.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim send [-p PARENT] [-f OUTFILE] [--proto 1|2] [--no-data] [-q] IMG... SUBVOL...\n"
	"\n"
	"Write a send stream of each read-only subvolume SUBVOL (a path from the top\n"
	"level of the file system on the images, the disks of one volume) to OUTFILE\n"
	"or standard output, as 'btrfs send' writes a full stream (no -p or -c): the\n"
	"subvolume's tree, inode by inode, each made under its orphan name and\n"
	"renamed into place, its xattrs, data, owner, mode and times.  Several\n"
	"subvolumes make one stream, as btrfs send writes them.  'btrfs receive' and\n"
	"'btrsim receive' apply it.  With -p, an incremental stream: what changed\n"
	"since PARENT (a read-only snapshot the receiving side has, found there by\n"
	"its UUID): inodes made, removed, renamed and moved, data ranges whose\n"
	"extents differ, xattrs, sizes, owners, modes, times.  Clone sources (-c)\n"
	"and encoded writes (--compressed-data) are not here yet: shared extents are\n"
	"sent as their bytes.\n"
	"\n"
	"  -p PARENT      send the difference against the read-only subvolume PARENT\n"
	"  -f FILE        write the stream to FILE (default: standard output, which\n"
	"                 must not be a terminal)\n"
	"  --proto N      the stream's version: 1 (the default) or 2\n"
	"  --no-data      update_extent commands instead of the data (btrfs send --no-data)\n"
	"  -q, --quiet    no 'At subvol SUBVOL' lines on standard error\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0; 1 when a subvolume is not read-only or cannot be read, or\n"
	"the stream cannot be written; 2 for bad usage.\n";

const struct cli_cmd cli_cmd_send;

static int cmd_send(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "proto", required_argument, NULL, 'P' }, { "no-data", no_argument, NULL, 'N' },
		{ "quiet", no_argument, NULL, 'q' },	    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL;
	struct ref_send_opts so = { .proto = 1 };
	bool quiet = false;
	int c;
	optind = 1;
	opterr = 0;
	const char *parent = NULL;
	while ((c = getopt_long(argc, argv, ":f:p:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'p': parent = optarg; break;
		case 'P':
			if (strcmp(optarg, "1") && strcmp(optarg, "2"))
				return cli_usage_error(&cli_cmd_send, "--proto %s: 1 or 2", optarg);
			so.proto = (uint32_t)atoi(optarg);
			break;
		case 'N': so.no_data = true; break;
		case 'q': quiet = true; break;
		case 'h': return cli_help(&cli_cmd_send);
		case ':':
			return cli_usage_error(&cli_cmd_send, "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error(&cli_cmd_send, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int nops = argc - optind;
	if (nops < 2)
		return cli_usage_error(&cli_cmd_send, "needs at least one image and one SUBVOL");
	int nimg = cli_split_operands(argv + optind, nops);
	if (!file && isatty(STDOUT_FILENO))
		return cli_usage_error(&cli_cmd_send,
				       "not writing a send stream to a terminal: redirect it or give -f");
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	sim_volume *vol;
	ref_fs *fs;
	int rc = cli_open_fs(&cli_cmd_send, argv + optind, nimg, &oo, &vol, &fs);
	if (rc)
		return rc;
	FILE *out = file ? fopen(file, "wb") : stdout;
	if (!out) {
		rc = cli_fail(&cli_cmd_send, "%s: %s", file, strerror(errno));
		goto done;
	}
	if (parent) {
		int r = cli_subvol_at(fs, parent, &so.parent);
		if (r) {
			rc = cli_fail(&cli_cmd_send, "-p %s: %s", parent,
				      r == -EINVAL ? "not a subvolume" : ref_error(fs));
			goto close;
		}
	}
	for (int i = optind + nimg; !rc && i < argc; i++) {
		uint64_t id;
		int r = cli_subvol_at(fs, argv[i], &id);
		if (r) {
			rc = cli_fail(&cli_cmd_send, "%s: %s", argv[i],
				      r == -EINVAL ? "not a subvolume" : ref_error(fs));
			break;
		}
		if (!quiet)
			fprintf(stderr, "At subvol %s\n", argv[i]);
		so.omit_header = i > optind + nimg;
		so.omit_end = i < argc - 1;
		char err[1024];
		if ((r = ref_send(fs, id, &so, out, NULL, err, sizeof(err))))
			rc = cli_fail(&cli_cmd_send, "%s: %s", argv[i], err);
	}
close:
	if (out != stdout && fclose(out) && !rc)
		rc = cli_fail(&cli_cmd_send, "%s: %s", file, strerror(errno));
	else if (out == stdout && fflush(stdout) && !rc)
		rc = cli_fail(&cli_cmd_send, "standard output: %s", strerror(errno));
done:
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_send = {
	.name = "send",
	.summary = "write send streams of read-only subvolumes, as btrfs send",
	.usage = usage_text,
	.run = cmd_send,
};
