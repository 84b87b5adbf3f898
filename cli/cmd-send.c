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
	"usage: btrsim send [-p PARENT] [-c CLONE_SRC]... [-f OUTFILE] [--proto 1|2] [--no-data]\n"
	"                   [--compressed-data] [-q] IMG... SUBVOL...\n"
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
	"extents differ, xattrs, sizes, owners, modes, times.  Data whose extents a\n"
	"file the receiving side has shares (in the parent, a clone source, or a\n"
	"file the stream already made) is sent as a clone of it.  With -c and no -p,\n"
	"the parent is chosen as btrfs send chooses it (the clone source the\n"
	"subvolume was snapshotted from, else the one snapshotted from the same\n"
	"subvolume nearest in ctransid), and each subvolume sent becomes a clone\n"
	"source of the next.\n"
	"\n"
	"  -p PARENT      send the difference against the read-only subvolume PARENT\n"
	"  -c CLONE_SRC   a read-only subvolume the receiving side has, whose extents\n"
	"                 may be cloned (repeatable)\n"
	"  -f FILE        write the stream to FILE (default: standard output, which\n"
	"                 must not be a terminal)\n"
	"  --proto N      the stream's version: 1 (the default) or 2\n"
	"  --no-data      update_extent commands instead of the data (btrfs send --no-data)\n"
	"  --compressed-data\n"
	"                 compressed extents as encoded writes of their bytes on disk\n"
	"                 (version 2; implies --proto 2 when --proto is not given)\n"
	"  -q, --quiet    no 'At subvol SUBVOL' lines on standard error\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0; 1 when a subvolume is not read-only or cannot be read, or\n"
	"the stream cannot be written; 2 for bad usage.\n";

const struct cli_cmd cli_cmd_send;

/* btrfs send's parent for SUBVOL when -c is given without -p
 * (find_good_parent): the subvolume it was snapshotted from, when that is
 * a clone source; else the clone source snapshotted from the same one
 * whose ctransid is nearest to that one's.  -ENOENT when there is none. */
static int good_parent(ref_fs *fs, uint64_t id, const uint64_t *src, size_t n, uint64_t *out)
{
	struct ref_subvol_info si, pi, ci;
	uint64_t pid;
	if (ref_subvol_info(fs, id, &si) || ref_subvol_by_uuid(fs, si.parent_uuid, false, &pid) ||
	    pid == BTRFS_FS_TREE_OBJECTID || /* a snapshot of the top level has no parent here */
	    ref_subvol_info(fs, pid, &pi))
		return -ENOENT;
	for (size_t k = 0; k < n; k++)
		if (src[k] == pid)
			return *out = pid, 0;
	uint64_t best_diff = UINT64_MAX;
	for (size_t k = 0; k < n; k++) {
		if (ref_subvol_info(fs, src[k], &ci) || memcmp(ci.parent_uuid, si.parent_uuid, 16))
			continue;
		uint64_t diff = ci.ctransid > pi.ctransid ? ci.ctransid - pi.ctransid
							  : pi.ctransid - ci.ctransid;
		if (diff < best_diff) {
			best_diff = diff;
			*out = src[k];
		}
	}
	return best_diff == UINT64_MAX ? -ENOENT : 0;
}

