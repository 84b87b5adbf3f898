/*
 * explore_judge.c - one crash state: ref must mount it, `btrsim check` must
 * find it clean (quota numbers not marked inconsistent either), and the tree
 * it shows must be one of the oracle's legal states (explore.h).
 */
#include "traces/explore_internal.h"
#include "traces/manifest.h"
#include "traces/model.h"
#include "ref/vfs.h"

#include <errno.h>
#include <linux/btrfs_tree.h>
#include <stdlib.h>
#include <string.h>

/* Whether the state's quota groups are marked inconsistent.  The check
 * leaves such numbers alone (so does btrfs check), but ref marks its own so
 * only when its accounting lost track (a number would go below zero): on a
 * file system it made and counted from the start, that is a bug. */
static bool quota_stale(ref_fs *fs)
{
	bool on = false;
	uint64_t flags = 0;
	return !ref_qgroup_status(fs, &on, &flags) && on &&
	       (flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT);
}

char *explore_describe_ref(ref_fs *fs, char *why, size_t whylen)
{
	struct manifest m = { 0 };
	struct ref_ino root;
	char *text = NULL;
	size_t len = 0;
	if (ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &root)) {
		snprintf(why, whylen, "%s", ref_error(fs));
		return NULL;
	}
	if (mf_walk_ref(&m, fs, &root, why, whylen) == 0) {
		FILE *f = open_memstream(&text, &len);
		if (!f || mf_print(&m, f))
			snprintf(why, whylen, "out of memory");
		if (f)
			fclose(f);
	}
	mf_free(&m);
	return text;
}

/* ---- The subvolumes the recovered file system shows ---- */

/* model_describe_subvols's lines for what ref shows: a subvolume's root (an
 * entry leading into another tree, "subvol ro|rw" by its root item's flags,
 * " received" when it has a received uuid)
 * and a snapshot's stand-in for a nested subvolume (the kernel's inode 2). */
struct svwalk {
	ref_fs *fs;
	struct manifest m; /* only its set of directories being walked */
	char **v;
	size_t n, cap;
	char *why;
	size_t whylen;
};

static int sv_fail(struct svwalk *w, const char *path, const char *what)
{
	snprintf(w->why, w->whylen, "%s: %s", path, what);
	return -1;
}

static int sv_line(struct svwalk *w, const char *path, const char *what)
{
	char *line = NULL;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		char **v = realloc(w->v, cap * sizeof(*v));
		if (!v)
			return sv_fail(w, path, "out of memory");
		w->v = v;
		w->cap = cap;
	}
	if (asprintf(&line, "%s %s\n", path, what) < 0)
		return sv_fail(w, path, "out of memory");
	w->v[w->n++] = line;
	return 0;
}

static int sv_dir(struct svwalk *w, const struct ref_ino *dir, const char *path, int depth)
{
	struct ref_dentries ch;
	if (depth > 4096)
		return sv_fail(w, path, "directories nested too deep");
	int r = ref_dentries_read(w->fs, dir, &ch);
	if (r) {
		ref_dentries_free(&ch);
		return sv_fail(w, path, r == -ENOMEM ? "out of memory" : ref_error(w->fs));
	}
	for (size_t i = 0; i < ch.n && !r; i++) {
		const struct ref_dentry *e = &ch.e[i];
		char *sub = mf_path_join(path, e->name, e->len);
		if (!sub) {
			r = sv_fail(w, path, "out of memory");
			break;
		}
		if (e->ino.ino == BTRFS_EMPTY_SUBVOL_DIR_OBJECTID) {
			r = sv_line(w, sub, "stand-in");
		} else if (e->ino.subvol != dir->subvol) {
			struct ref_subvol_info info;
			static const uint8_t none[BTRFS_UUID_SIZE];
			if (ref_subvol_info(w->fs, e->ino.subvol, &info))
				r = sv_fail(w, sub, ref_error(w->fs));
			else if (memcmp(info.received_uuid, none, BTRFS_UUID_SIZE))
				r = sv_line(w, sub, info.flags & BTRFS_ROOT_SUBVOL_RDONLY
							    ? "subvol ro received" : "subvol rw received");
			else
				r = sv_line(w, sub, info.flags & BTRFS_ROOT_SUBVOL_RDONLY ? "subvol ro"
											 : "subvol rw");
		}
		if (!r && e->type == BTRFS_FT_DIR && e->ino.ino != BTRFS_EMPTY_SUBVOL_DIR_OBJECTID) {
			int er = mf_enter(&w->m, e->ino.subvol, e->ino.ino);
			if (er) {
				r = sv_fail(w, sub, mf_enter_error(er));
			} else {
				r = sv_dir(w, &e->ino, sub, depth + 1);
				mf_leave(&w->m, e->ino.subvol, e->ino.ino);
			}
		}
		free(sub);
	}
	ref_dentries_free(&ch);
	return r;
}

