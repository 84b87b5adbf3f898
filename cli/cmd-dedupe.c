/*
 * cmd-dedupe.c - `btrsim dedupe`: an offline deduplicator in the manner of
 * duperemove's block dedupe, on ref_dedupe_range (FIDEDUPERANGE, ref/vfs.h).
 * The blocks of the files under the PATHs are hashed (dedupe_scan.c, or
 * taken from the hash file, dedupe_hashfile.c); blocks of equal hash and
 * length form a group with one source (the block whose extent most of the
 * group already shares, else the first met); every other block of the group
 * is a destination, and destinations that follow one another in a file with
 * sources that follow one another in another (or the same) file make one
 * range.  Sources are never
 * destinations, so every copy ends up on the source's extent, whatever
 * order the calls come in.  A hash match is only a candidate: the call
 * compares the bytes and shares only equal ones.
 */
#include "cli/dedupe.h"
#include "cli/extents.h"
#include "cli/fsops.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTOR 4096u
#define MAX_BS (UINT32_C(1) << 20) /* duperemove's largest block size */
#define DEFAULT_BS (UINT32_C(128) << 10)
#define MAX_DESTS 127		   /* the most one FIDEDUPERANGE takes */
#define MAX_RANGE (UINT64_C(1) << 30) /* the kernel cuts a dedupe there */
#define NO_LEADER SIZE_MAX

static const char usage_text[] =
	"usage: btrsim dedupe [options] IMG... PATH...\n"
	"\n"
	"Find data that the regular files under the PATHs hold more than once and\n"
	"share it (FIDEDUPERANGE, as duperemove -d does on a mounted btrfs), then\n"
	"commit.  Each file's blocks are hashed (the last one, when shorter, with its\n"
	"length); blocks of equal hash are candidates: one the source (one whose\n"
	"extent most of them already share, else the first met), the others\n"
	"destinations; runs of them that follow one another in two files make one\n"
	"range.  The bytes are compared before they are shared, so a hash\n"
	"collision shares nothing.  Ranges that already share their extents are left\n"
	"alone.  Files in read-only snapshots are deduped too, as the kernel allows\n"
	"(their bytes stay the same).  Symlinks are not followed; special files,\n"
	"holes, preallocated space and data inline in the metadata are not looked at.\n"
	"The operands are the images first (at least one; more while they are host\n"
	"files holding a Btrfs superblock), then the paths, from the top-level\n"
	"subvolume.\n"
	"\n"
	"  -r                 look into directories, recursively (and into the\n"
	"                     subvolumes below them)\n"
	"  -b SIZE            block size: a multiple of 4K from 4K to 1M (default 128K)\n"
	"      --hash ALG     xxhash (XXH3, the default) or sha256\n"
	"      --hashfile FILE\n"
	"                     keep the hashes in FILE (SQLite), so that the next run\n"
	"                     reads only the files that changed since (another\n"
	"                     inode generation, size, mtime or ctime); a FILE made\n"
	"                     with another block size, hash or file system is refused\n"
	"      --dry-run      find and print the duplicate ranges, change nothing\n"
	"  -q, --quiet        print nothing but errors\n"
	"  -h, --help         show this help\n"
	"\n"
	"Output: \"Scanned N files: R read, C from the hash file\", then one line per\n"
	"range, '\"SRC\" OFF -> \"DST\" OFF, LEN bytes: STATUS' (deduped, differs,\n"
	"already shared, would dedupe, failed: ERRNO), then \"Found N duplicate ranges\n"
	"in M files; deduped X bytes (Y MiB), freed Z bytes\", Z the drop of the data\n"
	"block groups' used bytes once committed.\n"
	"\n"
	"Exit status: 0, 1 when a PATH, a file, a dedupe, the hash file or the commit\n"
	"failed (one line naming the errno; the rest is still done), 2 bad usage.\n";

const struct cli_cmd cli_cmd_dedupe;

