/*
 * send_clone.c - clone commands (send_int.h): where a sent file uses a disk
 * extent that a file the receiving side already has uses too - in the
 * parent, a -c source, or a file of the sent subvolume the stream has made
 * whole - the range is sent as a clone of that file's range, as the kernel's
 * send does, and the receiving side shares the extent again.  Sources are
 * found by the extent's disk address in an index of every regular extent
 * item of the sources' files.  A clone must be what the kernel's clone
 * ioctl accepts: offsets at 4 KiB, a length of whole blocks unless it ends
 * both files, inside the source's size, between files alike in NODATASUM;
 * what is not is written.
 */
#include "ref/internal.h"
#include "ref/send/send_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLOCK 4096u
#define PATH_CAP 4096

static uint32_t hash(uint64_t bytenr, size_t n)
{
	return (uint32_t)((bytenr / BLOCK * 0x9e3779b97f4a7c15ull) >> 20) & (uint32_t)(n - 1);
}

static int grow_buckets(struct cindex *ci)
{
	size_t n = ci->nbucket ? ci->nbucket * 2 : 4096;
	uint32_t *b = malloc(n * sizeof(*b));
	if (!b)
		return -ENOMEM;
	memset(b, 0xff, n * sizeof(*b));
	for (size_t k = 0; k < ci->nuse; k++) {
		uint32_t h = hash(ci->use[k].bytenr, n);
		ci->use[k].next = b[h];
		b[h] = (uint32_t)k;
	}
	free(ci->bucket);
	ci->bucket = b;
	ci->nbucket = n;
	return 0;
}

