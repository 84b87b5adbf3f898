/*
 * acl.c - POSIX ACLs, the xattrs system.posix_acl_access and
 * system.posix_acl_default, kept as Linux keeps them (fs/posix_acl.c and
 * btrfs_set_acl):
 *
 * - A value is the xattr form: a header (version 2, le32) and entries of
 *   (le16 tag, le16 perm, le32 id); an ACL is checked as posix_acl_valid
 *   checks it (EINVAL), a wrong version is EOPNOTSUPP, an empty value
 *   removes the ACL.  Stored normalised: the id of every entry but a named
 *   user or group is -1.
 * - An access ACL that says no more than the mode is not stored; setting
 *   one sets the mode's permission bits from it (posix_acl_update_mode).
 *   A default ACL goes on directories only (EACCES elsewhere); symlinks
 *   take neither (EOPNOTSUPP).
 * - chmod rewrites the access ACL's owner, group (or mask) and other
 *   entries (posix_acl_chmod).
 * - A new inode in a directory with a default ACL gets its permission bits
 *   masked by it and, unless that says no more than the mode, an access
 *   ACL; a new directory also gets the default ACL (posix_acl_create).
 *   A new subvolume's root takes nothing, as in the kernel.
 */
#include "ref/vfs/vfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#define ACL_VERSION 2
#define ACL_UNDEFINED_ID 0xffffffffu
enum { TAG_USER_OBJ = 1, TAG_USER = 2, TAG_GROUP_OBJ = 4, TAG_GROUP = 8, TAG_MASK = 0x10,
       TAG_OTHER = 0x20 };

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

struct acl {
	size_t n;
	struct acl_entry *e;
};

static const char ACCESS[] = "system.posix_acl_access";
static const char DEFAULT[] = "system.posix_acl_default";

bool acl_name(const char *name, bool *dflt)
{
	bool a = !strcmp(name, ACCESS), d = !strcmp(name, DEFAULT);
	if (dflt)
		*dflt = d;
	return a || d;
}

/* The ACL of an xattr value, as posix_acl_from_xattr and posix_acl_valid
 * read it; n 0 (and no error) for an empty one. */
static int acl_parse(ref_fs *fs, const uint8_t *v, size_t len, struct acl *out)
{
	out->n = 0;
	out->e = NULL;
	if (len < 4)
		return ref_fail(fs, EINVAL, "an ACL value is at least its 4-byte header");
	if (le32(v) != ACL_VERSION)
		return ref_fail(fs, EOPNOTSUPP, "ACL version %u (only 2 is known)", le32(v));
	if ((len - 4) % 8)
		return ref_fail(fs, EINVAL, "an ACL value is a header and 8-byte entries");
	out->n = (len - 4) / 8;
	if (!out->n)
		return 0;
	if (!(out->e = calloc(out->n, sizeof(*out->e))))
		return ref_fail(fs, ENOMEM, "out of memory");
	/* posix_acl_valid's walk: the owner, named users, the group, named
	 * groups, the mask (needed after a named entry), other, in that order */
	enum { S_OWNER, S_USERS, S_GROUPS, S_OTHER, S_DONE } state = S_OWNER;
	bool needs_mask = false;
	for (size_t i = 0; i < out->n; i++) {
		const uint8_t *p = v + 4 + 8 * i;
		struct acl_entry *e = &out->e[i];
		e->tag = le16(p);
		e->perm = le16(p + 2);
		e->id = le32(p + 4);
		bool ok;
		switch (e->tag) {
		case TAG_USER_OBJ:
			ok = state == S_OWNER;
			state = S_USERS;
			break;
		case TAG_USER:
			ok = state == S_USERS && e->id != ACL_UNDEFINED_ID;
			needs_mask = true;
			break;
		case TAG_GROUP_OBJ:
			ok = state == S_USERS;
			state = S_GROUPS;
			break;
		case TAG_GROUP:
			ok = state == S_GROUPS && e->id != ACL_UNDEFINED_ID;
			needs_mask = true;
			break;
		case TAG_MASK:
			ok = state == S_GROUPS;
			state = S_OTHER;
			break;
		case TAG_OTHER:
			ok = state == S_OTHER || (state == S_GROUPS && !needs_mask);
			state = S_DONE;
			break;
		default:
			ok = false;
		}
		if (e->tag != TAG_USER && e->tag != TAG_GROUP)
			e->id = ACL_UNDEFINED_ID;
		if (!ok || e->perm & ~7u || (state == S_DONE && i + 1 < out->n)) {
			unsigned tag = e->tag, perm = e->perm;
			free(out->e);
			out->e = NULL;
			return ref_fail(fs, EINVAL, "not a valid ACL (entry %zu, tag 0x%x perm %o)", i,
					tag, perm);
		}
	}
	if (state != S_DONE) {
		free(out->e);
		out->e = NULL;
		return ref_fail(fs, EINVAL, "not a valid ACL: it lacks an owner, group, other or mask entry");
	}
	return 0;
}

