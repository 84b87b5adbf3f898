/*
 * print_items.c - the bodies of leaf items, the lines under "item N key (...)
 * itemoff X itemsize Y", as btrfs-progs v6.2's print-tree.c prints them.
 *
 * Every reader is bounded by the item's size.  Where progs would read past a
 * short item, this prints the lines whose fields are there and then
 * "(item truncated: N bytes, expected M)".
 */
#include "ref/print.h"

#include "ref/csum.h"

#include <string.h>

/* Key types and objectids that the linux-libc-dev 6.1 header lacks. */
#define KEY_CSUM_ITEM 120
#define KEY_EXTENT_OWNER_REF 172

#define CSUM_BYTES 32

#define OFF(type, field) offsetof(struct type, field)

static bool short_item(FILE *out, uint32_t size, size_t want)
{
	if (size >= want)
		return false;
	ref_print_truncated(out, size, want);
	return true;
}

static void print_hidden_or_name(FILE *out, const struct ref_print_ctx *ctx, const char *hidden,
				 const uint8_t *name, size_t len)
{
	if (ctx && (ctx->mode & REF_PRINT_HIDE_NAMES))
		fputs(hidden, out);
	else
		ref_print_name(out, name, len);
}

/* ---- Inodes and directories ---- */

static void inode_flags_str(uint64_t flags, char *buf, size_t len)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{ 1 << 0, "NODATASUM" }, { 1 << 1, "NODATACOW" }, { 1 << 2, "READONLY" },
		{ 1 << 3, "NOCOMPRESS" }, { 1 << 4, "PREALLOC" }, { 1 << 5, "SYNC" },
		{ 1 << 6, "IMMUTABLE" },  { 1 << 7, "APPEND" },   { 1 << 8, "NODUMP" },
		{ 1 << 9, "NOATIME" },    { 1 << 10, "DIRSYNC" }, { 1 << 11, "COMPRESS" },
	};
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && n < len; i++)
		if (flags & names[i].bit)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "", names[i].name);
	if (!n)
		snprintf(buf, len, "none");
}

static void print_inode_item(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_inode_item)))
		return;
	const struct btrfs_inode_item *ii = (const void *)data;
	char flags[128];
	inode_flags_str(LE64(ii->flags), flags, sizeof(flags));
	fprintf(out,
		"\t\tgeneration %llu transid %llu size %llu nbytes %llu\n"
		"\t\tblock group %llu mode %o links %u uid %u gid %u rdev %llu\n"
		"\t\tsequence %llu flags 0x%llx(%s)\n",
		(unsigned long long)LE64(ii->generation), (unsigned long long)LE64(ii->transid),
		(unsigned long long)LE64(ii->size), (unsigned long long)LE64(ii->nbytes),
		(unsigned long long)LE64(ii->block_group), LE32(ii->mode), LE32(ii->nlink),
		LE32(ii->uid), LE32(ii->gid), (unsigned long long)LE64(ii->rdev),
		(unsigned long long)LE64(ii->sequence), (unsigned long long)LE64(ii->flags), flags);
	ref_print_timespec(out, &ii->atime, "\t\tatime ", "\n");
	ref_print_timespec(out, &ii->ctime, "\t\tctime ", "\n");
	ref_print_timespec(out, &ii->mtime, "\t\tmtime ", "\n");
	ref_print_timespec(out, &ii->otime, "\t\totime ", "\n");
}

static void print_inode_ref(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *data,
			    uint32_t size)
{
	const uint32_t hdr = sizeof(struct btrfs_inode_ref);
	for (uint32_t cur = 0; cur < size;) {
		if (size - cur < hdr) {
			ref_print_truncated(out, size, cur + hdr);
			return;
		}
		const struct btrfs_inode_ref *ref = (const void *)(data + cur);
		uint32_t name_len = LE16(ref->name_len);
		fprintf(out, "\t\tindex %llu namelen %u ", (unsigned long long)LE64(ref->index),
			name_len);
		if (size - cur - hdr < name_len) {
			fputc('\n', out);
			ref_print_truncated(out, size, (uint64_t)cur + hdr + name_len);
			return;
		}
		fputs("name: ", out);
		print_hidden_or_name(out, ctx, "HIDDEN", data + cur + hdr, name_len);
		fputc('\n', out);
		cur += hdr + name_len;
	}
}

