/*
 * kernel_script.c - a violation found on the kernel as a stand-alone shell
 * script for a kernel developer: a loop device over a file, mkfs.btrfs with
 * the run's options, the mount, each operation as the command fstests would
 * use (xfs_io for writes, syncs, fallocate and reflinks; coreutils, setfattr
 * and btrfs-progs for the rest), each with the result the kernel gave, then
 * where the power failed, described in the terms of dm-log-writes (the
 * flushes since the mount) and of the operations.
 *
 * What the script cannot say exactly, it says so: a write's bytes are one
 * repeated byte (xfs_io pwrite -S) where btrsim writes seeded data, and
 * O_EXCL creation is a plain create.
 */
#include "traces/kernel.h"
#include "traces/explore.h"
#include "traces/workload.h"
#include "traces/minimize.h"
#include "ref/ref.h"

#include <inttypes.h>
#include <linux/btrfs_tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A path under $MNT, single-quoted for sh ('"$MNT"'/a'\''b'). */
static void put_path(FILE *f, const char *path)
{
	fputs("\"$MNT\"'", f);
	for (const char *p = path; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

/* Any string, single-quoted. */
static void put_word(FILE *f, const char *s)
{
	fputc('\'', f);
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

/* renameat2 with flags: no shell command has it; python3 does, by ctypes. */
static void put_rename2(FILE *f, const struct wl_op *op)
{
	fprintf(f, "python3 -c 'import ctypes,os,sys; l=ctypes.CDLL(None, use_errno=True); "
		   "r=l.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), %d); "
		   "sys.exit(0 if r == 0 else os.strerror(ctypes.get_errno()))' ",
		op->flags);
	put_path(f, op->path);
	fputc(' ', f);
	put_path(f, op->path2);
}

static void put_op(FILE *f, const struct wl_op *op)
{
	switch (op->kind) {
	case WL_MKDIR:
		fprintf(f, "mkdir -m %o ", op->mode);
		put_path(f, op->path);
		break;
	case WL_CREATE:
		fputs("touch ", f);
		put_path(f, op->path);
		fprintf(f, " && chmod %o ", op->mode);
		put_path(f, op->path);
		break;
	case WL_WRITE:
		fprintf(f, "xfs_io%s -c 'pwrite -q -S 0x%02x %" PRIu64 " %" PRIu64 "' ",
			op->flags & WL_WRITE_SYNC ? " -s" : op->flags & WL_WRITE_DSYNC ? " -D" : "",
			(unsigned)(op->seed & 0xff), op->off, op->len);
		put_path(f, op->path);
		break;
	case WL_PWRITE: /* the bytes themselves, through dd */
		fputs("printf '", f);
		for (size_t i = 0; i < op->vlen; i++)
			fprintf(f, "\\%03o", op->value[i]);
		fprintf(f, "' | dd status=none conv=notrunc oflag=seek_bytes%s seek=%" PRIu64 " of=",
			op->flags & WL_WRITE_SYNC ? ",sync" : op->flags & WL_WRITE_DSYNC ? ",dsync" : "",
			op->off);
		put_path(f, op->path);
		break;
	case WL_TRUNCATE:
		fprintf(f, "xfs_io -c 'truncate %" PRIu64 "' ", op->size);
		put_path(f, op->path);
		break;
	case WL_FALLOCATE:
		if (op->flags & WL_FALLOC_PUNCH_HOLE)
			fprintf(f, "xfs_io -c 'fpunch %" PRIu64 " %" PRIu64 "' ", op->off, op->len);
		else if (op->flags & WL_FALLOC_ZERO_RANGE)
			fprintf(f, "xfs_io -c 'fzero%s %" PRIu64 " %" PRIu64 "' ",
				op->flags & WL_FALLOC_KEEP_SIZE ? " -k" : "", op->off, op->len);
		else
			fprintf(f, "xfs_io -c 'falloc%s %" PRIu64 " %" PRIu64 "' ",
				op->flags & WL_FALLOC_KEEP_SIZE ? " -k" : "", op->off, op->len);
		put_path(f, op->path);
		break;
	case WL_LINK:
		fputs("ln ", f);
		put_path(f, op->path);
		fputc(' ', f);
		put_path(f, op->path2);
		break;
	case WL_SYMLINK:
		fputs("ln -s ", f);
		put_word(f, op->path2);
		fputc(' ', f);
		put_path(f, op->path);
		break;
	case WL_RENAME:
		if (op->flags) {
			put_rename2(f, op);
			break;
		}
		fputs("mv -T ", f);
		put_path(f, op->path);
		fputc(' ', f);
		put_path(f, op->path2);
		break;
	case WL_UNLINK:
		fputs("unlink ", f);
		put_path(f, op->path);
		break;
	case WL_RMDIR:
		fputs("rmdir ", f);
		put_path(f, op->path);
		break;
	case WL_SETXATTR:
		fputs("setfattr -h -n ", f);
		put_word(f, op->name);
		fputs(" -v 0x", f);
		for (size_t i = 0; i < op->vlen; i++)
			fprintf(f, "%02x", op->value[i]);
		if (!op->vlen)
			fputs("\"\"", f);
		fputc(' ', f);
		put_path(f, op->path);
		break;
	case WL_REMOVEXATTR:
		fputs("setfattr -h -x ", f);
		put_word(f, op->name);
		fputc(' ', f);
		put_path(f, op->path);
		break;
	case WL_CHMOD:
		fprintf(f, "chmod %o ", op->mode);
		put_path(f, op->path);
		break;
	case WL_CHOWN:
		fputs("chown -h ", f);
		if (op->uid != UINT32_MAX)
			fprintf(f, "%u", op->uid);
		if (op->gid != UINT32_MAX)
			fprintf(f, ":%u", op->gid);
		if (op->uid == UINT32_MAX && op->gid == UINT32_MAX)
			fputs("''", f);
		fputc(' ', f);
		put_path(f, op->path);
		break;
	case WL_UTIMES:
		if (op->atime.tv_nsec != WL_UTIME_OMIT) {
			fprintf(f, "touch -h -a -d @%lld.%09ld ", (long long)op->atime.tv_sec,
				op->atime.tv_nsec);
			put_path(f, op->path);
			if (op->mtime.tv_nsec != WL_UTIME_OMIT)
				fputs(" && ", f);
		}
		if (op->mtime.tv_nsec != WL_UTIME_OMIT) {
			fprintf(f, "touch -h -m -d @%lld.%09ld ", (long long)op->mtime.tv_sec,
				op->mtime.tv_nsec);
			put_path(f, op->path);
		}
		break;
	case WL_FSYNC:
	case WL_FDATASYNC:
		fprintf(f, "xfs_io -r -c %s ", op->kind == WL_FSYNC ? "fsync" : "fdatasync");
		put_path(f, op->path);
		break;
	case WL_SYNC: fputs("sync -f \"$MNT\"", f); break;
	case WL_SUBVOL_CREATE:
		fputs("btrfs -q subvolume create ", f);
		put_path(f, op->path);
		break;
	case WL_SNAPSHOT:
		fprintf(f, "btrfs -q subvolume snapshot%s ", op->flags & WL_SNAP_RDONLY ? " -r" : "");
		put_path(f, op->path);
		fputc(' ', f);
		put_path(f, op->path2);
		break;
	case WL_SUBVOL_DELETE:
		fputs("btrfs -q subvolume delete ", f);
		put_path(f, op->path);
		break;
	case WL_SUBVOL_SYNC: fputs("btrfs subvolume sync \"$MNT\"", f); break;
	case WL_QUOTA_ENABLE:
		fputs("btrfs quota enable \"$MNT\" && btrfs quota rescan -w \"$MNT\"", f);
		break;
	case WL_BALANCE: fputs("btrfs -q balance start --full-balance \"$MNT\"", f); break;
	case WL_DEVICE_REMOVE:
		fprintf(f, "btrfs device remove %llu \"$MNT\"", (unsigned long long)op->devid);
		break;
	case WL_DEFRAG:
		fprintf(f, "btrfs filesystem defragment%s ",
			op->flags == 1 ? " -czlib" : op->flags == 2 ? " -clzo" : op->flags == 3 ? " -czstd" : "");
		put_path(f, op->path);
		break;
	case WL_RECEIVE:
		fputs("printf '", f);
		for (size_t i = 0; i < op->vlen; i++)
			fprintf(f, "\\%03o", op->value[i]);
		fputs("' > \"$WORK/stream\" && btrfs receive -f \"$WORK/stream\" ", f);
		put_path(f, op->path);
		break;
	case WL_CLONE:
		fputs("xfs_io -c \"reflink -q $MNT/", f);
		fputs(op->path + 1, f);
		fputs("\" ", f);
		put_path(f, op->path2);
		break;
	case WL_CLONE_RANGE:
	case WL_DEDUPE:
		fprintf(f, "xfs_io -c \"%s -q $MNT/%s %" PRIu64 " %" PRIu64 " %" PRIu64 "\" ",
			op->kind == WL_DEDUPE ? "dedupe" : "reflink", op->path + 1, op->off, op->off2,
			op->len);
		put_path(f, op->path2);
		break;
	default: fputs(":", f); break;
	}
}

char *kernel_script(const struct wl_workload *w, const struct explore_opts *o,
		    const struct explore_result *res)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	fprintf(f, "#!/bin/sh\n"
		   "# A crash-consistency violation btrsim found on this kernel's btrfs\n"
		   "# (btrsim explore --target kernel, seed %" PRIu64 ").  Run as root; needs\n"
		   "# btrfs-progs, xfs_io (xfsprogs) and setfattr (attr).  It runs the\n"
		   "# workload on a loop device and stops where the power failed: the\n"
		   "# crash itself is described at that point, in the terms of dm-log-writes.\n"
		   "# Writes write one repeated byte (pwrite -S) where btrsim wrote seeded\n"
		   "# data.  A command whose result differs from what btrsim saw says so\n"
		   "# (FAILED or SUCCEEDED).\n",
		 o->seed);
	if (o->disk_mode)
		fprintf(f, "# The disks misbehaved (--disk-mode %s): on honest disks this kernel\n"
			   "# may well keep its promises; the script shows what a disk that\n"
			   "# does so costs.\n",
			kdisk_mode_name((enum kdisk_mode)o->disk_mode));
	fputs("set -u\n"
	      "WORK=$(mktemp -d)\n"
	      "MNT=$WORK/mnt\n"
	      "mkdir \"$MNT\"\n", f);
	fputs("DEVS=\"\"\n"
	      "cleanup() {\n"
	      "\tumount \"$MNT\" 2>/dev/null\n"
	      "\tfor d in $DEVS; do losetup -d \"$d\"; done\n"
	      "\trm -rf \"$WORK\"\n"
	      "}\n"
	      "trap cleanup EXIT\n", f);
	for (unsigned d = 0; d < o->ndisks; d++)
		fprintf(f, "truncate -s %" PRIu64 " \"$WORK/disk%u\"\n"
			   "DEVS=\"$DEVS $(losetup -f --show -b 4096 \"$WORK/disk%u\")\"\n",
			o->disk_size, d, d);
	char dp[16], mp[16];
	fprintf(f, "mkfs.btrfs -q -f -K -n %u -d %s -m %s $DEVS >/dev/null\n", (unsigned)o->nodesize,
		ref_profile_lower(o->data_profile, dp), ref_profile_lower(o->meta_profile, mp));
	fputs("FIRST=${DEVS# }; FIRST=${FIRST%% *}\n", f);
	char opts[1100];
	wl_mount_format(&w->mount, opts, sizeof(opts));
	const char *user = o->mount_options ? o->mount_options : "";
	bool foc = !strstr(user, "flushoncommit");
	fprintf(f, "# every device named: no udev needed\n"
		   "mount -o \"$(echo $DEVS | sed 's/^/device=/; s/ /,device=/g')%s%s%s%s%s%s\" "
		   "\"$FIRST\" \"$MNT\"\n",
		opts[0] ? "," : "", opts, o->treelog ? "" : ",notreelog",
		foc ? ",flushoncommit" : "", *user ? "," : "", user);
	size_t stop = res->violation_ops_done < w->n ? res->violation_ops_done + 1 : w->n;
	for (size_t j = 0; j < w->n; j++) {
		const struct wl_op *op = &w->ops[j];
		if (j == res->violation_ops_done)
			fprintf(f, "\n# ---- the power fails %s ----\n\n",
				j + 1 == stop && res->violation_ops_done < w->n
					? "while the next command runs (see below)"
					: "here");
		int e = res->results ? res->results[j] : 0;
		const char *name = e ? wl_errno_name(e) : NULL;
		fprintf(f, "# line %zu:", op->line);
		char line[512];
		if (wl_format(op, line, sizeof(line)) >= 0)
			fprintf(f, " %s", line);
		fputc('\n', f);
		if (op->kind == WL_MARK || op->kind == WL_CRASH)
			continue;
		if (j >= stop)
			fputs("# (after the crash point) ", f);
		put_op(f, op);
		if (e)
			fprintf(f, " 2>/dev/null && echo \"SUCCEEDED, where btrsim saw %s\"",
				name ? name : "an error");
		else
			fputs(" || echo \"FAILED, where btrsim saw success\"", f);
		fputc('\n', f);
	}
	if (res->violation_ops_done >= w->n)
		fputs("\n# ---- the power fails in the unmount below ----\n", f);
	if (res->violation_point >= res->ios)
		fprintf(f, "\n# The crash: power lost after the last request (btrsim's log has %zu; "
			   "%zu flushes since mkfs),\n", res->ios, res->violation_flushes);
	else
		fprintf(f, "\n# The crash: power lost just before flush %zu since mkfs (crash point "
			   "at IO %zu of btrsim's log),\n", res->violation_flushes + 1,
			res->violation_point);
	fprintf(f, "# after %zu of the %zu operations had returned%s.  Of the writes not yet\n"
		   "# flushed then, these persisted (per disk: their positions in submission\n"
		   "# order since the last flush, +N: only the first N sectors): %s.\n"
		   "# With dm-log-writes under the mount, replay-log to that flush's entry\n"
		   "# and keep those writes; or take btrsim's image of the state:\n"
		   "#   btrsim explore ... --db DB, then btrsim replay --db DB RUN --crash-state K "
		   "--out DIR\n"
		   "# What the crashed file system showed:\n# ",
		res->violation_ops_done, w->n,
		res->violation_ops_done == w->n ? " (in the final unmount)" : "",
		res->violation_picks);
	minimize_comment(f, res->violation);
	fputs("umount \"$MNT\"\n", f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}
