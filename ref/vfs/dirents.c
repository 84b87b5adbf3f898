/*
 * dirents.c - a directory's entries read whole into an array of name copies
 * (ref_readdir underneath), for the walkers of whole trees: the commands ls,
 * extract, manifest and rm -r, and the crash oracle's view of a recovered
 * file system.
 */
#include "ref/ref.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int add(void *ctx, const struct ref_dirent *de)
{
	struct ref_dentries *d = ctx;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct ref_dentry *p = realloc(d->e, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->e = p;
		d->cap = cap;
	}
	char *name = malloc(de->len + 1); /* not strndup: the name has no NUL to stop at */
	if (!name)
		return -ENOMEM;
	memcpy(name, de->name, de->len);
	name[de->len] = 0;
	d->e[d->n++] = (struct ref_dentry){ name, de->len, de->ino, de->type };
	return 0;
}

int ref_dentries_read(ref_fs *fs, const struct ref_ino *dir, struct ref_dentries *out)
{
	*out = (struct ref_dentries){ 0 };
	return ref_readdir(fs, dir, add, out);
}

void ref_dentries_free(struct ref_dentries *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].name);
	free(d->e);
	*d = (struct ref_dentries){ 0 };
}