static void print_inode_extref(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *data,
			       uint32_t size)
{
	const uint32_t hdr = sizeof(struct btrfs_inode_extref);
	for (uint32_t cur = 0; cur < size;) {
		if (size - cur < hdr) {
			ref_print_truncated(out, size, cur + hdr);
			return;
		}
		const struct btrfs_inode_extref *ref = (const void *)(data + cur);
		uint32_t name_len = LE16(ref->name_len);
		fprintf(out, "\t\tindex %llu parent %llu namelen %u ",
			(unsigned long long)LE64(ref->index),
			(unsigned long long)LE64(ref->parent_objectid), name_len);
		if (size - cur - hdr < name_len) {
			fputc('\n', out);
			ref_print_truncated(out, size, (uint64_t)cur + hdr + name_len);
			return;
		}
		fputs("name: ", out);
		print_hidden_or_name(out, ctx, "HIDDEN", data + cur + hdr, name_len);
		fputc('\n', out);
		cur += hdr + name_len;
	}
}

static void print_dir_type(FILE *out, uint8_t type)
{
	static const char *const names[] = {
		[BTRFS_FT_REG_FILE] = "FILE", [BTRFS_FT_DIR] = "DIR",
		[BTRFS_FT_CHRDEV] = "CHRDEV", [BTRFS_FT_BLKDEV] = "BLKDEV",
		[BTRFS_FT_FIFO] = "FIFO",     [BTRFS_FT_SOCK] = "SOCK",
		[BTRFS_FT_SYMLINK] = "SYMLINK", [BTRFS_FT_XATTR] = "XATTR",
	};
	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		fputs(names[type], out);
	else
		fprintf(out, "DIR_ITEM.%u", type);
}

/* DIR_ITEM, DIR_INDEX and XATTR_ITEM: one or more entries, each a header,
 * the name and (xattrs) the data. */
static void print_dir_item(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *data,
			   uint32_t size)
{
	const uint32_t hdr = sizeof(struct btrfs_dir_item);
	for (uint32_t cur = 0; cur < size;) {
		if (size - cur < hdr) {
			ref_print_truncated(out, size, cur + hdr);
			return;
		}
		const struct btrfs_dir_item *di = (const void *)(data + cur);
		uint32_t name_len = LE16(di->name_len), data_len = LE16(di->data_len);
		fputs("\t\tlocation ", out);
		ref_print_disk_key(out, &di->location);
		fputs(" type ", out);
		print_dir_type(out, di->type);
		fprintf(out, "\n\t\ttransid %llu data_len %u name_len %u\n",
			(unsigned long long)LE64(di->transid), data_len, name_len);
		uint32_t len = hdr + name_len + data_len;
		if (size - cur < len) {
			ref_print_truncated(out, size, (uint64_t)cur + len);
			return;
		}
		const uint8_t *name = data + cur + hdr;
		fputs("\t\tname: ", out);
		print_hidden_or_name(out, ctx, "HIDDEN", name, name_len);
		fputc('\n', out);
		if (data_len) {
			if (ctx && (ctx->mode & REF_PRINT_HIDE_NAMES)) {
				fputs("\t\tdata HIDDEN\n", out);
			} else {
				fputs("\t\tdata ", out);
				ref_print_name(out, name + name_len, data_len);
				fputc('\n', out);
			}
		}
		cur += len;
	}
}

/* ---- Roots ---- */

