/*
 * print_volume.c - the bodies of the items that describe the volume rather
 * than files: block groups, free space, chunks, devices, device stats and
 * replace, quotas, the uuid tree, balance; as btrfs-progs v6.2 prints them.
 * ref_print_item_body (print_items.c) hands these types over.
 */
#include "ref/print.h"

#include <string.h>
#include <time.h>

#define OBJ_CSUM_TREE_TMP 13 /* progs v6.2's BTRFS_CSUM_TREE_TMP_OBJECTID */
#define OFF(type, field) offsetof(struct type, field)

static bool short_item(FILE *out, uint32_t size, size_t want)
{
	if (size >= want)
		return false;
	ref_print_truncated(out, size, want);
	return true;
}

/* ---- Block groups, free space, chunks and devices ---- */

static void print_block_group(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_block_group_item)))
		return;
	const struct btrfs_block_group_item *bg = (const void *)data;
	char fstr[64];
	fprintf(out, "\t\tblock group used %llu chunk_objectid %llu flags %s\n",
		(unsigned long long)LE64(bg->used), (unsigned long long)LE64(bg->chunk_objectid),
		ref_print_bg_flags(LE64(bg->flags), fstr, sizeof(fstr)));
}

void ref_print_chunk(FILE *out, const struct btrfs_chunk *c, uint32_t size)
{
	const uint32_t base = OFF(btrfs_chunk, stripe);
	const uint32_t stripe_size = sizeof(struct btrfs_stripe);
	if (short_item(out, size, base))
		return;
	uint32_t num = LE16(c->num_stripes);
	if (num < 1) {
		fprintf(out, "invalid num_stripes: %u\n", num);
		return;
	}
	if (short_item(out, size, base + (uint64_t)num * stripe_size))
		return;
	char fstr[64];
	fprintf(out, "\t\tlength %llu owner %llu stripe_len %llu type %s\n",
		(unsigned long long)LE64(c->length), (unsigned long long)LE64(c->owner),
		(unsigned long long)LE64(c->stripe_len),
		ref_print_bg_flags(LE64(c->type), fstr, sizeof(fstr)));
	fprintf(out, "\t\tio_align %u io_width %u sector_size %u\n", LE32(c->io_align),
		LE32(c->io_width), LE32(c->sector_size));
	fprintf(out, "\t\tnum_stripes %u sub_stripes %u\n", num, LE16(c->sub_stripes));
	const uint8_t *p = (const uint8_t *)c + base;
	for (uint32_t i = 0; i < num; i++) {
		const struct btrfs_stripe *s = (const void *)(p + (size_t)i * stripe_size);
		fprintf(out, "\t\t\tstripe %u devid %llu offset %llu\n", i,
			(unsigned long long)LE64(s->devid), (unsigned long long)LE64(s->offset));
		fputs("\t\t\tdev_uuid ", out);
		ref_print_uuid(out, s->dev_uuid);
		fputc('\n', out);
	}
}

static void print_dev_item(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_dev_item)))
		return;
	const struct btrfs_dev_item *d = (const void *)data;
	fprintf(out,
		"\t\tdevid %llu total_bytes %llu bytes_used %llu\n"
		"\t\tio_align %u io_width %u sector_size %u type %llu\n"
		"\t\tgeneration %llu start_offset %llu dev_group %u\n"
		"\t\tseek_speed %u bandwidth %u\n",
		(unsigned long long)LE64(d->devid), (unsigned long long)LE64(d->total_bytes),
		(unsigned long long)LE64(d->bytes_used), LE32(d->io_align), LE32(d->io_width),
		LE32(d->sector_size), (unsigned long long)LE64(d->type),
		(unsigned long long)LE64(d->generation), (unsigned long long)LE64(d->start_offset),
		LE32(d->dev_group), d->seek_speed, d->bandwidth);
	fputs("\t\tuuid ", out);
	ref_print_uuid(out, d->uuid);
	fputs("\n\t\tfsid ", out);
	ref_print_uuid(out, d->fsid);
	fputc('\n', out);
}

