/*
 * fmount_nodes.c - the FUSE mount's nodes: the inodes the kernel holds a
 * nodeid of, found again by (subvolume, inode) so that one inode has one
 * nodeid while the kernel knows it (hard links, lookups after readdir).
 */
#include "traces/fmount_int.h"

#include <errno.h>
#include <stdlib.h>

static size_t bucket(const fmount *fm, const struct ref_ino *ino)
{
	uint64_t h = (ino->subvol * UINT64_C(0x9e3779b97f4a7c15)) ^ ino->ino;
	h ^= h >> 29;
	return (size_t)(h * UINT64_C(0xbf58476d1ce4e5b9) >> 20) & (fm->nbuckets - 1);
}

struct fm_node *fm_node(fmount *fm, fuse_ino_t id)
{
	return id == FUSE_ROOT_ID ? &fm->root : (struct fm_node *)(uintptr_t)id;
}

uint64_t fm_st_ino(const fmount *fm, const struct ref_ino *ino)
{
	return ino->subvol == fm->root.ino.subvol ? ino->ino : ino->subvol << 40 | ino->ino;
}

static bool same(const struct ref_ino *a, const struct ref_ino *b)
{
	return a->subvol == b->subvol && a->ino == b->ino;
}

static int grow(fmount *fm)
{
	size_t nb = fm->nbuckets ? 2 * fm->nbuckets : 1024;
	struct fm_node **b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	struct fm_node **old = fm->buckets;
	size_t on = fm->nbuckets;
	fm->buckets = b, fm->nbuckets = nb;
	for (size_t i = 0; i < on; i++)
		for (struct fm_node *n = old[i], *next; n; n = next) {
			next = n->next;
			size_t k = bucket(fm, &n->ino);
			n->next = b[k], b[k] = n;
		}
	free(old);
	return 0;
}

struct fm_node *fm_node_get(fmount *fm, const struct ref_ino *ino)
{
	if (same(ino, &fm->root.ino))
		return &fm->root;
	if (fm->nbuckets) {
		for (struct fm_node *n = fm->buckets[bucket(fm, ino)]; n; n = n->next)
			if (same(&n->ino, ino))
				return n;
	}
	if (fm->nnodes >= fm->nbuckets && grow(fm))
		return NULL;
	struct fm_node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->ino = *ino;
	n->indexed = true;
	n->next_all = fm->all;
	if (fm->all)
		fm->all->prev_all = n;
	fm->all = n;
	size_t k = bucket(fm, ino);
	n->next = fm->buckets[k], fm->buckets[k] = n;
	fm->nnodes++;
	return n;
}

static void unindex(fmount *fm, struct fm_node *n)
{
	if (!n->indexed)
		return;
	for (struct fm_node **p = &fm->buckets[bucket(fm, &n->ino)]; *p; p = &(*p)->next)
		if (*p == n) {
			*p = n->next;
			break;
		}
	n->indexed = false;
	fm->nnodes--;
}

static void maybe_free(fmount *fm, struct fm_node *n)
{
	if (n == &fm->root || n->nlookup || n->nopen)
		return;
	unindex(fm, n);
	if (n->prev_all)
		n->prev_all->next_all = n->next_all;
	else
		fm->all = n->next_all;
	if (n->next_all)
		n->next_all->prev_all = n->prev_all;
	free(n);
}

void fm_node_forget(fmount *fm, struct fm_node *n, uint64_t nlookup)
{
	n->nlookup = nlookup < n->nlookup ? n->nlookup - nlookup : 0;
	maybe_free(fm, n);
}

void fm_node_maybe_gone(fmount *fm, const struct ref_ino *ino)
{
	if (!fm->nbuckets || same(ino, &fm->root.ino))
		return;
	struct ref_stat st;
	if (ref_stat(fm->fs, ino, &st) != -ENOENT)
		return;
	for (struct fm_node *n = fm->buckets[bucket(fm, ino)]; n; n = n->next)
		if (same(&n->ino, ino)) {
			unindex(fm, n);
			return;
		}
}

void fm_nodes_free(fmount *fm)
{
	/* The kernel need not forget every node before the unmount. */
	for (struct fm_node *n = fm->all, *next; n; n = next) {
		next = n->next_all;
		free(n);
	}
	fm->all = NULL;
	free(fm->buckets);
	fm->buckets = NULL;
	fm->nbuckets = fm->nnodes = 0;
}