static void print_root_item(FILE *out, const uint8_t *data, uint32_t size)
{
	/* progs copies what there is into a zeroed root item, so a legacy item
	 * (without generation_v2 and what follows) prints zeros there. */
	struct btrfs_root_item ri;
	memset(&ri, 0, sizeof(ri));
	if (size)
		memcpy(&ri, data, size < sizeof(ri) ? size : sizeof(ri));
	uint64_t flags = LE64(ri.flags);
	fprintf(out,
		"\t\tgeneration %llu root_dirid %llu bytenr %llu byte_limit %llu bytes_used %llu\n",
		(unsigned long long)LE64(ri.generation), (unsigned long long)LE64(ri.root_dirid),
		(unsigned long long)LE64(ri.bytenr), (unsigned long long)LE64(ri.byte_limit),
		(unsigned long long)LE64(ri.bytes_used));
	fprintf(out, "\t\tlast_snapshot %llu flags 0x%llx(%s) refs %u\n",
		(unsigned long long)LE64(ri.last_snapshot), (unsigned long long)flags,
		(flags & BTRFS_ROOT_SUBVOL_RDONLY) ? "RDONLY" : "none", LE32(ri.refs));
	fputs("\t\tdrop_progress ", out);
	ref_print_disk_key(out, &ri.drop_progress);
	fprintf(out, " drop_level %u\n", ri.drop_level);
	fprintf(out, "\t\tlevel %u generation_v2 %llu\n", ri.level,
		(unsigned long long)LE64(ri.generation_v2));
	if (LE64(ri.generation) == LE64(ri.generation_v2)) {
		fputs("\t\tuuid ", out);
		ref_print_uuid(out, ri.uuid);
		fputs("\n\t\tparent_uuid ", out);
		ref_print_uuid(out, ri.parent_uuid);
		fputs("\n\t\treceived_uuid ", out);
		ref_print_uuid(out, ri.received_uuid);
		fprintf(out, "\n\t\tctransid %llu otransid %llu stransid %llu rtransid %llu\n",
			(unsigned long long)LE64(ri.ctransid), (unsigned long long)LE64(ri.otransid),
			(unsigned long long)LE64(ri.stransid), (unsigned long long)LE64(ri.rtransid));
		ref_print_timespec(out, &ri.ctime, "\t\tctime ", "\n");
		ref_print_timespec(out, &ri.otime, "\t\totime ", "\n");
		ref_print_timespec(out, &ri.stime, "\t\tstime ", "\n");
		ref_print_timespec(out, &ri.rtime, "\t\trtime ", "\n");
	}
	if (size < btrfs_legacy_root_item_size())
		ref_print_truncated(out, size, sizeof(ri));
}

static void print_root_ref(FILE *out, const uint8_t *data, uint32_t size, const char *tag)
{
	const uint32_t hdr = sizeof(struct btrfs_root_ref);
	if (short_item(out, size, hdr))
		return;
	const struct btrfs_root_ref *ref = (const void *)data;
	uint32_t name_len = LE16(ref->name_len);
	fprintf(out, "\t\troot %s key dirid %llu sequence %llu name ", tag,
		(unsigned long long)LE64(ref->dirid), (unsigned long long)LE64(ref->sequence));
	if (size - hdr < name_len) {
		fputc('\n', out);
		ref_print_truncated(out, size, (uint64_t)hdr + name_len);
		return;
	}
	ref_print_name(out, data + hdr, name_len);
	fputc('\n', out);
}

/* ---- Extents and their back references ---- */

static void extent_flags_str(uint64_t flags, char *buf, size_t len)
{
	/* progs' extent_flags_to_str, including its unconditional "|" before
	 * FULL_BACKREF */
	snprintf(buf, len, "%s%s%s%s", (flags & BTRFS_EXTENT_FLAG_DATA) ? "DATA" : "",
		 (flags & BTRFS_EXTENT_FLAG_DATA) && (flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) ? "|" : "",
		 (flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) ? "TREE_BLOCK" : "",
		 (flags & BTRFS_BLOCK_FLAG_FULL_BACKREF) ? "|FULL_BACKREF" : "");
}

