/*
 * fmount.c - the FUSE mount's life: its options, the mount point checked,
 * the subvolume it shows, the session mounted (fsname btrsim, subtype
 * btrsim, default_permissions: the kernel checks modes and owners, as for
 * any local file system), served one request at a time, and unmounted.
 */
#include "traces/fmount_int.h"
#include "ref/compress.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool opt_is(const char *opt, size_t len, const char *name)
{
	return strlen(name) == len && !memcmp(opt, name, len);
}

static int one_opt(struct fmount_opts *o, const char *opt, size_t len, char *err, size_t errlen)
{
	const char *eq = memchr(opt, '=', len);
	size_t klen = eq ? (size_t)(eq - opt) : len;
	char val[256] = "";
	if (eq) {
		size_t vlen = len - klen - 1;
		if (vlen >= sizeof(val)) {
			snprintf(err, errlen, "mount option %.*s: value too long", (int)klen, opt);
			return -EINVAL;
		}
		memcpy(val, eq + 1, vlen);
		val[vlen] = '\0';
	}
	bool flag = !eq;
	if (flag && opt_is(opt, len, "ro"))
		o->ro = true;
	else if (flag && opt_is(opt, len, "rw"))
		o->ro = false;
	else if (flag && opt_is(opt, len, "degraded"))
		o->degraded = true;
	else if (flag && (opt_is(opt, len, "nologreplay") || opt_is(opt, len, "rescue=nologreplay")))
		o->nologreplay = true;
	else if (flag && opt_is(opt, len, "notreelog"))
		o->notreelog = true;
	else if (flag && opt_is(opt, len, "treelog"))
		o->notreelog = false;
	else if (flag && (opt_is(opt, len, "usebackuproot") ||
			  opt_is(opt, len, "rescue=usebackuproot")))
		o->usebackuproot = true;
	else if (flag && opt_is(opt, len, "allow_other"))
		o->allow_other = true;
	else if (opt_is(opt, klen, "compress") || opt_is(opt, klen, "compress-force")) {
		char e2[160];
		if (ref_compress_parse(eq ? val : "zlib", &o->compress, &o->compress_level, e2,
				       sizeof(e2))) {
			snprintf(err, errlen, "mount option %.*s: %s", (int)len, opt, e2);
			return -EINVAL;
		}
		o->compress_force = o->compress && opt_is(opt, klen, "compress-force");
	} else if (eq && opt_is(opt, klen, "subvol")) {
		free(o->subvol_buf);
		if (!(o->subvol_buf = strdup(val))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		o->subvol = o->subvol_buf;
	} else if (eq && opt_is(opt, klen, "subvolid")) {
		char *end;
		errno = 0;
		unsigned long long id = strtoull(val, &end, 0);
		if (!val[0] || *end || errno || id == 0) {
			snprintf(err, errlen, "mount option subvolid=%s: not a subvolume id", val);
			return -EINVAL;
		}
		o->subvolid = id;
	} else {
		snprintf(err, errlen, "unknown mount option '%.*s' (ro, rw, degraded, nologreplay, "
			 "notreelog, usebackuproot, compress[=ALG[:LEVEL]], compress-force[=...], "
			 "subvol=PATH, subvolid=ID, allow_other)", (int)len, opt);
		return -EINVAL;
	}
	return 0;
}

int fmount_parse_opts(struct fmount_opts *o, const char *arg, char *err, size_t errlen)
{
	for (const char *p = arg;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		int r = len ? one_opt(o, p, len, err, errlen) : 0;
		if (r)
			return r;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (o->nologreplay && !o->ro) { /* as the kernel: nologreplay must be used with ro */
		snprintf(err, errlen, "nologreplay must be used with ro");
		return -EINVAL;
	}
	return 0;
}

void fmount_opts_free(struct fmount_opts *o)
{
	free(o->subvol_buf);
	o->subvol_buf = NULL;
	o->subvol = NULL;
}

void fmount_mount_opts(const struct fmount_opts *o, struct ref_mount_opts *mo)
{
	mo->open.degraded = o->degraded;
	mo->open.nologreplay = o->nologreplay;
	mo->open.usebackuproot = o->usebackuproot;
	mo->notreelog = o->notreelog;
	mo->compress = o->compress;
	mo->compress_level = o->compress_level;
	mo->compress_force = o->compress_force;
	mo->realtime = true;
}

/* The root directory of the subvolume the options name, or the default one. */
static int root_of(ref_fs *fs, const struct fmount_opts *o, struct ref_ino *root, char *err,
		   size_t errlen)
{
	uint64_t id = o->subvolid;
	int r = 0;
	if (o->subvol) {
		char path[PATH_MAX + 2];
		snprintf(path, sizeof(path), "%s%s", o->subvol[0] == '/' ? "" : "/", o->subvol);
		r = ref_lookup_path(fs, path, true, root);
		if (!r && root->ino != BTRFS_FIRST_FREE_OBJECTID) {
			snprintf(err, errlen, "subvol=%s: not a subvolume", o->subvol);
			return -EINVAL;
		}
		if (!r && id && root->subvol != id) {
			snprintf(err, errlen, "subvol=%s is subvolume %llu, not subvolid=%llu", o->subvol,
				 (unsigned long long)root->subvol, (unsigned long long)id);
			return -EINVAL;
		}
	} else {
		if (!id)
			r = ref_subvol_default(fs, &id);
		if (!r)
			r = ref_subvol_root(fs, id, root);
	}
	if (r)
		snprintf(err, errlen, "%s: %s", o->subvol ? o->subvol : "the subvolume", ref_error(fs));
	return r;
}

/* A directory, and not the root of a mount already. */
static int check_mountpoint(const char *mnt, char *err, size_t errlen)
{
	struct stat st, up;
	char parent[PATH_MAX + 4];
	if (stat(mnt, &st)) {
		int e = errno;
		snprintf(err, errlen, "mount point %s: %s", mnt, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "mount point %s: not a directory", mnt);
		return -ENOTDIR;
	}
	snprintf(parent, sizeof(parent), "%s/..", mnt);
	if (stat(parent, &up) == 0 && (up.st_dev != st.st_dev || up.st_ino == st.st_ino)) {
		snprintf(err, errlen, "mount point %s: in use (a file system is mounted there)", mnt);
		return -EBUSY;
	}
	return 0;
}

int fmount_new(ref_fs *fs, const struct fmount_opts *o, const char *mountpoint, fmount **out,
	       char *err, size_t errlen)
{
	int r = check_mountpoint(mountpoint, err, errlen);
	if (r)
		return r;
	fmount *fm = calloc(1, sizeof(*fm));
	if (!fm) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fm->fs = fs;
	fm->opts = *o;
	fm->opts.subvol_buf = NULL; /* (the caller's) */
	if ((r = root_of(fs, o, &fm->root.ino, err, errlen))) {
		free(fm);
		return r;
	}
	if (!realpath(mountpoint, fm->mnt))
		snprintf(fm->mnt, sizeof(fm->mnt), "%s", mountpoint);
	char mopts[256];
	snprintf(mopts, sizeof(mopts), "fsname=btrsim,subtype=btrsim,default_permissions%s%s",
		 o->allow_other ? ",allow_other" : "", o->ro ? ",ro" : "");
	char *argv[] = { "btrsim", "-o", mopts, o->debug ? "-d" : NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(o->debug ? 4 : 3, argv);
	fm->se = fuse_session_new(&args, &fm_ops, sizeof(fm_ops), fm);
	fuse_opt_free_args(&args);
	if (!fm->se) {
		snprintf(err, errlen, "cannot start a FUSE session (is /dev/fuse there?)");
		free(fm);
		return -ENODEV;
	}
	if (fuse_session_mount(fm->se, fm->mnt)) {
		snprintf(err, errlen, "cannot mount on %s (FUSE said why above)", fm->mnt);
		fuse_session_destroy(fm->se);
		free(fm);
		return -EPERM;
	}
	fm->mounted = true;
	*out = fm;
	return 0;
}

int fmount_signals(fmount *fm)
{
	if (fuse_set_signal_handlers(fm->se))
		return -EINVAL;
	fm->signals = true;
	return 0;
}

int fmount_loop(fmount *fm)
{
	int r = fuse_session_loop(fm->se);
	return r < 0 ? r : 0;
}

void fmount_free(fmount *fm)
{
	if (!fm)
		return;
	if (fm->signals)
		fuse_remove_signal_handlers(fm->se);
	if (fm->mounted)
		fuse_session_unmount(fm->se);
	fuse_session_destroy(fm->se);
	fm_nodes_free(fm);
	free(fm);
}

uint64_t fmount_failures(const fmount *fm)
{
	return fm->failures;
}