/* [soff, +len) of file src is the source of [doff, +len) of file dst. */
struct dd_range {
	uint32_t src, dst;
	uint64_t soff, doff, len;
	bool shared; /* already on the same extents */
};

struct dedupe {
	struct dd_scan s;
	struct dd_range *r;
	size_t nr, capr;
	bool dry, quiet, dead;
	uint64_t deduped, would;
	unsigned failed;
};

/* ---- Options ---- */

static int parse_bs(const char *arg, uint32_t *bs)
{
	uint64_t v;
	if (cli_parse_u64(arg, &v, 1) || v < SECTOR || v > MAX_BS || v % SECTOR)
		return cli_usage_error(&cli_cmd_dedupe,
				       "-b %s: the block size must be a multiple of 4K from 4K to 1M",
				       arg);
	*bs = (uint32_t)v;
	return 0;
}

/* 0 with optind at the first operand, -1 after the help, or the exit status of a usage error. */
static int parse_opts(int argc, char **argv, struct dedupe *d, const char **hashfile)
{
	static const struct option opts[] = {
		{ "hash", required_argument, NULL, 'H' }, { "hashfile", required_argument, NULL, 'F' },
		{ "dry-run", no_argument, NULL, 'n' },    { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },       { NULL, 0, NULL, 0 },
	};
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":rb:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': d->s.recursive = true; break;
		case 'b':
			if ((rc = parse_bs(optarg, &d->s.bs)))
				return rc;
			break;
		case 'H':
			if (!strcmp(optarg, "xxhash"))
				d->s.hash = DD_XXHASH;
			else if (!strcmp(optarg, "sha256"))
				d->s.hash = DD_SHA256;
			else
				return cli_usage_error(&cli_cmd_dedupe, "--hash %s: xxhash or sha256",
						       optarg);
			break;
		case 'F': *hashfile = optarg; break;
		case 'n': d->dry = true; break;
		case 'q': d->quiet = true; break;
		case 'h': cli_help(&cli_cmd_dedupe); return -1;
		case ':':
			return cli_usage_error(&cli_cmd_dedupe, "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			return cli_usage_error(&cli_cmd_dedupe, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_dedupe, "needs at least one image and one PATH");
	return 0;
}

/* ---- Candidates ---- */

static int block_cmp(const void *a, const void *b, void *ctx)
{
	const struct dd_block *v = ctx, *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	int c = memcmp(x->h, y->h, DD_HASH_MAX);
	if (c)
		return c;
	if (x->file != y->file) /* then the scan's order */
		return x->file < y->file ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* A member of a group and where its first byte lies on disk. */
struct member {
	uint64_t bytenr, at;
	size_t pos; /* in the group, by the scan's order */
};

static int member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The source of a group (idx[0..n), in the scan's order): the first block
 * of the place on disk that most of them already share (ties: the first
 * met), so that copies made by reflink stay as they are and only the
 * others move onto it.  m: room for n members. */
static size_t pick_leader(const struct dd_scan *s, const size_t *idx, size_t n, struct member *m)
{
	for (size_t k = 0; k < n; k++) {
		const struct dd_block *b = &s->b[idx[k]];
		m[k].bytenr = dd_placement(&s->f[b->file], b->off, &m[k].at);
		m[k].pos = k;
	}
	qsort(m, n, sizeof(*m), member_cmp);
	size_t best = 0, bestn = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && m[j].bytenr && m[j].bytenr == m[i].bytenr &&
				m[j].at == m[i].at;
		     j++)
			;
		if (j - i > bestn || (j - i == bestn && m[i].pos < best)) {
			bestn = j - i;
			best = m[i].pos;
		}
	}
	return idx[best];
}

/* Each block's source (pick_leader), NO_LEADER when the block is alone
 * (malloc'd array, or NULL). */
static size_t *leaders(const struct dd_scan *s)
{
	size_t *idx = malloc((s->nb + 1) * sizeof(*idx)), *lead = malloc((s->nb + 1) * sizeof(*lead));
	struct member *m = malloc((s->nb + 1) * sizeof(*m));
	if (!idx || !lead || !m) {
		free(idx);
		free(lead);
		free(m);
		return NULL;
	}
	for (size_t i = 0; i < s->nb; i++)
		idx[i] = i;
	qsort_r(idx, s->nb, sizeof(*idx), block_cmp, s->b);
	for (size_t g = 0, e; g < s->nb; g = e) {
		const struct dd_block *first = &s->b[idx[g]];
		for (e = g + 1; e < s->nb; e++) {
			const struct dd_block *x = &s->b[idx[e]];
			if (x->len != first->len || memcmp(x->h, first->h, DD_HASH_MAX))
				break;
		}
		size_t l = e - g > 1 ? pick_leader(s, idx + g, e - g, m) : NO_LEADER;
		for (size_t k = g; k < e; k++)
			lead[idx[k]] = l;
	}
	free(idx);
	free(m);
	return lead;
}

static struct dd_range *new_range(struct dedupe *d)
{
	if (d->nr == d->capr) {
		size_t cap = d->capr ? d->capr * 2 : 256;
		struct dd_range *v = realloc(d->r, cap * sizeof(*v));
		if (!v)
			return NULL;
		d->r = v;
		d->capr = cap;
	}
	return &d->r[d->nr++];
}

/* The destination ranges, in each file by offset: a block extends the last
 * range when both it and its source follow that range's ends. */
static int find_ranges(struct dedupe *d)
{
	const struct dd_scan *s = &d->s;
	size_t *lead = leaders(s);
	if (!lead)
		return -ENOMEM;
	uint64_t cap = MAX_RANGE / s->bs * s->bs;
	for (size_t fi = 0; fi < s->nf; fi++) {
		struct dd_range *cur = NULL;
		const struct dd_file *f = &s->f[fi];
		for (size_t i = f->first; i < f->first + f->nblocks; i++) {
			if (lead[i] == NO_LEADER || lead[i] == i) {
				cur = NULL;
				continue;
			}
			const struct dd_block *b = &s->b[i], *l = &s->b[lead[i]];
			bool sh = dd_shared(f, b->off, &s->f[l->file], l->off, b->len);
			if (cur && cur->doff + cur->len == b->off && cur->src == l->file &&
			    cur->soff + cur->len == l->off && cur->shared == sh &&
			    cur->len + b->len <= cap) {
				cur->len += b->len;
				continue;
			}
			if (!(cur = new_range(d))) {
				free(lead);
				return -ENOMEM;
			}
			*cur = (struct dd_range){ l->file, (uint32_t)fi, l->off, b->off, b->len, sh };
		}
	}
	free(lead);
	return 0;
}

/* By source range, so that the destinations of one source go in one call. */
static int range_cmp(const void *a, const void *b)
{
	const struct dd_range *x = a, *y = b;
	uint64_t kx[] = { x->src, x->soff, x->len, x->shared, x->dst, x->doff };
	uint64_t ky[] = { y->src, y->soff, y->len, y->shared, y->dst, y->doff };
	for (int i = 0; i < 6; i++)
		if (kx[i] != ky[i])
			return kx[i] < ky[i] ? -1 : 1;
	return 0;
}

static bool same_call(const struct dd_range *x, const struct dd_range *y)
{
	return x->src == y->src && x->soff == y->soff && x->len == y->len && x->shared == y->shared;
}

/* ---- Deduping ---- */

static void say(const struct dedupe *d, const struct dd_range *r, const char *status)
{
	if (d->quiet)
		return;
	printf("\"%s\" %" PRIu64 " -> \"%s\" %" PRIu64 ", %" PRIu64 " bytes: %s\n",
	       d->s.f[r->src].path, r->soff, d->s.f[r->dst].path, r->doff, r->len, status);
}

/* One FIDEDUPERANGE: the source of r[0] to the destinations r[0..n). */
static void dedupe_call(struct dedupe *d, const struct dd_range *r, size_t n)
{
	struct ref_dedupe_dest dest[MAX_DESTS];
	const struct dd_file *f = d->s.f;
	for (size_t k = 0; k < n; k++)
		dest[k] = (struct ref_dedupe_dest){ .path = f[r[k].dst].path, .offset = r[k].doff };
	ref_fs *fs = d->s.fs;
	int e = ref_dedupe_range(fs, f[r[0].src].path, r[0].soff, r[0].len, dest, n);
	char es[96], st[128];
	unsigned bad = 0;
	for (size_t k = 0; k < n; k++)
		bad += e || dest[k].status < 0;
	for (size_t k = 0; k < n; k++) {
		int status = e ? e : dest[k].status;
		if (status == 0) {
			d->deduped += dest[k].bytes_deduped;
			say(d, &r[k], "deduped");
		} else if (status == REF_DEDUPE_DIFFERS) { /* a collision, or changed since */
			say(d, &r[k], "differs");
		} else {
			d->failed++;
			snprintf(st, sizeof(st), "failed: %s", cli_errno_str(status, es, sizeof(es)));
			say(d, &r[k], st);
			/* ref's message is the last failure's: only then it is this one's */
			const char *why = bad == 1 ? ref_error(fs) : "";
			fprintf(stderr, "btrsim dedupe: %s: %s%s%s\n", e ? f[r[k].src].path : dest[k].path,
				es, *why ? ": " : "", why);
		}
	}
	if (ref_failed(fs))
		d->dead = true;
}

static void dedupe_all(struct dedupe *d)
{
	if (d->nr)
		qsort(d->r, d->nr, sizeof(*d->r), range_cmp);
	for (size_t i = 0, j; i < d->nr && !d->dead; i = j) {
		for (j = i + 1; j < d->nr && j - i < MAX_DESTS && same_call(&d->r[i], &d->r[j]); j++)
			;
		if (d->r[i].shared) {
			for (size_t k = i; k < j; k++)
				say(d, &d->r[k], "already shared");
		} else if (d->dry) {
			for (size_t k = i; k < j; k++) {
				d->would += d->r[k].len;
				say(d, &d->r[k], "would dedupe");
			}
		} else {
			dedupe_call(d, &d->r[i], j - i);
		}
	}
}

/* The files that take part in a range, as sources or destinations. */
static size_t files_in_ranges(const struct dedupe *d)
{
	bool *in = calloc(d->s.nf + 1, sizeof(*in));
	size_t n = 0;
	if (!in)
		return 0;
	for (size_t i = 0; i < d->nr; i++) {
		n += !in[d->r[i].src] + (!in[d->r[i].dst] && d->r[i].dst != d->r[i].src);
		in[d->r[i].src] = in[d->r[i].dst] = true;
	}
	free(in);
	return n;
}

/* ---- The command ---- */

/* Scans the PATHs and keeps the hashes: 0, or 1 when the scan could not go on. */
static int scan(struct dedupe *d, char **paths, int n, const char *hashfile)
{
	struct dd_scan *s = &d->s;
	char err[512];
	if (s->bs % LE32(ref_super(s->fs)->sectorsize))
		return cli_fail(&cli_cmd_dedupe, "-b %" PRIu32 ": not a multiple of the sector size (%u)",
				s->bs, LE32(ref_super(s->fs)->sectorsize));
	if (hashfile && dd_hf_open(hashfile, s->bs, s->hash, ref_super(s->fs)->fsid, &s->hf, err,
				   sizeof(err)))
		return cli_fail(&cli_cmd_dedupe, "%s", err);
	for (int i = 0; i < n && !s->fatal; i++)
		dd_scan_path(s, paths[i]);
	if (s->fatal)
		return 1;
	if (s->hf && dd_hf_save(s->hf, s, err, sizeof(err))) {
		cli_fail(&cli_cmd_dedupe, "%s", err);
		s->errors++;
	}
	if (!d->quiet)
		printf("Scanned %zu files: %" PRIu64 " read, %" PRIu64 " from the hash file\n", s->nf,
		       s->nread, s->ncached);
	return 0;
}

static void total(const struct dedupe *d, int64_t freed)
{
	if (d->quiet)
		return;
	size_t nf = files_in_ranges(d);
	if (d->dry)
		printf("Found %zu duplicate ranges in %zu files; dry run: %" PRIu64
		       " bytes (%.1f MiB) would be deduped, nothing changed\n",
		       d->nr, nf, d->would, (double)d->would / (1 << 20));
	else
		printf("Found %zu duplicate ranges in %zu files; deduped %" PRIu64
		       " bytes (%.1f MiB), freed %" PRId64 " bytes\n",
		       d->nr, nf, d->deduped, (double)d->deduped / (1 << 20), freed);
}

/* Finds and dedupes (or lists) the ranges on the opened file system:
 * 0 or 1, the file system still open. */
static int run(struct dedupe *d, char **paths, int n, const char *hashfile, int64_t *freed)
{
	uint64_t before = 0, after = 0;
	int r;
	if (!d->dry && (r = dd_data_used(d->s.fs, &before)))
		return cli_fail(&cli_cmd_dedupe, "reading the block groups: %s", ref_error(d->s.fs));
	if (scan(d, paths, n, hashfile))
		return 1;
	if (find_ranges(d))
		return cli_fail(&cli_cmd_dedupe, "out of memory");
	dedupe_all(d);
	if (d->dry || d->dead)
		return 0;
	/* what is freed is what the commit's block group items no longer count */
	if ((r = ref_sync(d->s.fs))) {
		char es[96];
		return cli_fail(&cli_cmd_dedupe, "commit: %s: %s", cli_errno_str(r, es, sizeof(es)),
				ref_error(d->s.fs));
	}
	if ((r = dd_data_used(d->s.fs, &after)))
		return cli_fail(&cli_cmd_dedupe, "reading the block groups: %s", ref_error(d->s.fs));
	*freed = (int64_t)(before - after);
	return 0;
}

static int cmd_dedupe(int argc, char **argv)
{
	struct dedupe d = { .s = { .cmd = &cli_cmd_dedupe, .bs = DEFAULT_BS, .hash = DD_XXHASH } };
	const char *hashfile = NULL;
	int rc = parse_opts(argc, argv, &d, &hashfile);
	if (rc)
		return rc < 0 ? 0 : rc;
	char **ops = argv + optind;
	int nops = argc - optind, nimg = cli_split_operands(ops, nops);
	struct cli_mount m = { .cmd = &cli_cmd_dedupe };
	if (d.dry) {
		struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
		rc = cli_open_fs(&cli_cmd_dedupe, ops, nimg, &oo, &m.vol, &m.fs);
	} else {
		rc = cli_mount(&cli_cmd_dedupe, ops, nimg, &m);
	}
	if (rc)
		return rc;
	d.s.fs = m.fs;
	int64_t freed = 0;
	rc = run(&d, ops + nimg, nops - nimg, hashfile, &freed);
	bool finished = !rc && !d.dead; /* else the numbers would not be the whole story */
	if (d.dry) {
		ref_close(m.fs);
		sim_volume_close(m.vol);
	} else if (rc || d.dead) {
		cli_abort(&m);
		rc = 1;
	} else {
		rc = cli_umount(&m);
	}
	if (finished)
		total(&d, freed);
	dd_hf_close(d.s.hf);
	dd_scan_free(&d.s);
	free(d.r);
	return rc || d.s.errors || d.failed ? 1 : 0;
}

const struct cli_cmd cli_cmd_dedupe = {
	.name = "dedupe",
	.summary = "share the data files hold twice (FIDEDUPERANGE, as duperemove)",
	.usage = usage_text,
	.run = cmd_dedupe,
};
