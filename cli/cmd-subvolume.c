/*
 * cmd-subvolume.c - `btrsim subvolume`: create, snapshot, delete, sync,
 * list, show, get-default and set-default, with the meaning and output layout of
 * `btrfs subvolume`.  Paths are from the top-level subvolume.  Changes
 * commit before the command returns.
 */
#include "cli/fsops.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char subvolume_usage[] =
	"usage: btrsim subvolume COMMAND [options] IMG... [ARGS]\n"
	"\n"
	"Subvolumes and snapshots of the file system on the images (paths are from\n"
	"the top-level subvolume, as when it is mounted with subvolid=5):\n"
	"\n"
	"  create IMG... PATH              create an empty subvolume\n"
	"  snapshot [-r] IMG... SRC DEST   snapshot subvolume SRC as DEST (or as\n"
	"                                  DEST/NAME-OF-SRC when DEST is a directory);\n"
	"                                  -r makes it read-only\n"
	"  list IMG...                     every subvolume: ID, gen, top level, path\n"
	"  show IMG... PATH                the subvolume whose root is PATH\n"
	"  get-default IMG...              the default subvolume\n"
	"  set-default IMG... ID|PATH      make a subvolume (ID 5: the top level) the default\n"
	"  delete IMG... PATH              delete a subvolume: gone from the namespace at\n"
	"                                  once, its blocks freed by the cleaner a part at\n"
	"                                  each later commit\n"
	"  sync IMG...                     run the cleaner until every deleted subvolume\n"
	"                                  is freed\n"
	"\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0, 1 when the operation or the commit failed (one line naming\n"
	"the errno), 2 bad usage.\n";

const struct cli_cmd cli_cmd_subvolume;

static int usage_error(const char *why, const char *arg)
{
	return cli_usage_error(&cli_cmd_subvolume, why, arg);
}