static void print_extent_item(FILE *out, const struct ref_key *key, const uint8_t *data,
			      uint32_t size)
{
	const uint32_t ei_size = sizeof(struct btrfs_extent_item);
	if (short_item(out, size, ei_size))
		return;
	const struct btrfs_extent_item *ei = (const void *)data;
	uint64_t flags = LE64(ei->flags);
	char fstr[48];
	extent_flags_str(flags, fstr, sizeof(fstr));
	fprintf(out, "\t\trefs %llu gen %llu flags %s\n", (unsigned long long)LE64(ei->refs),
		(unsigned long long)LE64(ei->generation), fstr);

	uint32_t ptr = ei_size;
	bool metadata = key->type == BTRFS_METADATA_ITEM_KEY;
	if ((flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) && !metadata) {
		const uint32_t info_size = sizeof(struct btrfs_tree_block_info);
		if (short_item(out, size, ei_size + info_size))
			return;
		const struct btrfs_tree_block_info *info = (const void *)(data + ei_size);
		fputs("\t\ttree block ", out);
		ref_print_disk_key(out, &info->key);
		fprintf(out, " level %d\n", info->level);
		ptr += info_size;
	} else if (metadata) {
		fprintf(out, "\t\ttree block skinny level %d\n", (int)key->offset);
	}

	while (ptr < size) {
		uint8_t type = data[ptr];
		uint32_t len;
		switch (type) {
		case BTRFS_TREE_BLOCK_REF_KEY:
		case BTRFS_SHARED_BLOCK_REF_KEY:
		case KEY_EXTENT_OWNER_REF:
			len = sizeof(struct btrfs_extent_inline_ref);
			break;
		case BTRFS_EXTENT_DATA_REF_KEY:
			len = 1 + sizeof(struct btrfs_extent_data_ref);
			break;
		case BTRFS_SHARED_DATA_REF_KEY:
			len = sizeof(struct btrfs_extent_inline_ref) +
			      sizeof(struct btrfs_shared_data_ref);
			break;
		default:
			/* progs stops silently here */
			fprintf(out, "\t\t(unknown inline ref type %u at item offset %u)\n", type,
				ptr);
			return;
		}
		if (size - ptr < len) {
			ref_print_truncated(out, size, (uint64_t)ptr + len);
			return;
		}
		const uint8_t *p = data + ptr;
		uint64_t offset = le64(p + 1);
		switch (type) {
		case BTRFS_TREE_BLOCK_REF_KEY:
			fputs("\t\ttree block backref root ", out);
			ref_print_objectid_name(out, offset, 0);
			fputc('\n', out);
			break;
		case BTRFS_SHARED_BLOCK_REF_KEY:
			fprintf(out, "\t\tshared block backref parent %llu\n",
				(unsigned long long)offset);
			break;
		case BTRFS_EXTENT_DATA_REF_KEY: {
			const struct btrfs_extent_data_ref *dref = (const void *)(p + 1);
			fputs("\t\textent data backref root ", out);
			ref_print_objectid_name(out, LE64(dref->root), 0);
			fprintf(out, " objectid %llu offset %llu count %u\n",
				(unsigned long long)LE64(dref->objectid),
				(unsigned long long)LE64(dref->offset), LE32(dref->count));
			break;
		}
		case BTRFS_SHARED_DATA_REF_KEY:
			fprintf(out, "\t\tshared data backref parent %llu count %u\n",
				(unsigned long long)offset, le32(p + 9));
			break;
		case KEY_EXTENT_OWNER_REF: /* progs 6.7's layout */
			fprintf(out, "\t\textent owner root %llu\n", (unsigned long long)offset);
			break;
		}
		ptr += len;
	}
}

static void print_extent_data_ref(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_extent_data_ref)))
		return;
	const struct btrfs_extent_data_ref *dref = (const void *)data;
	fputs("\t\textent data backref root ", out);
	ref_print_objectid_name(out, LE64(dref->root), 0);
	fprintf(out, " objectid %llu offset %llu count %u\n",
		(unsigned long long)LE64(dref->objectid), (unsigned long long)LE64(dref->offset),
		LE32(dref->count));
}

