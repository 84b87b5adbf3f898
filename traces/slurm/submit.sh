#!/bin/sh
# submit.sh - a btrsim campaign or fuzzing campaign on a Slurm cluster: an
# array job of TASKS tasks, then the merge job, which waits for the whole
# array (afterany: a task that found violations still leaves its store).
# Prints the two job ids.  With --wait, returns when the merge has ended,
# with its exit status.
#   traces/slurm/submit.sh [--wait] campaign TASKS OUT BTRSIM CAMPAIGN-ARGS...
#   traces/slurm/submit.sh [--wait] fuzz TASKS OUT HARNESS SECONDS
# OUT must be on storage every node sees.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WAIT=""
[ "${1:-}" = --wait ] && { WAIT=--wait; shift; }
KIND=${1:?usage: submit.sh [--wait] campaign|fuzz TASKS OUT ...}
TASKS=${2:?} OUT=${3:?}
shift 3
case $TASKS in '' | *[!0-9]* | 0) echo "submit.sh: TASKS=$TASKS is not a number above 0" >&2; exit 2 ;; esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
case $KIND in
campaign)
	BTRSIM=${1:?usage: submit.sh campaign TASKS OUT BTRSIM CAMPAIGN-ARGS...}
	shift
	array=$(sbatch --parsable --array=0-$((TASKS - 1)) --output="$OUT/slurm-%A_%a.log" \
		"$HERE/campaign.sbatch" "$BTRSIM" "$OUT" "$@")
	set --
	;;
fuzz)
	H=${1:?usage: submit.sh fuzz TASKS OUT HARNESS SECONDS} SECS=${2:?}
	BTRSIM=$ROOT/build/debug/btrsim
	array=$(sbatch --parsable --array=0-$((TASKS - 1)) --output="$OUT/slurm-%A_%a.log" \
		"$HERE/fuzz.sbatch" "$ROOT" "$H" "$SECS" "$OUT/sync" "$OUT")
	set -- "$H" "$OUT/sync"
	;;
*) echo "submit.sh: campaign or fuzz, not '$KIND'" >&2; exit 2 ;;
esac
array=${array%%;*}
echo "array job $array"
merge=$(sbatch --parsable $WAIT --dependency=afterany:"$array" --output="$OUT/slurm-merge-%j.log" \
	"$HERE/merge.sbatch" "$BTRSIM" "$OUT" "$@")
echo "merge job ${merge%%;*}"