static char *describe_subvols(ref_fs *fs, char *why, size_t whylen)
{
	struct svwalk w = { .fs = fs, .why = why, .whylen = whylen };
	struct ref_ino root;
	char *text = NULL;
	if (ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &root))
		snprintf(why, whylen, "%s", ref_error(fs));
	else if (sv_dir(&w, &root, "/", 0) == 0 && !(text = model_lines_join(w.v, w.n)))
		snprintf(why, whylen, "out of memory");
	for (size_t i = 0; i < w.n; i++)
		free(w.v[i]);
	free(w.v);
	mf_free(&w.m);
	return text;
}

/* The first line where two descriptions differ, as "PATH: expected X, found Y". */
void explore_first_diff(const char *want, const char *got, char *out, size_t len)
{
	while (*want && *got) {
		const char *we = strchr(want, '\n'), *ge = strchr(got, '\n');
		size_t wl = we ? (size_t)(we - want) : strlen(want), gl = ge ? (size_t)(ge - got) : strlen(got);
		if (wl != gl || memcmp(want, got, wl)) {
			size_t pl = strcspn(want, " \n");
			snprintf(out, len, "%.*s: expected \"%.*s\", found \"%.*s\"", (int)pl, want,
				 (int)(wl > 300 ? 300 : wl), want, (int)(gl > 300 ? 300 : gl), got);
			return;
		}
		want += wl + (we != NULL);
		got += gl + (ge != NULL);
	}
	if (*want)
		snprintf(out, len, "%.*s: expected, missing", (int)strcspn(want, " \n"), want);
	else if (*got)
		snprintf(out, len, "%.*s: unexpected \"%.*s\"", (int)strcspn(got, " \n"), got,
			 (int)strcspn(got, "\n"), got);
	else
		snprintf(out, len, "no difference");
}

/* The legal states at log position i: the model after lo..hi operations. */
void explore_legal_range(const struct ex *x, size_t i, size_t *lo, size_t *hi)
{
	*lo = 0;
	*hi = 0;
	for (size_t j = 0; j < x->nspans; j++) {
		if (x->spans[j].persist && x->spans[j].end <= i)
			*lo = j + 1;
		if (x->spans[j].start < i || (x->spans[j].start == i && j < x->nspans - 1 &&
					      x->spans[j].end == i))
			*hi = j + 1;
	}
	if (*hi > x->nspans - 1)
		*hi = x->nspans - 1; /* the unmount changes nothing the model sees */
	if (*lo > *hi)
		*lo = *hi;
}

/* The ERROR lines of a check report, joined with "; " (the report itself
 * when it has none). */
static void error_lines(const char *report, char *out, size_t len)
{
	size_t o = 0;
	out[0] = 0;
	for (const char *p = report; p && *p && o + 1 < len;) {
		size_t l = strcspn(p, "\n");
		if (!strncmp(p, "ERROR: ", 7)) {
			int n = snprintf(out + o, len - o, "%s%.*s", o ? "; " : "", (int)(l - 7), p + 7);
			o += n > 0 ? (size_t)n : 0;
		}
		p += l + (p[l] == '\n');
	}
	if (!out[0])
		snprintf(out, len, "%.400s", report ? report : "could not run");
}