static void print_extent_csum(FILE *out, const struct ref_print_ctx *ctx, uint64_t start,
			      const uint8_t *data, uint32_t size)
{
	unsigned csize = ctx ? ref_csum_size(ctx->csum_type) : 0;
	if (!csize || !ctx->sectorsize) {
		/* what progs prints when it does not know the checksum size */
		fprintf(out, "\t\trange start %llu\n", (unsigned long long)start);
		return;
	}
	uint32_t n = size / csize;
	uint64_t length = (uint64_t)n * ctx->sectorsize;
	fprintf(out, "\t\trange start %llu end %llu length %u\n", (unsigned long long)start,
		(unsigned long long)(start + length), (uint32_t)length);
	if (ctx->mode & REF_PRINT_CSUM_ITEMS) {
		/* one line: 4 crc32c, 2 xxhash or 1 sha256/blake2 */
		unsigned per_line = CSUM_BYTES / csize / 2;
		if (!per_line)
			per_line = 1;
		unsigned col = per_line;
		uint64_t off = start;
		for (uint32_t i = 0; i < n; i++) {
			if (col == per_line) {
				fputs("\t\t", out);
			} else if (col == 0) {
				col = per_line;
				fputs("\n\t\t", out);
			} else {
				fputc(' ', out);
			}
			fprintf(out, "[%llu] 0x", (unsigned long long)off);
			for (unsigned b = 0; b < csize; b++)
				fprintf(out, "%02x", data[(size_t)i * csize + b]);
			off += ctx->sectorsize;
			col--;
		}
		if (n)
			fputc('\n', out);
	}
	if (size % csize)
		ref_print_truncated(out, size, (uint64_t)(n + 1) * csize);
}

static const char *compress_name(uint8_t c, char *buf, size_t len)
{
	switch (c) {
	case 0: return "none";
	case 1: return "zlib";
	case 2: return "lzo";
	case 3: return "zstd";
	}
	snprintf(buf, len, "UNKNOWN.%d", c);
	return buf;
}

static void print_file_extent(FILE *out, const uint8_t *data, uint32_t size)
{
	const uint32_t inline_start = OFF(btrfs_file_extent_item, disk_bytenr);
	if (short_item(out, size, inline_start))
		return;
	const struct btrfs_file_extent_item *fi = (const void *)data;
	char cbuf[16];
	const char *cname = compress_name(fi->compression, cbuf, sizeof(cbuf));
	const char *tname = fi->type == BTRFS_FILE_EXTENT_INLINE     ? "inline"
			    : fi->type == BTRFS_FILE_EXTENT_PREALLOC ? "prealloc"
			    : fi->type == BTRFS_FILE_EXTENT_REG	     ? "regular"
								     : "unknown";
	fprintf(out, "\t\tgeneration %llu type %u (%s)\n",
		(unsigned long long)LE64(fi->generation), fi->type, tname);
	if (fi->type == BTRFS_FILE_EXTENT_INLINE) {
		fprintf(out, "\t\tinline extent data size %u ram_bytes %llu compression %u (%s)\n",
			size - inline_start, (unsigned long long)LE64(fi->ram_bytes),
			fi->compression, cname);
		return;
	}
	if (short_item(out, size, sizeof(*fi)))
		return;
	if (fi->type == BTRFS_FILE_EXTENT_PREALLOC) {
		fprintf(out, "\t\tprealloc data disk byte %llu nr %llu\n",
			(unsigned long long)LE64(fi->disk_bytenr),
			(unsigned long long)LE64(fi->disk_num_bytes));
		fprintf(out, "\t\tprealloc data offset %llu nr %llu\n",
			(unsigned long long)LE64(fi->offset), (unsigned long long)LE64(fi->num_bytes));
		return;
	}
	fprintf(out, "\t\textent data disk byte %llu nr %llu\n",
		(unsigned long long)LE64(fi->disk_bytenr),
		(unsigned long long)LE64(fi->disk_num_bytes));
	fprintf(out, "\t\textent data offset %llu nr %llu ram %llu\n",
		(unsigned long long)LE64(fi->offset), (unsigned long long)LE64(fi->num_bytes),
		(unsigned long long)LE64(fi->ram_bytes));
	fprintf(out, "\t\textent compression %u (%s)\n", fi->compression, cname);
}

