/*
 * print.h - printing superblocks, tree blocks and items in the layout of
 * btrfs-progs' `btrfs inspect-internal dump-super` / `dump-tree`, so that a
 * developer can read btrsim's output side by side with theirs.
 */
#ifndef BTRSIM_REF_PRINT_H
#define BTRSIM_REF_PRINT_H

#include "ref/ref.h"

#include <stdio.h>

/* Bits of ref_print_ctx.mode, as dump-tree's options of the same names. */
#define REF_PRINT_HIDE_NAMES 0x1u   /* --hide-names: "name: HIDDEN" */
#define REF_PRINT_CSUM_HEADERS 0x2u /* --csum-headers: the checksum in block headers */
#define REF_PRINT_CSUM_ITEMS 0x4u   /* --csum-items: every checksum of EXTENT_CSUM items */

/* What item printing needs to know of the file system. */
struct ref_print_ctx {
	unsigned csum_type;
	uint32_t sectorsize;
	uint32_t nodesize;
	unsigned mode; /* REF_PRINT_* bits; 0 prints as dump-tree does by default */
};

void ref_print_uuid(FILE *out, const uint8_t *uuid);
/* "(FIRST_CHUNK_TREE CHUNK_ITEM 22020096)" */
void ref_print_key(FILE *out, const struct ref_key *key);
/* "ROOT_TREE", "FS_TREE", "256", ... as progs names tree owners. */
void ref_print_objectid_name(FILE *out, uint64_t objectid, uint8_t type);
/* The lines under "item N key (...) itemoff X itemsize Y", each starting with
 * two tabs, for any item type. */
void ref_print_item_body(FILE *out, const struct ref_print_ctx *ctx, const struct ref_key *key,
			 const uint8_t *data, uint32_t size);
/* The bodies of the volume's items (block groups, free space, chunks,
 * devices, quotas, uuid tree, balance, device stats and replace): the part of
 * ref_print_item_body for those types; prints nothing for other types. */
void ref_print_volume_item(FILE *out, const struct ref_print_ctx *ctx, const struct ref_key *key,
			   const uint8_t *data, uint32_t size);
/* A chunk item's lines (also used for the superblock's sys_chunk_array). */
void ref_print_chunk(FILE *out, const struct btrfs_chunk *c, uint32_t size);
/* A whole tree block of ctx->nodesize bytes: header lines, then every item
 * (leaf) or key pointer (node).  Reads nothing outside the block: a corrupt
 * nritems or item pointer stops the listing with progs' "ERROR: ..." /
 * "WARNING: ..." lines on stderr, as progs does. */
void ref_print_block(FILE *out, const struct ref_print_ctx *ctx, const uint8_t *block);
/* A superblock copy read from `bytenr` of device `dev`; full adds the
 * sys_chunk_array and backup roots.  Starts with the "superblock: bytenr=..."
 * line and the dashes; the empty line dump-super prints after each copy, and
 * its magic check, are the caller's. */
void ref_print_super(FILE *out, const struct btrfs_super_disk *sb, uint64_t bytenr,
		     const char *dev, bool full);

/* ---- Pieces, shared by ref/print*.c and usable on their own ---- */

/* "INODE_ITEM", "UNTYPED", "UNKNOWN.7", ... as progs names key types. */
void ref_print_key_type(FILE *out, uint64_t objectid, uint8_t type);
/* A btrfs_disk_key as progs' btrfs_print_key: "key (...)". */
void ref_print_disk_key(FILE *out, const struct btrfs_disk_key *key);
/* Block group and chunk type flags: "DATA|single", "METADATA|DUP", ...
 * into buf (64 bytes hold any). */
const char *ref_print_bg_flags(uint64_t flags, char *buf, size_t len);
/* "<prefix>SEC.NSEC (YYYY-MM-DD HH:MM:SS)<suffix>" in local time, from a
 * 12-byte struct btrfs_timespec. */
void ref_print_timespec(FILE *out, const void *ts, const char *prefix, const char *suffix);
/* A name of `len` bytes as progs prints it: at most BTRFS_NAME_LEN bytes, up to
 * the first NUL, the bytes themselves (progs v6.2 escapes nothing). */
void ref_print_name(FILE *out, const uint8_t *name, size_t len);
/* "\t\t(item truncated: N bytes, expected M)", after what of a short item
 * could be printed. */
void ref_print_truncated(FILE *out, uint64_t have, uint64_t want);

#endif