static int cmd_send(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "proto", required_argument, NULL, 'P' }, { "no-data", no_argument, NULL, 'N' },
		{ "compressed-data", no_argument, NULL, 'C' },
		{ "quiet", no_argument, NULL, 'q' },	    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL;
	struct ref_send_opts so = { .proto = 0 };
	bool quiet = false;
	int c;
	optind = 1;
	opterr = 0;
	const char *parent = NULL;
	char **csrc = calloc((size_t)argc, sizeof(*csrc));
	size_t ncsrc = 0;
	if (!csrc)
		return cli_fail(&cli_cmd_send, "out of memory");
	while ((c = getopt_long(argc, argv, ":f:p:c:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'p': parent = optarg; break;
		case 'c': csrc[ncsrc++] = optarg; break;
		case 'P':
			if (strcmp(optarg, "1") && strcmp(optarg, "2")) {
				free(csrc);
				return cli_usage_error(&cli_cmd_send, "--proto %s: 1 or 2", optarg);
			}
			so.proto = (uint32_t)atoi(optarg);
			break;
		case 'N': so.no_data = true; break;
		case 'C': so.compressed_data = true; break;
		case 'q': quiet = true; break;
		case 'h': free(csrc); return cli_help(&cli_cmd_send);
		case ':':
			free(csrc);
			return cli_usage_error(&cli_cmd_send, "option '%s' needs a value", argv[optind - 1]);
		default:
			free(csrc);
			return cli_usage_error(&cli_cmd_send, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int nops = argc - optind;
	int rc = 0;
	if (so.compressed_data && so.proto == 1)
		rc = cli_usage_error(&cli_cmd_send, "--compressed-data needs --proto 2");
	else if (nops < 2)
		rc = cli_usage_error(&cli_cmd_send, "needs at least one image and one SUBVOL");
	else if (!file && isatty(STDOUT_FILENO))
		rc = cli_usage_error(&cli_cmd_send,
				     "not writing a send stream to a terminal: redirect it or give -f");
	if (rc) {
		free(csrc);
		return rc;
	}
	int nimg = cli_split_operands(argv + optind, nops);
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	sim_volume *vol;
	ref_fs *fs;
	uint64_t *srcs = calloc((size_t)argc + ncsrc + 1, sizeof(*srcs));
	if (!srcs || (rc = cli_open_fs(&cli_cmd_send, argv + optind, nimg, &oo, &vol, &fs))) {
		free(srcs);
		free(csrc);
		return rc ? rc : cli_fail(&cli_cmd_send, "out of memory");
	}
	size_t nsrc = 0;
	bool full = !parent && !ncsrc; /* else each subvolume sent becomes a clone source */
	if (!so.proto) /* --compressed-data implies version 2, as in btrfs send */
		so.proto = so.compressed_data ? 2 : 1;
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
	for (size_t k = 0; k < ncsrc; k++) {
		int r = cli_subvol_at(fs, csrc[k], &srcs[nsrc]);
		if (r) {
			rc = cli_fail(&cli_cmd_send, "-c %s: %s", csrc[k],
				      r == -EINVAL ? "not a subvolume" : ref_error(fs));
			goto close;
		}
		nsrc++;
	}
	for (int i = optind + nimg; !rc && i < argc; i++) {
		uint64_t id;
		int r = cli_subvol_at(fs, argv[i], &id);
		if (r) {
			rc = cli_fail(&cli_cmd_send, "%s: %s", argv[i],
				      r == -EINVAL ? "not a subvolume" : ref_error(fs));
			break;
		}
		if (!full && !parent && good_parent(fs, id, srcs, nsrc, &so.parent)) {
			rc = cli_fail(&cli_cmd_send, "%s: parent determination failed (no clone source "
				      "is its parent or a snapshot of its parent; give -p)", argv[i]);
			break;
		}
		if (!quiet)
			fprintf(stderr, "At subvol %s\n", argv[i]);
		so.omit_header = i > optind + nimg;
		so.omit_end = i < argc - 1;
		so.clone_src = srcs;
		so.nclone_src = nsrc;
		char err[1024];
		if ((r = ref_send(fs, id, &so, out, NULL, err, sizeof(err))))
			rc = cli_fail(&cli_cmd_send, "%s: %s", argv[i], err);
		if (!full)
			srcs[nsrc++] = id;
	}
close:
	if (out != stdout && fclose(out) && !rc)
		rc = cli_fail(&cli_cmd_send, "%s: %s", file, strerror(errno));
	else if (out == stdout && fflush(stdout) && !rc)
		rc = cli_fail(&cli_cmd_send, "standard output: %s", strerror(errno));
done:
	ref_close(fs);
	sim_volume_close(vol);
	free(srcs);
	free(csrc);
	return rc;
}

const struct cli_cmd cli_cmd_send = {
	.name = "send",
	.summary = "write send streams of read-only subvolumes, as btrfs send",
	.usage = usage_text,
	.run = cmd_send,
};