static void print_dev_extent(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_dev_extent)))
		return;
	const struct btrfs_dev_extent *e = (const void *)data;
	fprintf(out,
		"\t\tdev extent chunk_tree %llu\n"
		"\t\tchunk_objectid %llu chunk_offset %llu length %llu\n"
		"\t\tchunk_tree_uuid ",
		(unsigned long long)LE64(e->chunk_tree), (unsigned long long)LE64(e->chunk_objectid),
		(unsigned long long)LE64(e->chunk_offset), (unsigned long long)LE64(e->length));
	ref_print_uuid(out, e->chunk_tree_uuid);
	fputc('\n', out);
}

static void print_dev_stats(FILE *out, const uint8_t *data, uint32_t size)
{
	const uint32_t known = BTRFS_DEV_STAT_VALUES_MAX * 8;
	fputs("\t\tdevice stats\n", out);
	if (short_item(out, size, known))
		return;
	fprintf(out,
		"\t\twrite_errs %llu read_errs %llu flush_errs %llu corruption_errs %llu generation %llu\n",
		(unsigned long long)le64(data), (unsigned long long)le64(data + 8),
		(unsigned long long)le64(data + 16), (unsigned long long)le64(data + 24),
		(unsigned long long)le64(data + 32));
	if (known < size) {
		/* sic: progs ends this line without a newline */
		fprintf(out, "\t\tunknown stats item bytes %u", size - known);
		for (uint32_t i = BTRFS_DEV_STAT_VALUES_MAX; (uint64_t)i * 8 + 8 <= size; i++)
			fprintf(out, "\t\tunknown item %u offset %u value %llu\n", i, i * 8,
				(unsigned long long)le64(data + (size_t)i * 8));
		if (size % 8)
			ref_print_truncated(out, size, (size / 8 + 1) * 8);
	}
}

static const char *dev_replace_state(uint64_t v, char *buf, size_t len)
{
	static const char *const names[] = { "NEVER_STARTED", "STARTED", "FINISHED", "CANCELED",
					     "SUSPENDED" };
	if (v < sizeof(names) / sizeof(names[0]))
		return names[v];
	snprintf(buf, len, "unknown value(%llu)", (unsigned long long)v);
	return buf;
}

static void print_u64_time(FILE *out, const char *prefix, uint64_t sec)
{
	time_t t = (time_t)sec;
	struct tm tm;
	char stamp[256];
	memset(&tm, 0, sizeof(tm));
	localtime_r(&t, &tm);
	if (!strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm))
		stamp[0] = '\0';
	fprintf(out, "%s%llu (%s)\n", prefix, (unsigned long long)sec, stamp);
}

/* progs 6.10's layout; v6.2 prints no body for DEV_REPLACE. */
static void print_dev_replace(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_dev_replace_item)))
		return;
	const struct btrfs_dev_replace_item *r = (const void *)data;
	uint64_t mode = LE64(r->cont_reading_from_srcdev_mode);
	char mbuf[48], sbuf[48];
	const char *mname = mode == BTRFS_DEV_REPLACE_ITEM_CONT_READING_FROM_SRCDEV_MODE_ALWAYS
				    ? "ALWAYS"
			    : mode == BTRFS_DEV_REPLACE_ITEM_CONT_READING_FROM_SRCDEV_MODE_AVOID
				    ? "AVOID"
				    : (snprintf(mbuf, sizeof(mbuf), "unknown value(%llu)",
						(unsigned long long)mode),
				       mbuf);
	fprintf(out, "\t\tsrc devid %lld cursor left %llu cursor right %llu mode %s\n",
		(long long)LE64(r->src_devid), (unsigned long long)LE64(r->cursor_left),
		(unsigned long long)LE64(r->cursor_right), mname);
	fprintf(out, "\t\tstate %s write errors %llu uncorrectable read errors %llu\n",
		dev_replace_state(LE64(r->replace_state), sbuf, sizeof(sbuf)),
		(unsigned long long)LE64(r->num_write_errors),
		(unsigned long long)LE64(r->num_uncorrectable_read_errors));
	print_u64_time(out, "\t\tstart time ", LE64(r->time_started));
	print_u64_time(out, "\t\tstop time ", LE64(r->time_stopped));
}

