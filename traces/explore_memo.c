/*
 * explore_memo.c - what judging a crash state found out of its disks alone
 * (struct judged: ref's mount, its check, the tree and subvolumes it shows),
 * kept by the volume's content identity (sim_volume_content_id), so that a
 * state whose disks an earlier state had is not mounted, checked and read
 * again.  The workloads of a campaign share their first operations (seq-2
 * pairs each first operation with every second one), and with them the
 * crash states of those operations: about half of seq-2's states.  The
 * verdict is not kept: it depends on the workload and the crash point, and
 * is made from the kept outcome each time (explore_judge.c).
 *
 * Bounded by a budget of bytes; the least recently used outcomes go first.
 */
#include "traces/explore_internal.h"

#include <stdlib.h>
#include <string.h>

struct memo_ent {
	uint64_t id[2];
	struct judged j;
	size_t bytes;
	struct memo_ent *hnext;      /* in its hash bucket */
	struct memo_ent *newer, *older; /* the use order */
};

struct explore_memo {
	struct memo_ent **tab;
	size_t cap, n; /* buckets (a power of two), entries */
	size_t bytes, budget;
	struct memo_ent *newest, *oldest;
};

void judged_free(struct judged *j)
{
	free(j->why);
	free(j->text);
	free(j->subv);
	free(j->subv_err);
	memset(j, 0, sizeof(*j));
}

struct explore_memo *explore_memo_new(size_t budget)
{
	struct explore_memo *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cap = 1024;
	m->tab = calloc(m->cap, sizeof(*m->tab));
	if (!m->tab) {
		free(m);
		return NULL;
	}
	m->budget = budget;
	return m;
}

void explore_memo_free(struct explore_memo *m)
{
	if (!m)
		return;
	for (struct memo_ent *e = m->newest, *next; e; e = next) {
		next = e->older;
		judged_free(&e->j);
		free(e);
	}
	free(m->tab);
	free(m);
}

static struct memo_ent **bucket(struct explore_memo *m, const uint64_t id[2])
{
	struct memo_ent **pp = &m->tab[id[0] & (m->cap - 1)];
	while (*pp && ((*pp)->id[0] != id[0] || (*pp)->id[1] != id[1]))
		pp = &(*pp)->hnext;
	return pp;
}

static void unlink_use(struct explore_memo *m, struct memo_ent *e)
{
	*(e->newer ? &e->newer->older : &m->newest) = e->older;
	*(e->older ? &e->older->newer : &m->oldest) = e->newer;
	e->newer = e->older = NULL;
}

static void link_newest(struct explore_memo *m, struct memo_ent *e)
{
	e->older = m->newest;
	e->newer = NULL;
	*(m->newest ? &m->newest->newer : &m->oldest) = e;
	m->newest = e;
}

static void drop(struct explore_memo *m, struct memo_ent *e)
{
	struct memo_ent **pp = bucket(m, e->id);
	*pp = e->hnext;
	unlink_use(m, e);
	m->bytes -= e->bytes;
	m->n--;
	judged_free(&e->j);
	free(e);
}

const struct judged *explore_memo_get(struct explore_memo *m, const uint64_t id[2],
				      bool need_subv)
{
	struct memo_ent *e = *bucket(m, id);
	if (!e || (need_subv && e->j.kind == JUDGED_TREE && !e->j.has_subv))
		return NULL;
	unlink_use(m, e);
	link_newest(m, e);
	return &e->j;
}

static size_t slen(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Twice the buckets when the table fills (a failed grow keeps the old one). */
static void grow(struct explore_memo *m)
{
	size_t cap = 2 * m->cap;
	struct memo_ent **tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return;
	for (size_t i = 0; i < m->cap; i++)
		for (struct memo_ent *e = m->tab[i], *next; e; e = next) {
			next = e->hnext;
			struct memo_ent **b = &tab[e->id[0] & (cap - 1)];
			e->hnext = *b;
			*b = e;
		}
	free(m->tab);
	m->tab = tab;
	m->cap = cap;
}

void explore_memo_put(struct explore_memo *m, const uint64_t id[2], struct judged *j)
{
	struct memo_ent *old = *bucket(m, id);
	if (old)
		drop(m, old);
	struct memo_ent *e = malloc(sizeof(*e));
	if (!e) {
		judged_free(j);
		return;
	}
	e->id[0] = id[0];
	e->id[1] = id[1];
	e->j = *j;
	memset(j, 0, sizeof(*j));
	e->bytes = sizeof(*e) + slen(e->j.why) + slen(e->j.text) + slen(e->j.subv) +
		   slen(e->j.subv_err);
	while (m->oldest && m->bytes + e->bytes > m->budget)
		drop(m, m->oldest);
	if (m->n >= m->cap)
		grow(m);
	struct memo_ent **b = &m->tab[id[0] & (m->cap - 1)];
	e->hnext = *b;
	*b = e;
	link_newest(m, e);
	m->bytes += e->bytes;
	m->n++;
}