/* Options of a subcommand (only -h, and -r for snapshot); optind at the first operand. */
static int sub_opts(int argc, char **argv, bool allow_r, bool *readonly)
{
	static const struct option opts[] = {
		{ "readonly", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+rh", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(&cli_cmd_subvolume), -1;
		if (c == 'r' && allow_r) {
			*readonly = true;
			continue;
		}
		return usage_error("unknown option '%s'", argv[optind - 1]);
	}
	return 0;
}

static void print_uuid(const char *label, const uint8_t *u)
{
	static const uint8_t zero[16];
	if (!memcmp(u, zero, 16)) {
		printf("\t%s\t-\n", label);
		return;
	}
	printf("\t%s\t", label);
	for (int i = 0; i < 16; i++)
		printf("%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
	printf("\n");
}

static void print_time(const char *label, const struct timespec *t)
{
	char buf[64];
	struct tm tm;
	time_t s = t->tv_sec;
	if (!localtime_r(&s, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S %z", &tm))
		snprintf(buf, sizeof(buf), "%lld", (long long)s);
	printf("\t%s\t%s\n", label, buf);
}

static int fail(ref_fs *fs, const char *what, int r)
{
	char es[96];
	fprintf(stderr, "btrsim subvolume: %s: %s: %s\n", what, cli_errno_str(r, es, sizeof(es)),
		ref_error(fs));
	return 1;
}

/* ---- Reading: list, show, get-default ---- */

static int list(ref_fs *fs)
{
	uint64_t *ids;
	size_t n;
	int r = ref_subvol_ids(fs, &ids, &n);
	if (r)
		return fail(fs, "list", r);
	char path[4096];
	for (size_t i = 0; i < n && !r; i++) {
		struct ref_subvol_info si;
		if ((r = ref_subvol_info(fs, ids[i], &si)) ||
		    (r = ref_subvol_path(fs, ids[i], path, sizeof(path))))
			break;
		printf("ID %llu gen %llu top level %llu path %s\n", (unsigned long long)si.id,
		       (unsigned long long)si.generation, (unsigned long long)si.parent, path);
	}
	free(ids);
	return r ? fail(fs, "list", r) : 0;
}

static int show_id(ref_fs *fs, uint64_t id)
{
	struct ref_subvol_info si;
	char path[4096];
	int r = ref_subvol_info(fs, id, &si);
	if (!r)
		r = id == BTRFS_FS_TREE_OBJECTID ? (snprintf(path, sizeof(path), "/"), 0)
						 : ref_subvol_path(fs, id, path, sizeof(path));
	if (r)
		return fail(fs, "show", r);
	const char *name = strrchr(path, '/');
	name = name && id != BTRFS_FS_TREE_OBJECTID ? name + 1 : path;
	printf("%s\n", path);
	printf("\tName: \t\t\t%s\n", id == BTRFS_FS_TREE_OBJECTID ? "<FS_TREE>" : name);
	print_uuid("UUID: \t\t", si.uuid);
	print_uuid("Parent UUID: \t", si.parent_uuid);
	print_uuid("Received UUID: \t", si.received_uuid);
	print_time("Creation time: \t", &si.otime);
	printf("\tSubvolume ID: \t\t%llu\n", (unsigned long long)id);
	printf("\tGeneration: \t\t%llu\n", (unsigned long long)si.generation);
	printf("\tGen at creation: \t%llu\n", (unsigned long long)si.otransid);
	printf("\tParent ID: \t\t%llu\n", (unsigned long long)si.parent);
	printf("\tTop level ID: \t\t%llu\n", (unsigned long long)si.parent);
	printf("\tFlags: \t\t\t%s\n", si.flags & BTRFS_ROOT_SUBVOL_RDONLY ? "readonly" : "-");
	printf("\tSnapshot(s):\n");
	uint64_t *ids;
	size_t n;
	if ((r = ref_subvol_ids(fs, &ids, &n)))
		return fail(fs, "show", r);
	for (size_t i = 0; i < n && !r; i++) {
		struct ref_subvol_info s2;
		if ((r = ref_subvol_info(fs, ids[i], &s2)))
			break;
		if (!memcmp(s2.parent_uuid, si.uuid, 16) &&
		    !(r = ref_subvol_path(fs, ids[i], path, sizeof(path))))
			printf("\t\t\t\t%s\n", path);
	}
	free(ids);
	return r ? fail(fs, "show", r) : 0;
}

static int get_default(ref_fs *fs)
{
	uint64_t id;
	struct ref_subvol_info si;
	char path[4096];
	int r = ref_subvol_default(fs, &id);
	if (!r && id == BTRFS_FS_TREE_OBJECTID) {
		printf("ID 5 (FS_TREE)\n");
		return 0;
	}
	if (!r && !(r = ref_subvol_info(fs, id, &si)) &&
	    !(r = ref_subvol_path(fs, id, path, sizeof(path))))
		printf("ID %llu gen %llu top level %llu path %s\n", (unsigned long long)id,
		       (unsigned long long)si.generation, (unsigned long long)si.parent, path);
	return r ? fail(fs, "get-default", r) : 0;
}

static int read_cmd(const char *sub, int argc, char **argv, int nargs)
{
	int nimg = argc - optind - nargs;
	if (nimg < 1)
		return usage_error("%s: needs at least one image and its arguments", sub);
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	sim_volume *vol;
	ref_fs *fs;
	int rc = cli_open_fs(&cli_cmd_subvolume, argv + optind, nimg, &oo, &vol, &fs);
	if (rc)
		return rc;
	if (!strcmp(sub, "list")) {
		rc = list(fs);
	} else if (!strcmp(sub, "get-default")) {
		rc = get_default(fs);
	} else {
		const char *path = argv[argc - 1];
		uint64_t id = 0;
		int r = cli_subvol_at(fs, path, &id);
		if (r == -EINVAL)
			rc = (fprintf(stderr, "btrsim subvolume: show: %s: not a subvolume\n", path), 1);
		else
			rc = r ? fail(fs, path, r) : show_id(fs, id);
	}
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

/* ---- Changing: create, snapshot, set-default ---- */

/* DEST, or DEST/basename(SRC) when DEST is a directory (btrfs-progs' rule). */
static char *snapshot_dest(ref_fs *fs, const char *src, const char *dest)
{
	struct ref_stat st;
	if (ref_stat_path(fs, dest, true, &st) || !S_ISDIR(st.mode))
		return strdup(dest);
	size_t sl = strlen(src);
	while (sl > 1 && src[sl - 1] == '/')
		sl--;
	size_t b = sl;
	while (b > 0 && src[b - 1] != '/')
		b--;
	char *out = malloc(strlen(dest) + 1 + (sl - b) + 1);
	if (out)
		sprintf(out, "%s/%.*s", dest, (int)(sl - b), src + b);
	return out;
}

static int write_cmd(const char *sub, int argc, char **argv, int nargs, bool readonly)
{
	int nimg = argc - optind - nargs;
	if (nimg < 1)
		return usage_error("%s: needs at least one image and its arguments", sub);
	struct cli_mount m;
	int rc = cli_mount(&cli_cmd_subvolume, argv + optind, nimg, &m);
	if (rc)
		return rc;
	const char *arg = argv[argc - 1];
	int r;
	uint64_t id = 0;
	if (!strcmp(sub, "create")) {
		r = ref_subvol_create(m.fs, arg, &id);
	} else if (!strcmp(sub, "delete")) {
		r = ref_subvol_delete(m.fs, arg);
		if (!r)
			printf("Delete subvolume '%s'\n", arg);
	} else if (!strcmp(sub, "sync")) {
		arg = "sync";
		r = ref_subvol_sync(m.fs);
	} else if (!strcmp(sub, "snapshot")) {
		const char *src = argv[argc - 2];
		char *dest = snapshot_dest(m.fs, src, arg);
		if (!dest)
			return cli_report(&m, arg, ENOMEM, ""), cli_abort(&m);
		r = ref_snapshot(m.fs, src, dest, readonly, &id);
		if (!r)
			printf("Create %ssnapshot of '%s' in '%s'\n", readonly ? "readonly " : "", src,
			       dest);
		free(dest);
	} else {
		char *end;
		errno = 0;
		id = strtoull(arg, &end, 10);
		if (*arg == '/' || errno || *end) {
			r = cli_subvol_at(m.fs, arg, &id);
			if (r == -EINVAL) {
				cli_report(&m, arg, EINVAL, "not a subvolume");
				return cli_abort(&m);
			}
		} else {
			r = 0;
		}
		if (!r)
			r = ref_subvol_set_default(m.fs, id);
	}
	if (r)
		return cli_op_fail(&m, arg, r);
	if (!strcmp(sub, "create"))
		printf("Create subvolume '%s'\n", arg);
	return cli_umount(&m);
}

static int cmd_subvolume(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("needs a COMMAND%s", "");
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return cli_help(&cli_cmd_subvolume);
	bool readonly = false;
	int rc = sub_opts(argc - 1, argv + 1, !strcmp(sub, "snapshot"), &readonly);
	if (rc)
		return rc < 0 ? 0 : rc;
	optind += 1; /* options were parsed from argv + 1 */
	if (!strcmp(sub, "list") || !strcmp(sub, "get-default"))
		return read_cmd(sub, argc, argv, 0);
	if (!strcmp(sub, "show"))
		return read_cmd(sub, argc, argv, 1);
	if (!strcmp(sub, "create") || !strcmp(sub, "set-default") || !strcmp(sub, "delete"))
		return write_cmd(sub, argc, argv, 1, false);
	if (!strcmp(sub, "sync"))
		return write_cmd(sub, argc, argv, 0, false);
	if (!strcmp(sub, "snapshot"))
		return write_cmd(sub, argc, argv, 2, readonly);
	return usage_error("unknown command '%s'", sub);
}

const struct cli_cmd cli_cmd_subvolume = {
	.name = "subvolume",
	.summary = "create, snapshot, delete, list and show subvolumes; the default one",
	.usage = subvolume_usage,
	.run = cmd_subvolume,
};