/* The xattr value of an ACL (free it), 4 + 8n bytes. */
static uint8_t *acl_value(const struct acl *a, size_t *len)
{
	*len = 4 + 8 * a->n;
	uint8_t *v = malloc(*len);
	if (!v)
		return NULL;
	uint32_t ver = htole32(ACL_VERSION);
	memcpy(v, &ver, 4);
	for (size_t i = 0; i < a->n; i++) {
		uint16_t tag = htole16(a->e[i].tag), perm = htole16(a->e[i].perm);
		uint32_t id = htole32(a->e[i].id);
		memcpy(v + 4 + 8 * i, &tag, 2);
		memcpy(v + 6 + 8 * i, &perm, 2);
		memcpy(v + 8 + 8 * i, &id, 4);
	}
	return v;
}

/* posix_acl_equiv_mode: the permission bits the ACL gives into *mode; true
 * when it says more than they can (named entries, a mask). */
static bool acl_beyond_mode(const struct acl *a, uint32_t *mode)
{
	uint32_t m = 0;
	bool beyond = false;
	for (size_t i = 0; i < a->n; i++) {
		uint32_t p = a->e[i].perm & 7;
		switch (a->e[i].tag) {
		case TAG_USER_OBJ:
			m |= p << 6;
			break;
		case TAG_GROUP_OBJ:
			m |= p << 3;
			break;
		case TAG_OTHER:
			m |= p;
			break;
		case TAG_MASK:
			m = (m & ~(uint32_t)S_IRWXG) | p << 3;
			beyond = true;
			break;
		default:
			beyond = true;
		}
	}
	*mode = (*mode & ~(uint32_t)0777) | m;
	return beyond;
}

/* The xattr name, in the inode's item: stored (value) or removed (NULL; none
 * there is no error, as the kernel's __btrfs_set_acl). */
static int store(ref_fs *fs, const struct ref_ino *ino, const char *name, const struct acl *a)
{
	if (!a) {
		int r = vfs_xattr_cut(fs, ino, name, strlen(name));
		return r == -ENODATA ? 0 : r;
	}
	size_t len;
	uint8_t *v = acl_value(a, &len);
	if (!v)
		return ref_fail(fs, ENOMEM, "out of memory");
	int r = vfs_xattr_put(fs, ino, name, strlen(name), v, len, 0);
	free(v);
	return r;
}

int acl_set(ref_fs *fs, const struct ref_ino *ino, struct btrfs_inode_item *ii, bool dflt,
	    const void *value, size_t len)
{
	uint32_t mode = inode_mode(ii);
	if (S_ISLNK(mode)) /* btrfs_symlink_inode_operations has no set_acl */
		return ref_fail(fs, EOPNOTSUPP, "symlinks have no ACLs");
	struct acl a = { 0, NULL };
	int r = value && len ? acl_parse(fs, value, len, &a) : 0;
	if (r)
		return r;
	if (dflt && !S_ISDIR(mode)) {
		free(a.e);
		return a.n ? ref_fail(fs, EACCES, "a default ACL goes on directories only") : 0;
	}
	bool keep = a.n > 0;
	if (!dflt && keep) {
		keep = acl_beyond_mode(&a, &mode);
		ii->mode = htole32(mode);
	}
	r = store(fs, ino, dflt ? DEFAULT : ACCESS, keep ? &a : NULL);
	free(a.e);
	return r;
}

