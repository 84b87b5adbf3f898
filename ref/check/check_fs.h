/*
 * check_fs.h - the subvolume pass of the checker, shared by its files only:
 *   check_fs.c         the walk, inode items, refs, directory entries, xattrs, nlink
 *   check_fs_extent.c  file extents: item shape, overlaps, gaps, nbytes, symlinks
 *   check_fs_link.c    the table that pairs INODE_REF names with DIR_ITEM and DIR_INDEX
 */
#ifndef BTRSIM_REF_CHECK_FS_H
#define BTRSIM_REF_CHECK_FS_H

#include "ref/check/check.h"
#include "ref/tree/u64map.h"

/* The parts of one name seen so far. */
enum {
	FS_LINK_REF = 1,   /* INODE_REF or INODE_EXTREF of the inode */
	FS_LINK_ITEM = 2,  /* DIR_ITEM of the directory */
	FS_LINK_INDEX = 4, /* DIR_INDEX of the directory */
	FS_LINK_ALL = 7,
};

/* One name of an inode in a directory: (dir, ino, name).  Pending until its
 * three parts are seen, then checked and dropped. */
struct fs_link {
	uint64_t dir, ino;
	uint64_t hash;         /* the table's hash of (dir, ino, name) */
	uint64_t ref_index;    /* the index the INODE_REF/EXTREF gives */
	uint64_t ref_key_off;  /* key offset of that INODE_REF/EXTREF */
	uint64_t item_key_off; /* key offset of the DIR_ITEM */
	uint64_t index;        /* key offset of the DIR_INDEX */
	uint8_t seen;          /* FS_LINK_* */
	uint8_t ref_key_type;  /* BTRFS_INODE_REF_KEY or BTRFS_INODE_EXTREF_KEY */
	uint8_t ref_type;      /* BTRFS_FT_* of the inode's mode (0: unknown) */
	uint8_t item_type, index_type; /* BTRFS_FT_* in the DIR_ITEM and DIR_INDEX */
	uint16_t name_len;
	char name[];
};

/* Open addressing with linear probing and backward-shift deletion. */
struct fs_links {
	struct fs_link **slot;
	size_t cap, n;
};

/* The link for (dir, ino, name), created with nothing seen when absent; NULL
 * when out of memory.  len is 1..BTRFS_NAME_LEN. */
struct fs_link *fs_links_get(struct fs_links *t, uint64_t dir, uint64_t ino, const char *name,
			     uint16_t len);
/* Removes and frees l. */
void fs_links_remove(struct fs_links *t, struct fs_link *l);
/* Empties the table into a malloc'd array sorted by (dir, ino, name); the
 * caller frees each link and the array.  NULL with *n = 0 when empty; NULL
 * with *n != 0 when out of memory (the table is then left as it was). */
struct fs_link **fs_links_drain(struct fs_links *t, size_t *n);
void fs_links_free(struct fs_links *t);

/* What is known of the inode whose items are being walked. */
struct fs_inode {
	uint64_t ino;
	bool active;     /* some item of ino was seen */
	bool have_item;  /* a usable INODE_ITEM */
	bool bad_item;   /* an INODE_ITEM too short to read (already reported) */
	uint32_t mode, nlink;
	uint8_t type;    /* BTRFS_FT_* of mode, 0 when the mode is invalid */
	uint64_t size, nbytes, flags;
	uint64_t refs;       /* names in INODE_REF and INODE_EXTREF items */
	bool root_ref_ok;    /* the root directory's ".." reference to itself */
	uint64_t dir_size;   /* name bytes of its DIR_ITEM and DIR_INDEX entries */
	bool dir_entries;    /* has DIR_ITEM or DIR_INDEX items */
	bool said_not_dir;   /* "not a directory" reported */
	/* File extents, in key order. */
	uint64_t n_extents;
	uint64_t ext_end;    /* end of the extents so far (file offset) */
	uint64_t ext_bytes;  /* what nbytes should be */
	bool ext_bad;        /* an item too broken to account */
	bool has_inline;
	uint8_t inline_comp;
	uint64_t inline_ram;
	uint32_t inline_len;
	uint8_t inline_last; /* last byte of uncompressed inline data */
};

struct fs_check {
	struct check *ck;
	ref_fs *fs;
	struct ref_root root;
	uint64_t id;         /* the tree */
	uint64_t root_dirid; /* its root directory (256) */
	char name[24];       /* the tree as reports name it */
	uint32_t sectorsize;
	uint64_t gen_limit;  /* generations may not pass the superblock's + 1 */
	bool no_holes;
	struct u64map orphans; /* inodes with an ORPHAN_ITEM */
	bool orphans_unknown;  /* they could not be read: nlink 0 is not checked */
	struct fs_links links;
	struct fs_inode cur;
	bool root_dir_seen;
	bool oom;
	uint64_t inodes, extents, names;
};

/* One problem: "root N key (...): msg" when k is given, else "root N inode I: msg". */
void fs_report(struct fs_check *c, const struct ref_key *k, uint64_t ino, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* check_fs.c: a name for a report, quoted, bytes outside printable ASCII as
 * \xNN (buf of FS_QNAME_LEN); a BTRFS_FT_* value's name; the inode numbers. */
#define FS_QNAME_LEN (BTRFS_NAME_LEN * 4 + 8)
const char *fs_qname(char *buf, size_t len, const char *name, size_t n);
const char *fs_ft_name(uint8_t type);
bool fs_is_inode_number(uint64_t ino);

/* check_fs_link.c: one part of a name (FS_LINK_REF, _ITEM or _INDEX) from the
 * item at k; checked and dropped once its three parts are in. */
void fs_add_link(struct fs_check *c, unsigned part, const struct ref_key *k, uint64_t dir,
		 uint64_t ino, const char *name, uint16_t len, uint64_t index, uint8_t type);
/* The names still missing a part, at the end of the walk. */
void fs_report_links(struct fs_check *c);

/* check_fs_extent.c */
void fs_file_extent(struct fs_check *c, const struct ref_key *k, const uint8_t *data,
		    uint32_t size);
/* The checks of a regular file's or symlink's extents once all are seen. */
void fs_extents_done(struct fs_check *c, bool orphan);

#endif
