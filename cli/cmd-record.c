/*
 * cmd-record.c - `btrsim record`: an application's file-system calls
 * recorded as a workload (traces/fmount_app.c), for `btrsim explore` to
 * crash it at every point, as ALICE asked of applications.
 */
#include "cli/cli.h"
#include "traces/fmount.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim record -o APP.wl [--size SIZE] [--setup DIR] [--timeout SECONDS]\n"
	"                     -- CMD [ARGS...]\n"
	"\n"
	"Run CMD in a FUSE mount of a fresh Btrfs (ref, made as 'btrsim explore'\n"
	"makes its file system) and record every file-system call it makes as a\n"
	"workload (traces/README.md, \"Recording applications\"): create, mkdir,\n"
	"symlink, link, unlink, rmdir, rename with its flags, pwrite of the bytes\n"
	"written, truncate (O_TRUNC too), fallocate, fsync and fdatasync of files\n"
	"and directories, xattrs, chmod, chown, utimes.  CMD runs with the mount\n"
	"as its working directory, so relative paths land in the file system.\n"
	"The workload is replayed on ref at once: every call must give the\n"
	"result it gave.  Then 'btrsim explore APP.wl --check CHECKER' crashes it\n"
	"at every point and runs the checker in each state.\n"
	"\n"
	"  -o, --output FILE    where the workload goes (required)\n"
	"      --size SIZE      the file system's disk (default 512M, explore's)\n"
	"      --setup DIR      copy DIR's tree in first (cp -a through the mount:\n"
	"                       its calls are the workload's start, then sync and\n"
	"                       'mark setup')\n"
	"      --timeout SECS   kill CMD (and all it started) after SECS seconds\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 when CMD exited 0 and the workload was written and\n"
	"replays; 1 when CMD failed (the workload is written all the same when it\n"
	"made any call), timed out, could not run, or the recording failed; 2 for\n"
	"bad usage.\n";

const struct cli_cmd cli_cmd_record;

static int write_workload(const char *path, const struct wl_workload *w)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return cli_fail(&cli_cmd_record, "%s: %s", path, strerror(errno));
	int r = wl_print(f, w);
	if (fclose(f) || r)
		return cli_fail(&cli_cmd_record, "%s: writing failed", path);
	return 0;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' }, { "size", required_argument, NULL, 's' },
		{ "setup", required_argument, NULL, 'S' },  { "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },	    { 0 }
	};
	const char *out = NULL;
	char setup[PATH_MAX];
	struct app_record_opts o = { .disk_size = 512u << 20, .nodesize = 16384 };
	uint64_t v;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 's':
			if (cli_parse_u64(optarg, &v, 1) || v < (128u << 20) || v > (UINT64_C(1) << 40))
				return cli_usage_error(&cli_cmd_record,
						       "--size: '%s' is not a size from 128M to 1T", optarg);
			o.disk_size = v;
			break;
		case 'S': {
			struct stat st;
			if (stat(optarg, &st) || !S_ISDIR(st.st_mode))
				return cli_usage_error(&cli_cmd_record, "--setup: '%s' is not a directory",
						       optarg);
			/* absolute: cp runs in the mount */
			if (!realpath(optarg, setup))
				return cli_fail(&cli_cmd_record, "--setup %s: %s", optarg, strerror(errno));
			o.setup_dir = setup;
			break;
		}
		case 't':
			if (cli_parse_u64(optarg, &v, 0) || v == 0 || v > 86400 * 7)
				return cli_usage_error(&cli_cmd_record,
						       "--timeout: '%s' is not a number of seconds", optarg);
			o.timeout_ms = (unsigned)(v * 1000);
			break;
		case 'h': return cli_help(&cli_cmd_record);
		default:
			return cli_usage_error(&cli_cmd_record, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!out)
		return cli_usage_error(&cli_cmd_record, "-o FILE is required");
	if (optind >= argc)
		return cli_usage_error(&cli_cmd_record, "no command to run (after --)");
	o.argv = argv + optind;
	char tmp[] = "/tmp/btrsim-record.XXXXXX";
	if (!mkdtemp(tmp))
		return cli_fail(&cli_cmd_record, "a temporary directory: %s", strerror(errno));
	o.mountpoint = tmp;
	struct wl_workload w = { 0 };
	struct app_record_result res;
	char err[600];
	int r = app_record(&o, &w, &res, err, sizeof(err));
	rmdir(tmp);
	int rc = 0;
	if (r) {
		rc = cli_fail(&cli_cmd_record, "%s", err);
	} else if (w.n == res.setup_ops && (!WIFEXITED(res.status) || WEXITSTATUS(res.status))) {
		rc = cli_fail(&cli_cmd_record, "%s %s before any file-system call; nothing recorded",
			      o.argv[0], res.timed_out ? "timed out" : "failed");
	} else {
		rc = write_workload(out, &w);
		if (!rc && res.mismatches)
			rc = cli_fail(&cli_cmd_record, "the recording does not replay on ref (%zu ops differ); "
				      "the first: %s", res.mismatches, res.mismatch);
		if (!rc && res.gaps < 0)
			rc = cli_fail(&cli_cmd_record, "%s", res.gap);
		if (res.gaps > 0)
			fprintf(stderr, "btrsim record: warning: %s\n", res.gap);
		if (!rc && res.timed_out)
			rc = cli_fail(&cli_cmd_record, "%s timed out after %u s and was killed; "
				      "%zu ops recorded into %s", o.argv[0], o.timeout_ms / 1000, w.n, out);
		else if (!rc && WIFSIGNALED(res.status))
			rc = cli_fail(&cli_cmd_record, "%s was killed by signal %d; %zu ops recorded into %s",
				      o.argv[0], WTERMSIG(res.status), w.n, out);
		else if (!rc && WEXITSTATUS(res.status))
			rc = cli_fail(&cli_cmd_record, "%s exited with status %d; %zu ops recorded into %s",
				      o.argv[0], WEXITSTATUS(res.status), w.n, out);
		else if (!rc)
			fprintf(stderr, "btrsim record: %zu ops recorded into %s (%zu of them the setup); "
				"they replay on ref with every result as recorded\n",
				w.n, out, res.setup_ops);
	}
	wl_free(&w);
	return rc;
}

const struct cli_cmd cli_cmd_record = {
	.name = "record",
	.summary = "record an application's file-system calls as a workload, through FUSE",
	.usage = usage_text,
	.run = cmd_record,
};
