/*
 * vfs.c - mounting for writing, the operation frame (space reserved up front,
 * the clock, commits when dirty metadata outgrows its bound) and path
 * walking with Linux's rules: symlinks followed in the middle of a path,
 * ENOTDIR, ENAMETOOLONG, ELOOP.
 */
#include "ref/compress.h"
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>


int ref_mount(sim_volume *vol, const struct ref_mount_opts *o, ref_fs **out, char *err,
	      size_t errlen)
{
	struct ref_mount_opts def = { .open = { .super_mirror = -1 } };
	if (!o)
		o = &def;
	uint64_t clock_ns = (o->clock_start ? o->clock_start * UINT64_C(1000000000)
					    : REF_DEFAULT_CLOCK_NS) +
			    o->clock_start_nsec % 1000000000u;
	if (o->compress > REF_COMPRESS_ZSTD) {
		snprintf(err, errlen, "compress: unknown algorithm %u", o->compress);
		return -EINVAL;
	}
	struct ref_open_opts oo = o->open;
	oo.writable = true;
	if (!oo.clock_ns)
		oo.clock_ns = clock_ns; /* a log replayed at open stamps the mount's time */
	ref_fs *fs;
	int r = ref_open(vol, &oo, &fs, err, errlen);
	if (r)
		return r;
	if ((r = rw_init(fs))) {
		snprintf(err, errlen, "%s", fs->err);
		ref_close(fs);
		return r;
	}
	/* The kernel reads the top level's root block at mount (open_ctree):
	 * one it refuses (damaged, or judged by a writable mount's rules)
	 * fails the mount, with nothing written. */
	struct ref_root top;
	struct ref_block *tb;
	if ((r = ref_find_root(fs, BTRFS_FS_TREE_OBJECTID, &top)) ||
	    (r = ref_read_block(fs, top.bytenr, top.gen, top.level, 0, &tb))) {
		snprintf(err, errlen, "the top-level subvolume: %s", fs->err);
		ref_close(fs);
		return r;
	}
	ref_block_put(fs, tb);
	fs->rw->time_ns = clock_ns;
	if (o->dirty_limit)
		fs->rw->dirty_limit = o->dirty_limit;
	fs->rw->treelog = !o->notreelog;
	fs->rw->realtime = o->realtime;
	fs->rw->compress = o->compress;
	fs->rw->compress_level = o->compress_level;
	fs->rw->compress_force = o->compress && o->compress_force;
	/* No free-space tree (v1 space cache): converted first, in a commit
	 * of its own, as the kernel's space_cache=v2 mount does. */
	if (!(LE64(fs->sb.compat_ro_flags) & BTRFS_FEATURE_COMPAT_RO_FREE_SPACE_TREE) &&
	    (r = fst_convert(fs))) {
		snprintf(err, errlen, "converting to the free-space tree: %s", fs->err);
		ref_close(fs);
		return r;
	}
	*out = fs;
	return 0;
}

bool ref_failed(const ref_fs *fs)
{
	return fs->rw && fs->rw->failed;
}

int ref_sync(ref_fs *fs)
{
	return rw_commit(fs);
}

int ref_umount(ref_fs *fs)
{
	/* After a failed commit or an aborted operation nothing more reaches the
	 * disks: the unmount reports that what the last commit did not hold is lost. */
	int r = !fs->rw ? 0 : fs->rw->failed ? -EIO : rw_commit(fs);
	ref_close(fs);
	return r;
}

uint64_t ref_commits(const ref_fs *fs)
{
	return fs->rw ? fs->rw->commits : 0;
}

void vfs_now(ref_fs *fs, struct btrfs_timespec *t)
{
	uint64_t ns = fs->rw->time_ns;
	t->sec = htole64(ns / 1000000000);
	t->nsec = htole32((uint32_t)(ns % 1000000000));
}

int vfs_reserve(ref_fs *fs, unsigned items, bool deleting)
{
	/* Each item may COW a path in its tree and the extent, free-space and
	 * root trees at commit: a generous bound, as the kernel's reservations. */
	uint64_t per_item = (uint64_t)fs->nodesize * 2 * 4;
	return alloc_reserve_meta(fs, items * per_item, deleting);
}

int vfs_begin(ref_fs *fs, unsigned items, bool deleting)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	/* Files unlinked while open when the power went go before the first
	 * change, as the kernel's orphan cleanup of a root before its first
	 * use (orphan.c calls back here: the flag is set first); before them
	 * an interrupted balance's relocation trees (reloc_recover.c). */
	if (!fs->rw->orphans_done) {
		fs->rw->orphans_done = true;
		if ((r = reloc_recover(fs)) || (r = orphan_cleanup(fs)))
			return r;
	}
	fs->rw->time_ns += 1000;
	if (fs->rw->realtime) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
		if (now.tv_sec >= 0 && ns > fs->rw->time_ns) /* never back: the clock may be set back */
			fs->rw->time_ns = ns;
	}
	r = vfs_reserve(fs, items, deleting);
	fs->rw->op_mark = fs->rw->mods;
	return r;
}