static int add_use(struct cindex *ci, const struct cuse *u)
{
	if (ci->nuse >= UINT32_MAX - 1)
		return -ENOMEM;
	if (ci->nuse == ci->capuse) {
		size_t cap = ci->capuse ? ci->capuse * 2 : 1024;
		struct cuse *v = realloc(ci->use, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ci->use = v;
		ci->capuse = cap;
	}
	if (ci->nuse >= ci->nbucket && grow_buckets(ci))
		return -ENOMEM;
	struct cuse *e = &ci->use[ci->nuse];
	*e = *u;
	uint32_t h = hash(u->bytenr, ci->nbucket);
	e->next = ci->bucket[h];
	ci->bucket[h] = (uint32_t)ci->nuse++;
	return 0;
}

struct use_ctx {
	struct cindex *ci;
	uint64_t ino;
	uint32_t src;
};

static int add_item_use(void *ctx, uint64_t off, const uint8_t *d, uint32_t size)
{
	struct use_ctx *c = ctx;
	const struct btrfs_file_extent_item *fe = (const void *)d;
	if (size < sizeof(*fe) || fe->type != BTRFS_FILE_EXTENT_REG || !fe->disk_bytenr)
		return 0;
	struct cuse u = { LE64(fe->disk_bytenr), LE64(fe->offset), LE64(fe->num_bytes), off,
			  c->ino, c->src, 0 };
	return add_use(c->ci, &u);
}

/* Every regular extent item of file ino in subvolume `id`, as uses of source src. */
static int index_file(struct sender *s, uint64_t id, uint64_t ino, uint32_t src)
{
	struct use_ctx c = { &s->ci, ino, src };
	return send_each_extent(s, id, ino, add_item_use, &c);
}

static int index_source(struct sender *s, uint32_t src)
{
	const struct stable *t = s->ci.src[src].tab;
	int r = 0;
	for (size_t k = 0; !r && k < t->n; k++)
		if (S_ISREG(t->in[k].mode) && t->in[k].nrefs)
			r = index_file(s, s->ci.src[src].id, t->in[k].ino, src);
	return r;
}

static int add_source(struct sender *s, uint64_t id, const struct stable *tab)
{
	struct ref_subvol_info si;
	int r = ref_subvol_info(s->fs, id, &si);
	if (r)
		return send_fail(s, -r, "clone source %llu: %s", (unsigned long long)id, ref_error(s->fs));
	if (!(si.flags & BTRFS_ROOT_SUBVOL_RDONLY) && id != s->subvol)
		return send_fail(s, EPERM, "clone source %llu is not read-only", (unsigned long long)id);
	struct csrc *v = realloc(s->ci.src, (s->ci.nsrc + 1) * sizeof(*v));
	if (!v)
		return send_fail(s, ENOMEM, "out of memory");
	s->ci.src = v;
	struct csrc *c = &v[s->ci.nsrc++];
	*c = (struct csrc){ .id = id, .ctransid = si.ctransid };
	memcpy(c->uuid, si.uuid, 16);
	if (tab) {
		c->tab = tab;
		return 0;
	}
	if ((r = send_collect(s, id, &c->own)))
		return r;
	c->tab = &c->own;
	return 0;
}

int send_clone_init(struct sender *s)
{
	int r = add_source(s, s->subvol, &s->t);
	if (!r && s->parent && !(r = add_source(s, s->parent, &s->pt)))
		r = index_source(s, 1);
	for (size_t k = 0; !r && s->o && k < s->o->nclone_src; k++) {
		uint64_t id = s->o->clone_src[k];
		if (id == s->subvol || id == s->parent)
			continue;
		if (!(r = add_source(s, id, NULL)))
			r = index_source(s, (uint32_t)(s->ci.nsrc - 1));
	}
	return r == -ENOMEM ? send_fail(s, ENOMEM, "out of memory")
	       : r	    ? send_fail(s, -r, "indexing clone sources: %s", ref_error(s->fs))
			    : 0;
}

void send_clone_free(struct sender *s)
{
	for (size_t k = 0; k < s->ci.nsrc; k++)
		send_table_free(&s->ci.src[k].own);
	free(s->ci.src);
	free(s->ci.use);
	free(s->ci.bucket);
	s->ci = (struct cindex){ 0 };
}

int send_clone_add_self(struct sender *s, uint64_t ino)
{
	if (!s->ci.nsrc)
		return 0;
	int r = index_file(s, s->subvol, ino, 0);
	return r ? send_fail(s, -r, "indexing inode %llu: %s", (unsigned long long)ino,
			     r == -ENOMEM ? "out of memory" : ref_error(s->fs))
		 : 0;
}

/* The path of inode ino in source src's own tree (for the sent subvolume:
 * where the receiving side has it now). */
static int source_path(struct sender *s, uint32_t src, uint64_t ino, char *out, size_t cap)
{
	if (src == 0)
		return send_cur_path(s, ino, out, cap);
	const struct stable *t = s->ci.src[src].tab;
	char tmp[PATH_CAP];
	out[0] = 0;
	for (int depth = 0; ino != BTRFS_FIRST_FREE_OBJECTID; depth++) {
		const struct sinode *i = send_find(t, ino);
		if (!i || !i->nrefs || depth > 4096)
			return -ENOENT;
		size_t l = strlen(out);
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s%s%s", i->refs[0].name, l ? "/" : "", out) >=
		    sizeof(tmp))
			return -ENAMETOOLONG;
		if (strlen(tmp) >= cap)
			return -ENAMETOOLONG;
		strcpy(out, tmp);
		ino = i->refs[0].parent;
	}
	return 0;
}

/* A use that holds disk bytes [ext_off, ext_off + len) of extent bytenr,
 * in a file the clone may take them from; *src_off: where in that file. */
static const struct cuse *find_use(struct sender *s, const struct ref_ino *dst,
				   const struct ref_stat *dst_st, uint64_t bytenr, uint64_t ext_off,
				   uint64_t len, uint64_t dst_off, uint64_t *src_off,
				   uint64_t *src_size)
{
	if (!s->ci.nbucket)
		return NULL;
	for (uint32_t k = s->ci.bucket[hash(bytenr, s->ci.nbucket)]; k != UINT32_MAX;
	     k = s->ci.use[k].next) {
		const struct cuse *u = &s->ci.use[k];
		if (u->bytenr != bytenr || u->ext_off > ext_off || ext_off + len > u->ext_off + u->num)
			continue;
		if (u->src == 0 && u->ino == dst->ino)
			continue;
		uint64_t off = u->file_off + (ext_off - u->ext_off);
		if (off % BLOCK != dst_off % BLOCK)
			continue;
		struct ref_ino si = { s->ci.src[u->src].id, u->ino };
		struct ref_stat st;
		if (ref_stat(s->fs, &si, &st) || off + len > st.size ||
		    (st.flags & BTRFS_INODE_NODATASUM) != (dst_st->flags & BTRFS_INODE_NODATASUM))
			continue;
		*src_off = off;
		*src_size = st.size;
		return u;
	}
	return NULL;
}