/* ---- Quotas, uuids, balance ---- */

static void print_qgroup_status(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_qgroup_status_item)))
		return;
	const struct btrfs_qgroup_status_item *s = (const void *)data;
	uint64_t flags = LE64(s->flags);
	fprintf(out, "\t\tversion %llu generation %llu flags %s%s%s scan %llu\n",
		(unsigned long long)LE64(s->version), (unsigned long long)LE64(s->generation),
		(flags & BTRFS_QGROUP_STATUS_FLAG_ON) ? "ON" : "OFF",
		(flags & BTRFS_QGROUP_STATUS_FLAG_RESCAN) ? "|SCANNING" : "",
		(flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT) ? "|INCONSISTENT" : "",
		(unsigned long long)LE64(s->rescan));
}

static void print_qgroup_info(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_qgroup_info_item)))
		return;
	const struct btrfs_qgroup_info_item *q = (const void *)data;
	fprintf(out,
		"\t\tgeneration %llu\n"
		"\t\treferenced %llu referenced_compressed %llu\n"
		"\t\texclusive %llu exclusive_compressed %llu\n",
		(unsigned long long)LE64(q->generation), (unsigned long long)LE64(q->rfer),
		(unsigned long long)LE64(q->rfer_cmpr), (unsigned long long)LE64(q->excl),
		(unsigned long long)LE64(q->excl_cmpr));
}

static void print_qgroup_limit(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, sizeof(struct btrfs_qgroup_limit_item)))
		return;
	const struct btrfs_qgroup_limit_item *q = (const void *)data;
	fprintf(out,
		"\t\tflags %llx\n"
		"\t\tmax_referenced %lld max_exclusive %lld\n"
		"\t\trsv_referenced %lld rsv_exclusive %lld\n",
		(unsigned long long)LE64(q->flags), (long long)LE64(q->max_rfer),
		(long long)LE64(q->max_excl), (long long)LE64(q->rsv_rfer),
		(long long)LE64(q->rsv_excl));
}

static void print_uuid_item(FILE *out, const uint8_t *data, uint32_t size)
{
	if (size % 8) {
		fprintf(out, "btrfs: uuid item with illegal size %lu!\n", (unsigned long)size);
		return;
	}
	for (uint32_t i = 0; i < size; i += 8)
		fprintf(out, "\t\tsubvol_id %llu\n", (unsigned long long)le64(data + i));
}

static void print_balance_args(FILE *out, const struct btrfs_disk_balance_args *a)
{
	fprintf(out, "\t\tprofiles %llu devid %llu target %llu flags %llu\n",
		(unsigned long long)LE64(a->profiles), (unsigned long long)LE64(a->devid),
		(unsigned long long)LE64(a->target), (unsigned long long)LE64(a->flags));
	fprintf(out, "\t\tusage_min %u usage_max %u pstart %llu pend %llu\n", LE32(a->usage_min),
		LE32(a->usage_max), (unsigned long long)LE64(a->pstart),
		(unsigned long long)LE64(a->pend));
	fprintf(out, "\t\tvstart %llu vend %llu limit_min %u limit_max %u\n",
		(unsigned long long)LE64(a->vstart), (unsigned long long)LE64(a->vend),
		LE32(a->limit_min), LE32(a->limit_max));
	fprintf(out, "\t\tstripes_min %u stripes_max %u\n", LE32(a->stripes_min),
		LE32(a->stripes_max));
}