int vfs_end(ref_fs *fs, int r)
{
	if (r < 0 && fs->rw && fs->rw->mods != fs->rw->op_mark) {
		/* Changed half-way: like the kernel's transaction abort, nothing
		 * more is written and the last commit stays the file system. */
		fs->rw->failed = true;
		char why[sizeof(fs->err)];
		snprintf(why, sizeof(why), "%s", fs->err);
		return ref_fail(fs, -r, "%s; the operation failed half-way, the file system is read-only now",
				why);
	}
	if (fs->rw && !fs->rw->failed) { /* a failed call changed nothing: commit as ever */
		int c = rw_maybe_commit(fs);
		if (c && r >= 0)
			return c;
	}
	return r;
}

/* ---- Walking paths ---- */

int vfs_lookup(ref_fs *fs, const struct ref_ino *dir, const char *name, size_t len,
	       struct ref_ino *out, uint8_t *type)
{
	int r = ref_lookup(fs, dir, name, len, out, type);
	return r;
}

int vfs_dotdot(ref_fs *fs, const struct ref_ino *dir, struct ref_ino *out)
{
	struct ref_root root;
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	if (dir->ino == BTRFS_FIRST_FREE_OBJECTID) { /* a subvolume root */
		if (dir->subvol == BTRFS_FS_TREE_OBJECTID) {
			*out = *dir;
			return 0;
		}
		int r = ref_find_root(fs, BTRFS_ROOT_TREE_OBJECTID, &root);
		if (!r)
			r = ref_find_first(fs, &root, dir->subvol, BTRFS_ROOT_BACKREF_KEY, &p, &k, &d,
					   &size);
		if (r)
			return r == -ENOENT ? ref_fail(fs, EUCLEAN, "subvolume %llu has no back reference",
						       (unsigned long long)dir->subvol)
					    : r;
		*out = (struct ref_ino){ k.offset, size >= 8 ? le64(d) : BTRFS_FIRST_FREE_OBJECTID };
		ref_path_release(fs, &p);
		return 0;
	}
	int r = ref_find_root(fs, dir->subvol, &root);
	if (!r)
		r = ref_find_first(fs, &root, dir->ino, BTRFS_INODE_REF_KEY, &p, &k, &d, &size);
	if (r)
		return r == -ENOENT ? ref_fail(fs, EUCLEAN, "directory %llu has no parent",
					       (unsigned long long)dir->ino)
				    : r;
	*out = (struct ref_ino){ dir->subvol, k.offset };
	ref_path_release(fs, &p);
	return 0;
}

static int is_dir(ref_fs *fs, const struct ref_ino *ino, bool *dir, bool *link)
{
	struct ref_stat st;
	int r = ref_stat(fs, ino, &st);
	if (r)
		return r;
	*dir = S_ISDIR(st.mode);
	if (link)
		*link = S_ISLNK(st.mode);
	return 0;
}

static int walk(ref_fs *fs, const struct ref_ino *start, const char *path, int *depth,
		struct vfs_name *out);

/* Follows the symlink at `ino` found in directory `dir`. */
static int follow_link(ref_fs *fs, const struct ref_ino *dir, const struct ref_ino *ino,
		       int *depth, struct ref_ino *out)
{
	if (++*depth > VFS_MAX_SYMLINKS)
		return ref_fail(fs, ELOOP, "too many levels of symbolic links");
	char target[4096];
	ssize_t n = ref_readlink(fs, ino, target, sizeof(target));
	if (n < 0)
		return (int)n;
	if (n == 0)
		return ref_fail(fs, ENOENT, "empty symlink");
	struct vfs_name last;
	int r = walk(fs, dir, target, depth, &last);
	if (r)
		return r;
	switch (last.kind) {
	case LAST_ROOT:
	case LAST_DOT:
		*out = last.dir;
		return 0;
	case LAST_DOTDOT:
		return vfs_dotdot(fs, &last.dir, out);
	default:
		break;
	}
	uint8_t type;
	if ((r = vfs_lookup(fs, &last.dir, last.name, last.len, out, &type)))
		return r == -ENOENT ? ref_fail(fs, ENOENT, "symlink target not found") : r;
	if (type == BTRFS_FT_SYMLINK) {
		struct ref_ino next = *out;
		if ((r = follow_link(fs, &last.dir, &next, depth, out)))
			return r;
	}
	/* A target ending in '/' names a directory, as a path does. */
	if (last.trailing_slash) {
		bool isdir;
		if ((r = is_dir(fs, out, &isdir, NULL)))
			return r;
		if (!isdir)
			return ref_fail(fs, ENOTDIR, "symlink target %s: not a directory", target);
	}
	return 0;
}

/* Walks every component but the last from `start` (absolute paths from the
 * top-level root). */
