# mk/progress.sh - one progress line on stderr for the long-running scripts
# (mk/fuzz-run.sh, mk/coverage.sh --corpus, bench/*.sh), sourced by them, in
# the look of `btrsim explore` and `btrsim campaign`'s lines:
#
#     LABEL: DONE/TOTAL UNIT (RATE/s), ..., ETA E s
#
# redrawn in place (\r, then the rest of the old line erased) and cleared at
# the end, so that nothing of it stays in the terminal's scrollback.  It is
# drawn only when stderr is a terminal; BTRSIM_PROGRESS=1 draws it anyway
# (the tests: tests/cli/test_progress.sh), BTRSIM_PROGRESS=0 never.
#
#   progress_init LABEL      decide whether to draw, start the clock
#   progress_elapsed         seconds since progress_init (one decimal)
#   progress_eta DONE TOTAL  seconds left at the pace so far; empty while DONE is 0
#   progress_line TEXT       draw "LABEL: TEXT" over the last line
#   progress_count DONE TOTAL UNIT [MORE]
#                            "DONE/TOTAL UNIT (R/s)[, MORE][, ETA E s]"
#   progress_steps DONE TOTAL [NOW]
#                            "DONE/TOTAL steps[, NOW][, ETA E s]"
#   progress_clear           erase the line (before any other output, and at the end)
#   progress_echo TEXT...    progress_clear, then TEXT on stdout (the results)
#
# The drawing functions do nothing when the line is not drawn (PROGRESS_ON=0),
# so that callers need no test of their own.  The rate is "%.1f" below 10/s,
# "%.0f" above.  POSIX sh; date +%s.%N and awk.

PROGRESS_ON=0
PROGRESS_LABEL=""
PROGRESS_T0=0
PROGRESS_SHOWN=0

progress_init() {
	PROGRESS_LABEL=${1:-}
	PROGRESS_SHOWN=0
	case ${BTRSIM_PROGRESS:-} in
	1) PROGRESS_ON=1 ;;
	0) PROGRESS_ON=0 ;;
	*) if [ -t 2 ]; then PROGRESS_ON=1; else PROGRESS_ON=0; fi ;;
	esac
	PROGRESS_T0=$(date +%s.%N)
}

progress_elapsed() {
	awk -v t0="$PROGRESS_T0" -v t="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", t - t0 }'
}

progress_eta() {
	awk -v d="$1" -v n="$2" -v e="$(progress_elapsed)" \
		'BEGIN { if (d > 0) printf "%.0f\n", (n > d ? e / d * (n - d) : 0) }'
}

progress_line() {
	[ "$PROGRESS_ON" = 1 ] || return 0
	# \033[K: erase what is left of a longer earlier line.
	printf '\r%s%s\033[K' "${PROGRESS_LABEL:+$PROGRESS_LABEL: }" "$1" >&2
	PROGRESS_SHOWN=1
}

progress_count() {
	[ "$PROGRESS_ON" = 1 ] || return 0
	_p=$(awk -v d="$1" -v n="$2" -v e="$(progress_elapsed)" 'BEGIN {
		r = e > 0 ? d / e : 0
		printf (r < 10 ? "%.1f/s" : "%.0f/s"), r
		if (d > 0) printf ", ETA %.0f s", (n > d ? e / d * (n - d) : 0) }')
	progress_line "$1/$2 $3 (${_p%%,*})${4:+, $4}${_p#"${_p%%,*}"}"
}

progress_steps() {
	[ "$PROGRESS_ON" = 1 ] || return 0
	_e=$(progress_eta "$1" "$2")
	progress_line "$1/$2 steps${3:+, $3}${_e:+, ETA $_e s}"
}

progress_clear() {
	[ "$PROGRESS_SHOWN" = 1 ] || return 0
	printf '\r\033[K' >&2
	PROGRESS_SHOWN=0
}

progress_echo() {
	progress_clear
	printf '%s\n' "$*"
}