static void print_balance_item(FILE *out, const uint8_t *data, uint32_t size)
{
	if (short_item(out, size, OFF(btrfs_balance_item, unused)))
		return;
	const struct btrfs_balance_item *b = (const void *)data;
	fprintf(out, "\t\tbalance status flags %llu\n", (unsigned long long)LE64(b->flags));
	fputs("\t\tDATA\n", out);
	print_balance_args(out, &b->data);
	fputs("\t\tMETADATA\n", out);
	print_balance_args(out, &b->meta);
	fputs("\t\tSYSTEM\n", out);
	print_balance_args(out, &b->sys);
}

static void print_persistent_item(FILE *out, const struct ref_key *key, const uint8_t *data,
				  uint32_t size)
{
	fputs("\t\tpersistent item objectid ", out);
	ref_print_objectid_name(out, key->objectid, BTRFS_PERSISTENT_ITEM_KEY);
	fprintf(out, " offset %llu\n", (unsigned long long)key->offset);
	if (key->objectid == BTRFS_DEV_STATS_OBJECTID)
		print_dev_stats(out, data, size);
	else
		fprintf(out, "\t\tunknown persistent item objectid %llu\n",
			(unsigned long long)key->objectid);
}

static void print_temporary_item(FILE *out, const struct ref_key *key, const uint8_t *data,
				 uint32_t size)
{
	fputs("\t\ttemporary item objectid ", out);
	ref_print_objectid_name(out, key->objectid, BTRFS_TEMPORARY_ITEM_KEY);
	fprintf(out, " offset %llu\n", (unsigned long long)key->offset);
	if (key->objectid == BTRFS_BALANCE_OBJECTID)
		print_balance_item(out, data, size);
	else if (key->objectid == OBJ_CSUM_TREE_TMP)
		fprintf(out, "\t\tcsum tree tmp root %llu\n", (unsigned long long)key->offset);
	else
		fprintf(out, "\t\tunknown temporary item objectid %llu\n",
			(unsigned long long)key->objectid);
}

void ref_print_volume_item(FILE *out, const struct ref_print_ctx *ctx, const struct ref_key *key,
			   const uint8_t *data, uint32_t size)
{
	(void)ctx; /* for the items to come that need it */
	switch (key->type) {
	case BTRFS_BLOCK_GROUP_ITEM_KEY:
		print_block_group(out, data, size);
		break;
	case BTRFS_FREE_SPACE_INFO_KEY:
		if (!short_item(out, size, sizeof(struct btrfs_free_space_info)))
			fprintf(out, "\t\tfree space info extent count %u flags %u\n", le32(data),
				le32(data + 4));
		break;
	case BTRFS_FREE_SPACE_EXTENT_KEY:
		fputs("\t\tfree space extent\n", out);
		break;
	case BTRFS_FREE_SPACE_BITMAP_KEY:
		fputs("\t\tfree space bitmap\n", out);
		break;
	case BTRFS_CHUNK_ITEM_KEY:
		ref_print_chunk(out, (const struct btrfs_chunk *)data, size);
		break;
	case BTRFS_DEV_ITEM_KEY:
		print_dev_item(out, data, size);
		break;
	case BTRFS_DEV_EXTENT_KEY:
		print_dev_extent(out, data, size);
		break;
	case BTRFS_QGROUP_STATUS_KEY:
		print_qgroup_status(out, data, size);
		break;
	case BTRFS_QGROUP_RELATION_KEY:
		break;
	case BTRFS_QGROUP_INFO_KEY:
		print_qgroup_info(out, data, size);
		break;
	case BTRFS_QGROUP_LIMIT_KEY:
		print_qgroup_limit(out, data, size);
		break;
	case BTRFS_UUID_KEY_SUBVOL:
	case BTRFS_UUID_KEY_RECEIVED_SUBVOL:
		print_uuid_item(out, data, size);
		break;
	case BTRFS_PERSISTENT_ITEM_KEY:
		print_persistent_item(out, key, data, size);
		break;
	case BTRFS_TEMPORARY_ITEM_KEY:
		print_temporary_item(out, key, data, size);
		break;
	case BTRFS_DEV_REPLACE_KEY:
		print_dev_replace(out, data, size);
		break;
	}
}