/* Does the check report (or a read or mount error, the kernel's words
 * included) show damage that
 * checksums caught?  A root tree that does not read (a checksum mismatch, or
 * EIO) fails the mount as in the kernel without usebackuproot, and a disk
 * whose every superblock copy the damage hit ("no valid btrfs superblock":
 * bad checksum or magic) is refused: both are detection too. */
bool explore_detected(const char *text)
{
	return text && (strstr(text, "csum") || strstr(text, "checksum") || strstr(text, "EIO") ||
			strstr(text, "Input/output error") ||
			strstr(text, "no valid btrfs superblock"));
}

/* The state with each disk lost in turn, opened degraded: the tree it
 * shows must be a legal one.  One it cannot show (a read or the mount
 * failing) is the write hole when a profile has parity (a row whose data and
 * parity the crash left disagreeing: counted, no violation); with mirrored
 * profiles only, which have no write hole, it is a violation. */
static enum explore_verdict judge_lost_disks(const struct ex *x, sim_volume *v, size_t point,
					     char *why, size_t whylen)
{
	size_t lo, hi;
	explore_legal_range(x, point, &lo, &hi);
	for (unsigned d = 0; d < sim_volume_ndisks(v); d++) {
		sim_volume *c;
		if (sim_volume_clone(v, &c)) {
			snprintf(why, whylen, "cloning the state to lose disk %u: out of memory", d);
			return EXPLORE_READ;
		}
		sim_disk_lose(c, d);
		x->res->degraded_states++;
		struct ref_open_opts oo = { .super_mirror = 0, .degraded = true };
		ref_fs *fs;
		char err[512];
		char *text = NULL;
		if (ref_open(c, &oo, &fs, err, sizeof(err)) == 0) {
			text = explore_describe_ref(fs, err, sizeof(err));
			ref_close(fs);
		}
		sim_volume_close(c);
		const uint64_t mirrored = BTRFS_BLOCK_GROUP_RAID1 | BTRFS_BLOCK_GROUP_RAID1C3 |
					  BTRFS_BLOCK_GROUP_RAID1C4 | BTRFS_BLOCK_GROUP_RAID10;
		if (!text && (x->o->data_profile & mirrored) && (x->o->meta_profile & mirrored)) {
			snprintf(why, whylen, "with disk %u lost, a mirrored volume does not read: %s", d, err);
			return EXPLORE_READ;
		}
		if (!text) {
			x->res->write_hole++;
			continue;
		}
		bool ok = false;
		size_t from = x->o->treelog ? explore_logtree_floor(x, point, lo, hi) : lo;
		for (size_t j = from; j <= hi && !ok; j++)
			ok = !strcmp(text, x->snaps[j]);
		if (!ok && x->o->treelog)
			ok = explore_logtree_legal(x, point, lo, hi, text) > 0;
		if (!ok)
			ok = explore_receive_legal(x, lo, hi, text, NULL) > 0;
		if (!ok) {
			char diff[1200];
			explore_first_diff(x->snaps[hi], text, diff, sizeof(diff));
			snprintf(why, whylen,
				 "with disk %u lost, no legal state (after operations %zu..%zu): %s", d, lo,
				 hi, diff);
			free(text);
			return EXPLORE_ORACLE;
		}
		free(text);
	}
	return EXPLORE_OK;
}

long explore_ref_check(ref_fs *fs, char **report)
{
	size_t rlen = 0;
	*report = NULL;
	FILE *out = open_memstream(report, &rlen);
	struct ref_check_opts co = { .out = out };
	long errors = out ? ref_check(fs, &co) : -ENOMEM;
	if (out)
		fclose(out);
	return errors;
}