static int send_clone_cmd(struct sender *s, const char *path, uint64_t off, uint64_t len,
			  const struct cuse *u, uint64_t src_off)
{
	char sp[PATH_CAP];
	int r = source_path(s, u->src, u->ino, sp, sizeof(sp));
	if (r)
		return send_fail(s, -r, "%s: the clone source's path", path);
	const struct csrc *c = &s->ci.src[u->src];
	sw_cmd(&s->w, REF_SEND_C_CLONE);
	sw_str(&s->w, REF_SEND_A_PATH, path);
	sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, off);
	sw_u64(&s->w, REF_SEND_A_CLONE_LEN, len);
	sw_attr(&s->w, REF_SEND_A_CLONE_UUID, c->uuid, 16);
	sw_u64(&s->w, REF_SEND_A_CLONE_CTRANSID, c->ctransid);
	sw_str(&s->w, REF_SEND_A_CLONE_PATH, sp);
	sw_u64(&s->w, REF_SEND_A_CLONE_OFFSET, src_off);
	if (s->st) {
		s->st->clones++;
		s->st->cloned_bytes += len;
	}
	return send_end_cmd(s);
}

/* BTRFS_ENCODED_IO_COMPRESSION_* of an extent's compression (4 KiB sectors). */
static uint32_t encoded_compression(uint8_t c)
{
	return c == 1 ? 1 /* zlib */ : c == 3 ? 2 /* zstd */ : 3 /* lzo, 4 KiB */;
}

/* An encoded write (--compressed-data) of file range [a, b), which extent
 * item fe at file offset item_off covers: the compressed bytes as they lie
 * on disk (checked against their checksums), or an inline item's. */
static int send_encoded(struct sender *s, const struct ref_stat *dst, const char *path,
			const struct btrfs_file_extent_item *fe, uint32_t item_size, uint64_t item_off,
			uint64_t a, uint64_t b)
{
	bool in = fe->type == BTRFS_FILE_EXTENT_INLINE;
	uint64_t len = in ? item_size - 21 : LE64(fe->disk_num_bytes);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return send_fail(s, ENOMEM, "out of memory");
	int r = 0;
	if (in)
		memcpy(buf, (const uint8_t *)fe + 21, len);
	else if ((r = data_read(s->fs, LE64(fe->disk_bytenr), buf, len,
				dst->flags & BTRFS_INODE_NODATASUM)))
		r = send_fail(s, -r, "%s: the compressed extent at %llu: %s", path,
			      (unsigned long long)LE64(fe->disk_bytenr), ref_error(s->fs));
	if (!r) {
		sw_cmd(&s->w, REF_SEND_C_ENCODED_WRITE);
		sw_str(&s->w, REF_SEND_A_PATH, path);
		sw_u64(&s->w, REF_SEND_A_FILE_OFFSET, a);
		sw_u64(&s->w, REF_SEND_A_UNENCODED_FILE_LEN, b - a);
		sw_u64(&s->w, REF_SEND_A_UNENCODED_LEN, LE64(fe->ram_bytes));
		sw_u64(&s->w, REF_SEND_A_UNENCODED_OFFSET, (in ? 0 : LE64(fe->offset)) + (a - item_off));
		sw_u32(&s->w, REF_SEND_A_COMPRESSION, encoded_compression(fe->compression));
		sw_data(&s->w, buf, len);
		r = send_end_cmd(s);
		if (!r && s->st)
			s->st->encoded_bytes += len;
	}
	free(buf);
	return r;
}