/* The ACL stored under name, n 0 when none. */
static int load(ref_fs *fs, const struct ref_ino *ino, const char *name, struct acl *a)
{
	uint8_t *v = NULL;
	size_t len = 0;
	a->n = 0;
	a->e = NULL;
	int r = vfs_xattr_get(fs, ino, name, strlen(name), &v, &len);
	if (r == -ENODATA)
		return 0;
	if (!r)
		r = acl_parse(fs, v, len, a);
	free(v);
	if (r && r != -ENOMEM)
		r = ref_fail(fs, EIO, "the %s xattr holds no valid ACL", name);
	return r;
}

int acl_chmod(ref_fs *fs, const struct ref_ino *ino, uint32_t mode)
{
	struct acl a;
	int r = load(fs, ino, ACCESS, &a);
	if (r || !a.n)
		return r;
	/* posix_acl_chmod_masq: the mask stands for the group bits when there is one */
	bool mask = false;
	for (size_t i = 0; i < a.n; i++)
		mask |= a.e[i].tag == TAG_MASK;
	for (size_t i = 0; i < a.n; i++) {
		struct acl_entry *e = &a.e[i];
		if (e->tag == TAG_USER_OBJ)
			e->perm = (mode >> 6) & 7;
		else if (e->tag == (mask ? TAG_MASK : TAG_GROUP_OBJ))
			e->perm = (mode >> 3) & 7;
		else if (e->tag == TAG_OTHER)
			e->perm = mode & 7;
	}
	r = store(fs, ino, ACCESS, &a);
	free(a.e);
	return r;
}

int acl_inherit(ref_fs *fs, const struct ref_ino *dir, uint32_t *mode, struct acl_inherited *out)
{
	out->access = out->dflt = NULL;
	out->alen = out->dlen = 0;
	out->masked = false;
	if (S_ISLNK(*mode))
		return 0;
	struct acl a;
	int r = load(fs, dir, DEFAULT, &a);
	if (r || !a.n)
		return r;
	out->masked = true;
	if (S_ISDIR(*mode) && !(out->dflt = acl_value(&a, &out->dlen))) {
		free(a.e);
		return ref_fail(fs, ENOMEM, "out of memory");
	}
	/* posix_acl_create_masq */
	uint32_t m = *mode;
	struct acl_entry *group = NULL, *mask = NULL;
	bool beyond = false;
	for (size_t i = 0; i < a.n; i++) {
		struct acl_entry *e = &a.e[i];
		switch (e->tag) {
		case TAG_USER_OBJ:
			e->perm &= (m >> 6) & 7;
			m &= (uint32_t)e->perm << 6 | ~(uint32_t)S_IRWXU;
			break;
		case TAG_OTHER:
			e->perm &= m & 7;
			m &= e->perm | ~(uint32_t)S_IRWXO;
			break;
		case TAG_GROUP_OBJ:
			group = e;
			break;
		case TAG_MASK:
			mask = e;
			beyond = true;
			break;
		default:
			beyond = true;
		}
	}
	struct acl_entry *g = mask ? mask : group; /* (a valid ACL has a group entry) */
	g->perm &= (m >> 3) & 7;
	m &= (uint32_t)g->perm << 3 | ~(uint32_t)S_IRWXG;
	*mode = m;
	if (beyond && !(out->access = acl_value(&a, &out->alen))) {
		free(a.e);
		free(out->dflt);
		out->dflt = NULL;
		return ref_fail(fs, ENOMEM, "out of memory");
	}
	free(a.e);
	return 0;
}

int acl_inherit_store(ref_fs *fs, const struct ref_ino *ino, struct acl_inherited *in)
{
	int r = 0;
	if (in->dflt)
		r = vfs_xattr_put(fs, ino, DEFAULT, sizeof(DEFAULT) - 1, in->dflt, in->dlen, 0);
	if (!r && in->access)
		r = vfs_xattr_put(fs, ino, ACCESS, sizeof(ACCESS) - 1, in->access, in->alen, 0);
	acl_inherited_free(in);
	return r;
}

void acl_inherited_free(struct acl_inherited *in)
{
	free(in->access);
	free(in->dflt);
	in->access = in->dflt = NULL;
}