enum explore_verdict explore_legal(const struct ex *x, size_t point, const char *text,
				   char *(*subvols)(void *ctx, char *err, size_t errlen), void *ctx,
				   bool damaged, char *why, size_t whylen)
{
	enum explore_verdict verdict = EXPLORE_OK;
	size_t lo, hi;
	explore_legal_range(x, point, &lo, &hi);
	bool ok = false;
	/* With subvolume operations the subvolumes must be those of the same
	 * state: which directories are subvolumes (read-only or not) and
	 * which are a snapshot's stand-ins (read only when needed). */
	char *subv = NULL, sverr[512] = "";
	size_t tj = SIZE_MAX; /* a state whose tree matched */
	size_t from = x->o->treelog ? explore_logtree_floor(x, point, lo, hi) : lo;
	for (size_t j = from; j <= hi && !ok; j++) {
		if (strcmp(text, x->snaps[j]))
			continue;
		if (tj == SIZE_MAX)
			tj = j;
		if (x->subv && !subv && !sverr[0] && !(subv = subvols(ctx, sverr, sizeof(sverr))) &&
		    !sverr[0])
			snprintf(sverr, sizeof(sverr), "out of memory");
		ok = !x->subv || (subv && !strcmp(subv, x->subv[j]));
	}
	/* A crash inside a receive: its subvolume part-way. */
	int lg = 0;
	if (!ok && x->subv && !sverr[0]) {
		if (!subv && !(subv = subvols(ctx, sverr, sizeof(sverr))) && !sverr[0])
			snprintf(sverr, sizeof(sverr), "out of memory");
		if (subv && (lg = explore_receive_legal(x, lo, hi, text, subv)) > 0)
			ok = true;
	}
	/* With the log tree: the last commit with the fsync log replayed. */
	if (!ok && tj == SIZE_MAX && x->o->treelog &&
	    (lg = explore_logtree_legal(x, point, lo, hi, text)) > 0)
		ok = true;
	if (lg < 0) {
		snprintf(why, whylen, "judging the log's promises: out of memory");
		verdict = EXPLORE_READ;
	} else if (!ok && sverr[0]) {
		snprintf(why, whylen, "reading the recovered subvolumes: %s", sverr);
		verdict = damaged && explore_detected(sverr) ? EXPLORE_DETECTED : EXPLORE_READ;
	} else if (!ok && tj != SIZE_MAX) {
		char d[1200];
		explore_first_diff(x->subv[tj], subv, d, sizeof(d));
		snprintf(why, whylen,
			 "no legal state (after operations %zu..%zu, lines %zu..%zu): the tree is "
			 "that after operation %zu but the subvolumes differ: %s",
			 lo, hi, lo ? x->spans[lo - 1].line : 0, hi ? x->spans[hi - 1].line : 0, tj, d);
		verdict = EXPLORE_ORACLE;
	} else if (!ok) {
		char d[1200];
		explore_first_diff(x->snaps[hi], text, d, sizeof(d));
		snprintf(why, whylen, "no legal state (after operations %zu..%zu, lines %zu..%zu): %s",
			 lo, hi, lo ? x->spans[lo - 1].line : 0, hi ? x->spans[hi - 1].line : 0, d);
		verdict = EXPLORE_ORACLE;
	} else {
		why[0] = 0;
	}
	free(subv);
	return verdict;
}

/* What v's disks alone say (struct judged): ref mounts it as the kernel
 * would, btrsim check checks it, and the tree (with need_subv, the
 * subvolumes too) is read.  0, or -ENOMEM. */
static int judge_disks(sim_volume *v, bool need_subv, struct judged *j)
{
	memset(j, 0, sizeof(*j));
	char err[512];
	ref_fs *fs;
	/* No usebackuproot: as the kernel, ref must not show an older state than
	 * the superblock names, and a root tree the damage hit fails the mount.
	 * Only the primary superblock copy, as the kernel's mount reads it
	 * (btrfs_read_dev_super looks at copy 0 alone): a primary the damage
	 * hit fails the mount (detected), where the newest valid copy, an older
	 * mirror, would show an older state than was committed. */
	/* (a disk a finished device removal wiped is no device: a spare) */
	struct ref_open_opts oo = { .super_mirror = 0, .spares = true };
	if (ref_open(v, &oo, &fs, err, sizeof(err))) {
		j->kind = JUDGED_MOUNT;
		j->detected = explore_detected(err);
		return (j->why = strdup(err)) ? 0 : -ENOMEM;
	}
	char *report = NULL;
	long errors = explore_ref_check(fs, &report);
	int r = 0;
	if (errors != 0) {
		char lines[4096];
		error_lines(report, lines, sizeof(lines));
		j->kind = JUDGED_CHECK;
		j->detected = explore_detected(report);
		r = (j->why = strdup(lines)) ? 0 : -ENOMEM;
	} else if (quota_stale(fs)) {
		j->kind = JUDGED_QUOTA;
	} else if (!(j->text = explore_describe_ref(fs, err, sizeof(err)))) {
		j->kind = JUDGED_READ;
		j->detected = explore_detected(err);
		r = (j->why = strdup(err)) ? 0 : -ENOMEM;
	} else {
		j->kind = JUDGED_TREE;
		if (need_subv) {
			char sverr[512] = "";
			j->has_subv = true;
			if (!(j->subv = describe_subvols(fs, sverr, sizeof(sverr))))
				r = (j->subv_err = strdup(sverr[0] ? sverr : "out of memory")) ? 0 : -ENOMEM;
		}
	}
	free(report);
	ref_close(fs);
	return r;
}