static void print_free_space_header(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_free_space_header)))
		return;
	const struct btrfs_free_space_header *h = (const void *)data;
	fputs("\t\tlocation ", out);
	ref_print_disk_key(out, &h->location);
	fprintf(out, "\n\t\tcache generation %llu entries %llu bitmaps %llu\n",
		(unsigned long long)LE64(h->generation), (unsigned long long)LE64(h->num_entries),
		(unsigned long long)LE64(h->num_bitmaps));
}

static void print_u64_item(FILE *out, const char *fmt, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, 8))
		return;
	fprintf(out, fmt, (unsigned long long)le64(data));
}

void ref_print_item_body(FILE *out, const struct ref_print_ctx *ctx, const struct ref_key *key,
			 const uint8_t *data, uint32_t size)
{
	if (key->type == 0 && key->objectid == BTRFS_FREE_SPACE_OBJECTID)
		print_free_space_header(out, data, size);

	switch (key->type) {
	case BTRFS_INODE_ITEM_KEY:
		print_inode_item(out, data, size);
		break;
	case BTRFS_INODE_REF_KEY:
		print_inode_ref(out, ctx, data, size);
		break;
	case BTRFS_INODE_EXTREF_KEY:
		print_inode_extref(out, ctx, data, size);
		break;
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
	case BTRFS_XATTR_ITEM_KEY:
		print_dir_item(out, ctx, data, size);
		break;
	case BTRFS_DIR_LOG_INDEX_KEY:
	case BTRFS_DIR_LOG_ITEM_KEY:
		print_u64_item(out, "\t\tdir log end %llu\n", data, size);
		break;
	case BTRFS_ORPHAN_ITEM_KEY:
		fputs("\t\torphan item\n", out);
		break;
	case BTRFS_ROOT_ITEM_KEY:
		print_root_item(out, data, size);
		break;
	case BTRFS_ROOT_REF_KEY:
		print_root_ref(out, data, size, "ref");
		break;
	case BTRFS_ROOT_BACKREF_KEY:
		print_root_ref(out, data, size, "backref");
		break;
	case BTRFS_EXTENT_ITEM_KEY:
	case BTRFS_METADATA_ITEM_KEY:
		print_extent_item(out, key, data, size);
		break;
	case BTRFS_TREE_BLOCK_REF_KEY:
		fputs("\t\ttree block backref\n", out);
		break;
	case BTRFS_SHARED_BLOCK_REF_KEY:
		fputs("\t\tshared block backref\n", out);
		break;
	case BTRFS_EXTENT_DATA_REF_KEY:
		print_extent_data_ref(out, data, size);
		break;
	case BTRFS_SHARED_DATA_REF_KEY:
		if (!short_item(out, size, sizeof(struct btrfs_shared_data_ref)))
			fprintf(out, "\t\tshared data backref count %u\n", le32(data));
		break;
	case BTRFS_EXTENT_REF_V0_KEY:
		fputs("\t\textent ref v0 (deprecated)\n", out);
		break;
	case KEY_CSUM_ITEM:
		fputs("\t\tcsum item\n", out);
		break;
	case BTRFS_EXTENT_CSUM_KEY:
		print_extent_csum(out, ctx, key->offset, data, size);
		break;
	case BTRFS_EXTENT_DATA_KEY:
		print_file_extent(out, data, size);
		break;
	case BTRFS_STRING_ITEM_KEY: {
		const uint8_t *nul = size ? memchr(data, 0, size) : NULL;
		fputs("\t\titem data ", out);
		if (size)
			fwrite(data, 1, nul ? (size_t)(nul - data) : size, out);
		fputc('\n', out);
		break;
	}
	default:
		ref_print_volume_item(out, ctx, key, data, size);
		break;
	}
}