int send_range(struct sender *s, const struct ref_ino *ino, const char *path, uint64_t from,
	       uint64_t to)
{
	bool encoded = s->o && s->o->compressed_data && !s->o->no_data;
	if (!s->ci.nuse && !encoded)
		return send_bytes(s, ino, path, from, to);
	struct ref_stat dst;
	struct ref_root root;
	struct ref_path p;
	int r = ref_stat(s->fs, ino, &dst);
	if (!r)
		r = ref_find_root(s->fs, ino->subvol, &root);
	if (r)
		return send_fail(s, -r, "%s: %s", path, ref_error(s->fs));
	/* the items of [from, to), one after another; written up to `done` */
	struct ref_key k = { ino->ino, BTRFS_EXTENT_DATA_KEY, 0 };
	uint64_t done = from;
	r = ref_search(s->fs, &root, &k, &p);
	while (r == 0) {
		const uint8_t *d;
		uint32_t size;
		ref_path_item(&p, &k, &d, &size);
		if (k.objectid != ino->ino || k.type != BTRFS_EXTENT_DATA_KEY || k.offset >= to)
			break;
		const struct btrfs_file_extent_item *fe = (const void *)d;
		bool in = size > 21 && fe->type == BTRFS_FILE_EXTENT_INLINE;
		bool reg = size >= sizeof(*fe) && fe->type == BTRFS_FILE_EXTENT_REG && fe->disk_bytenr;
		if (!in && !reg) {
			r = ref_next(s->fs, &p);
			continue;
		}
		uint64_t a = k.offset > from ? k.offset : from;
		uint64_t b = k.offset + (in ? LE64(fe->ram_bytes) : LE64(fe->num_bytes));
		if (b > to)
			b = to;
		if (a >= b || a < done) {
			r = ref_next(s->fs, &p);
			continue;
		}
		uint64_t len = b - a, src_off = 0, src_size;
		const struct cuse *u = NULL;
		if (reg && a % BLOCK == 0) {
			uint64_t ext_off = LE64(fe->offset) + (a - k.offset);
			u = find_use(s, ino, &dst, LE64(fe->disk_bytenr), ext_off, len, a, &src_off,
				     &src_size);
			/* whole blocks, or up to the end of both files */
			if (u && len % BLOCK && !(src_off + len == src_size && a + len == dst.size))
				len -= len % BLOCK;
		}
		/* the kernel's choice: encoded when the compressed bytes are no
		 * more than the range they give */
		bool enc = !(u && len) && encoded && fe->compression &&
			   (in ? size - 21 : LE64(fe->disk_num_bytes)) <= b - a;
		if (!(u && len) && !enc) {
			r = ref_next(s->fs, &p);
			continue;
		}
		uint64_t item_off = k.offset;
		struct btrfs_file_extent_item copy;
		uint8_t inl[4096 + 21];
		const struct btrfs_file_extent_item *item = fe;
		if (enc && in && size <= sizeof(inl)) { /* the path is released before it is sent */
			memcpy(inl, d, size);
			item = (const void *)inl;
		} else if (enc && !in) {
			copy = *fe;
			item = &copy;
		} else if (enc) {
			r = ref_next(s->fs, &p);
			continue;
		}
		ref_path_release(s->fs, &p);
		if ((done < a && (r = send_bytes(s, ino, path, done, a))) ||
		    (r = enc ? send_encoded(s, &dst, path, item, size, item_off, a, b)
			     : send_clone_cmd(s, path, a, len, u, src_off)))
			return r;
		done = enc ? b : a + len;
		/* on after this item */
		k = (struct ref_key){ ino->ino, BTRFS_EXTENT_DATA_KEY, item_off + 1 };
		r = ref_search(s->fs, &root, &k, &p);
	}
	if (r == 0)
		ref_path_release(s->fs, &p);
	else if (r < 0)
		return send_fail(s, -r, "%s: %s", path, ref_error(s->fs));
	return done < to ? send_bytes(s, ino, path, done, to) : 0;
}