static char *judged_subvols(void *ctx, char *err, size_t errlen)
{
	const struct judged *j = ctx;
	char *s = j->subv ? strdup(j->subv) : NULL;
	if (!s)
		snprintf(err, errlen, "%s", j->subv ? "out of memory" : j->subv_err);
	return s;
}

/* The verdict on what a state's disks said, at crash point `point`. */
static enum explore_verdict verdict_of(const struct ex *x, const struct judged *j, size_t point,
				       bool damaged, char *why, size_t whylen)
{
	switch (j->kind) {
	case JUDGED_MOUNT:
		snprintf(why, whylen, "the file system does not mount: %s", j->why);
		return damaged && j->detected ? EXPLORE_DETECTED : EXPLORE_MOUNT;
	case JUDGED_CHECK:
		snprintf(why, whylen, "%s", j->why);
		return damaged && j->detected ? EXPLORE_DETECTED : EXPLORE_CHECK;
	case JUDGED_QUOTA:
		snprintf(why, whylen, "quota groups are marked inconsistent: ref's accounting lost "
				      "track of them (a number would have gone below zero)");
		return EXPLORE_CHECK;
	case JUDGED_READ:
		snprintf(why, whylen, "reading the recovered tree: %s", j->why);
		return damaged && j->detected ? EXPLORE_DETECTED : EXPLORE_READ;
	case JUDGED_TREE:
		break;
	}
	return explore_legal(x, point, j->text, judged_subvols, (void *)j, damaged, why, whylen);
}

enum explore_verdict explore_judge(const struct ex *x, sim_volume *v, size_t point, bool damaged,
				   char *why, size_t whylen)
{
	/* Damage is excused only in a state that holds some: the same checksum
	 * error without it is ref's own fault. */
	damaged = damaged && x->sim_faults;
	bool need_subv = x->subv != NULL;
	/* The memo (explore_memo.c) answers by the disks' content.  Not with a
	 * checker or the lost disks: they judge v as ref's mount left it (its
	 * log replayed). */
	uint64_t id[2];
	bool memo = x->o->memo && !x->app && !x->o->lose_disk && sim_volume_content_id(v, id) == 0;
	if (memo) /* (what ref's mount writes need not be hashed) */
		sim_volume_track_content(v, false);
	const struct judged *kept = memo ? explore_memo_get(x->o->memo, id, need_subv) : NULL;
	if (kept) {
		x->res->cached++;
		return verdict_of(x, kept, point, damaged, why, whylen);
	}
	struct judged j;
	if (judge_disks(v, need_subv, &j)) {
		judged_free(&j);
		snprintf(why, whylen, "judging the state: out of memory");
		return EXPLORE_READ;
	}
	enum explore_verdict verdict = verdict_of(x, &j, point, damaged, why, whylen);
	if (verdict == EXPLORE_OK && x->app)
		verdict = explore_check_app(x, v, point, j.text, why, whylen);
	if (memo)
		explore_memo_put(x->o->memo, id, &j);
	judged_free(&j);
	if (verdict == EXPLORE_OK && x->o->lose_disk)
		verdict = judge_lost_disks(x, v, point, why, whylen);
	return verdict;
}
