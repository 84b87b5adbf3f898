/* mutant.c - which deliberately broken build of ref this is (mutant.h), so
 * that --version and the runs a mutant records in the trace store say so. */
#include "ref/mutant.h"
#include "ref/ref.h"

#include <stddef.h>

const char *ref_mutant(void)
{
#ifdef BTRSIM_MUTANT
	static const char *const names[] = {
		[MUTANT_SKIP_FLUSH] = "skip-flush",	  [MUTANT_COW_IN_PLACE] = "cow-in-place",
		[MUTANT_SUPER_FIRST] = "super-first",	  [MUTANT_DROP_DIRTY] = "drop-dirty",
		[MUTANT_EARLY_REUSE] = "early-reuse",	  [MUTANT_SNAP_RW] = "snap-rw",
		[MUTANT_SNAP_NO_COMMIT] = "snap-no-commit", [MUTANT_QGROUP_NO_INHERIT] = "qgroup-no-inherit",
		[MUTANT_LOG_SUPER_FIRST] = "log-super-first", [MUTANT_LOG_NO_CSUM] = "log-no-csum",
		[MUTANT_LOG_NO_NAMES] = "log-no-names",	  [MUTANT_LOG_NO_HOLES] = "log-no-holes",
		[MUTANT_LOG_NO_DIR_RANGES] = "log-no-dir-ranges", [MUTANT_LOG_NO_UNLINK] = "log-no-unlink",
		[MUTANT_RECEIVE_EARLY] = "receive-early", [MUTANT_DEDUPE_NO_COMPARE] = "dedupe-no-compare",
	};
	_Static_assert(BTRSIM_MUTANT > 0 && BTRSIM_MUTANT < sizeof(names) / sizeof(names[0]),
		       "BTRSIM_MUTANT names no mutant of mutant.h");
	return names[BTRSIM_MUTANT];
#else
	return NULL;
#endif
}
