/*
 * rset.c - a sorted set of disjoint byte ranges: free space per block group
 * and the pinned extents of a transaction.  A sorted array: lookups are
 * binary searches, changes move the tail.
 */
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

/* The first range whose end is > start. */
static size_t first_after(const struct rset *s, uint64_t start)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->r[mid][1] <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int grow(struct rset *s, size_t need)
{
	if (need <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap * 2 : 16;
	while (cap < need)
		cap *= 2;
	void *p = realloc(s->r, cap * sizeof(*s->r));
	if (!p)
		return -ENOMEM;
	s->r = p;
	s->cap = cap;
	return 0;
}

int rset_add(struct rset *s, uint64_t start, uint64_t len)
{
	if (!len)
		return 0;
	uint64_t end = start + len;
	/* Ranges touching or overlapping [start, end) merge into one. */
	size_t i = first_after(s, start);
	if (i > 0 && s->r[i - 1][1] == start)
		i--;
	size_t j = i;
	uint64_t covered = 0;
	while (j < s->n && s->r[j][0] <= end) {
		uint64_t a = s->r[j][0] > start ? s->r[j][0] : start;
		uint64_t b = s->r[j][1] < end ? s->r[j][1] : end;
		if (b > a)
			covered += b - a;
		if (s->r[j][0] < start)
			start = s->r[j][0];
		if (s->r[j][1] > end)
			end = s->r[j][1];
		j++;
	}
	s->bytes += len - covered;
	if (j == i) {
		if (grow(s, s->n + 1))
			return -ENOMEM;
		memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
		s->n++;
	} else if (j > i + 1) {
		memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof(*s->r));
		s->n -= j - i - 1;
	}
	s->r[i][0] = start;
	s->r[i][1] = end;
	return 0;
}

int rset_remove(struct rset *s, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;
	size_t i = first_after(s, start);
	while (i < s->n && s->r[i][0] < end) {
		uint64_t a = s->r[i][0], b = s->r[i][1];
		uint64_t ca = a > start ? a : start, cb = b < end ? b : end;
		s->bytes -= cb - ca;
		if (a < start && b > end) { /* split in two */
			if (grow(s, s->n + 1))
				return -ENOMEM;
			memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
			s->n++;
			s->r[i][1] = start;
			s->r[i + 1][0] = end;
			return 0;
		}
		if (a < start) {
			s->r[i][1] = start;
			i++;
		} else if (b > end) {
			s->r[i][0] = end;
			return 0;
		} else {
			memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof(*s->r));
			s->n--;
		}
	}
	return 0;
}

bool rset_contains(const struct rset *s, uint64_t start, uint64_t len)
{
	size_t i = first_after(s, start);
	return i < s->n && s->r[i][0] <= start && s->r[i][1] >= start + len;
}

void rset_free(struct rset *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}
