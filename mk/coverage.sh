#!/bin/sh
# Collects gcov data from a coverage build after the tests ran, writes the lcov
# HTML report (lines, functions, branches) and prints a summary per folder.
# Usage: mk/coverage.sh BUILD_DIR REPORT_DIR
set -eu
B=$1
R=$2
RC="--rc lcov_branch_coverage=1"
mkdir -p "$R"
lcov -q $RC --capture --directory "$B" --base-directory . -o "$B/all.info" 2>/dev/null
lcov -q $RC --extract "$B/all.info" "$(pwd)/*" -o "$B/tmp.info" 2>/dev/null
lcov -q $RC --remove "$B/tmp.info" "*/tests/*" "*/bench/*" -o "$B/coverage.info" 2>/dev/null
genhtml -q $RC --branch-coverage --prefix "$(pwd)" -o "$R" "$B/coverage.info"
echo "coverage report: $R/index.html"
# Per folder, from the tracefile: LF/LH lines, FNF/FNH functions, BRF/BRH branches.
awk -v top="$(pwd)/" '
/^SF:/ { f = substr($0, 4); sub(top, "", f); split(f, p, "/"); dir = p[1] "/" }
/^LF:/ { lf[dir] += substr($0, 4) } /^LH:/ { lh[dir] += substr($0, 4) }
/^FNF:/ { ff[dir] += substr($0, 5) } /^FNH:/ { fh[dir] += substr($0, 5) }
/^BRF:/ { bf[dir] += substr($0, 5) } /^BRH:/ { bh[dir] += substr($0, 5) }
function pct(h, f) { return f ? sprintf("%5.1f%% (%d/%d)", 100 * h / f, h, f) : "    -" }
END {
	printf "%-8s %-22s %-22s %-22s\n", "folder", "lines", "functions", "branches"
	for (d in lf) { printf "%-8s %-22s %-22s %-22s\n", d, pct(lh[d], lf[d]), pct(fh[d], ff[d]), pct(bh[d], bf[d]); LF += lf[d]; LH += lh[d]; FF += ff[d]; FH += fh[d]; BF += bf[d]; BH += bh[d] }
	printf "%-8s %-22s %-22s %-22s\n", "total", pct(LH, LF), pct(FH, FF), pct(BH, BF)
}' "$B/coverage.info"