static int walk(ref_fs *fs, const struct ref_ino *start, const char *path, int *depth,
		struct vfs_name *out)
{
	struct ref_ino cur = *start;
	int r;
	if (path[0] == '/' && (r = ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &cur)))
		return r;
	const char *p = path;
	memset(out, 0, sizeof(*out));
	for (;;) {
		while (*p == '/')
			p++;
		const char *name = p;
		while (*p && *p != '/')
			p++;
		size_t len = (size_t)(p - name);
		const char *rest = p;
		while (*rest == '/')
			rest++;
		bool last = *rest == '\0';
		if (len > BTRFS_NAME_LEN)
			return ref_fail(fs, ENAMETOOLONG, "a name is longer than 255 bytes");
		if (last) {
			out->dir = cur;
			out->name = name;
			out->len = len;
			out->trailing_slash = *p == '/';
			out->kind = len == 0				 ? LAST_ROOT
				    : len == 1 && name[0] == '.'	 ? LAST_DOT
				    : len == 2 && !memcmp(name, "..", 2) ? LAST_DOTDOT
									 : LAST_NORM;
			return 0;
		}
		if (len == 1 && name[0] == '.')
			continue;
		struct ref_ino next;
		if (len == 2 && !memcmp(name, "..", 2)) {
			if ((r = vfs_dotdot(fs, &cur, &next)))
				return r;
		} else {
			uint8_t type;
			if ((r = vfs_lookup(fs, &cur, name, len, &next, &type)))
				return r == -ENOENT ? ref_fail(fs, ENOENT, "%.*s: no such file or directory",
							       (int)len, name)
						    : r;
			if (type == BTRFS_FT_SYMLINK) {
				struct ref_ino link = next;
				if ((r = follow_link(fs, &cur, &link, depth, &next)))
					return r;
			}
		}
		bool dir;
		if ((r = is_dir(fs, &next, &dir, NULL)))
			return r;
		if (!dir)
			return ref_fail(fs, ENOTDIR, "%.*s: not a directory", (int)len, name);
		cur = next;
	}
}

int vfs_parent_at(ref_fs *fs, const struct ref_ino *base, const char *path, struct vfs_name *out)
{
	int depth = 0;
	struct ref_ino root;
	if (path && path[0] != '/' && base)
		return walk(fs, base, path, &depth, out);
	if (!path || path[0] != '/')
		return ref_fail(fs, path && path[0] ? EINVAL : ENOENT,
				"paths are absolute in the file system");
	int r = ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &root);
	if (r)
		return r;
	return walk(fs, &root, path, &depth, out);
}

int vfs_parent(ref_fs *fs, const char *path, struct vfs_name *out)
{
	return vfs_parent_at(fs, fs->at_set ? &fs->at : NULL, path, out);
}

void ref_chdir(ref_fs *fs, const struct ref_ino *at)
{
	fs->at_set = at != NULL;
	if (at)
		fs->at = *at;
}

int vfs_resolve(ref_fs *fs, const char *path, bool follow, struct ref_ino *out)
{
	struct vfs_name n;
	int r = vfs_parent(fs, path, &n);
	if (r)
		return r;
	switch (n.kind) {
	case LAST_ROOT:
	case LAST_DOT:
		*out = n.dir;
		return 0;
	case LAST_DOTDOT:
		return vfs_dotdot(fs, &n.dir, out);
	case LAST_NORM:
		break;
	}
	uint8_t type;
	if ((r = vfs_lookup(fs, &n.dir, n.name, n.len, out, &type)))
		return r == -ENOENT ? ref_fail(fs, ENOENT, "%s: no such file or directory", path) : r;
	if (type == BTRFS_FT_SYMLINK && (follow || n.trailing_slash)) {
		int depth = 0;
		struct ref_ino link = *out;
		if ((r = follow_link(fs, &n.dir, &link, &depth, out)))
			return r;
	}
	if (n.trailing_slash) {
		bool dir;
		if ((r = is_dir(fs, out, &dir, NULL)))
			return r;
		if (!dir)
			return ref_fail(fs, ENOTDIR, "%s: not a directory", path);
	}
	return 0;
}

int ref_lookup_path(ref_fs *fs, const char *path, bool follow, struct ref_ino *out)
{
	return vfs_resolve(fs, path, follow, out);
}

int ref_stat_path(ref_fs *fs, const char *path, bool follow, struct ref_stat *st)
{
	struct ref_ino ino;
	int r = vfs_resolve(fs, path, follow, &ino);
	if (r || ino.ino != BTRFS_EMPTY_SUBVOL_DIR_OBJECTID)
		return r ? r : ref_stat(fs, &ino, st);
	/* A snapshot's stand-in shows the owner of the directory it was found
	 * in: the path's last directory, unless a symlink led elsewhere. */
	struct vfs_name n;
	struct ref_ino last;
	if (vfs_parent(fs, path, &n) || n.kind != LAST_NORM ||
	    vfs_lookup(fs, &n.dir, n.name, n.len, &last, NULL) || last.ino != ino.ino)
		return ref_stat(fs, &ino, st);
	return ref_stat_in(fs, &n.dir, &ino, st);
}
