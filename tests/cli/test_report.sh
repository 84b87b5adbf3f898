#!/bin/sh
# btrsim report: the HTML report of a trace database. A database with a
# campaign, an explore run under a fault plan, a violation (from the
# skip-flush mutant when `make mutants` built it, and one inserted with
# sqlite3 whose text needs escaping), fuzzing rows; the report's files, its
# sections, its images, well-formed SVG, escaping, the replay command it shows,
# determinism, the caps on long tables; bad input refused in one line; and the
# page rendered by headless Chromium with every image loaded.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BTRSIM in /*) ;; *) BTRSIM="$(pwd)/$BTRSIM" ;; esac
cd "$T" || exit 1 # no build/coverage/coverage.info here: no coverage unless named
db="$T/r.db"
SECTIONS="summary crash-states violations fault-points fuzzing raid-campaign coverage"
HEADINGS="Campaign summary|Crash states per workload and per epoch|Violations and their reproducers|Fault points hit|Fuzzing|RAID fault campaign|Coverage"

cat >"$T/w.wl" <<'W'
mkdir /d
create /d/a
write /d/a 0 20000 1
fsync /d/a
create /d/b
sync
rename /d/b /d/c
fsync /d
W

run report-db-campaign 0 "$BTRSIM" campaign --seq 1 --ops create,link --max-subset 3 --samples 2 --db "$db"
out_has ' 0 violations'
done_check
run report-db-faults 0 "$BTRSIM" explore --max-subset 3 --samples 2 \
	--faults "$ROOT/faults/plans/commit-eio.plan" --db "$db" "$T/w.wl"
out_has 'recorded as run'
done_check

M=${REPORT_MUTANT:-$ROOT/build/mutants/btrsim-skip-flush} # the skip-flush mutant (make mutants)
mutant=0
if [ ! -x "$M" ]; then
	echo "SKIP report-db-mutant: no $M (make mutants builds it; make test does)"
else
	"$M" explore --max-subset 3 --samples 2 --db "$db" "$T/w.wl" >"$T/m.out" 2>"$T/m.err"
	rc=$?
	if grep -q 'is newer than this btrsim knows' "$T/m.err"; then
		echo "SKIP report-db-mutant: $M is older than the trace store (make mutants rebuilds it)"
	else
		NAME=report-db-mutant
		BAD=0
		[ $rc -eq 1 ] || fail "the mutant's explore exited $rc: $(head -c 200 "$T/m.err")"
		grep -q 'recorded as run' "$T/m.out" || fail "the mutant's run was not recorded"
		done_check
		mutant=1
	fi
fi

if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "SKIP report: no sqlite3 (make deps installs it)"
	exit 0
fi
# A violation whose text must be escaped, on run 2 (a campaign run), its last crash state.
vk=$(sq "$db" 'SELECT max(k) FROM crash_states WHERE run_id = 2')
sq "$db" <<SQL
INSERT INTO violations (run_id, description, state_k, point, picks, verdict, reproducer)
VALUES (2, 'crash state $vk: oracle: /A/foo: expected <file> & "x", found nothing', $vk,
  (SELECT point FROM crash_states WHERE run_id = 2 AND k = $vk), '0:-', 'oracle',
  '# btrsim reproducer: <script>alert(1)</script>
mkdir /A
create /A/foo
');
INSERT INTO fuzz_stats (harness, at, elapsed, execs, execs_per_sec, corpus, crashes, hangs) VALUES
 ('image', '2026-12-01T10:00:00Z', 0, 0, 0, 10, 0, 0),
 ('image', '2026-12-01T10:10:00Z', 600, 600000, 1000, 50, 1, 0),
 ('image', '2026-12-01T10:20:00Z', 1200, 1300000, 1166, 80, 2, 0),
 ('workload', '2026-12-01T10:00:00Z', 0, 0, 0, 5, 0, 0),
 ('workload', '2026-12-01T10:20:00Z', 1200, 420000, 350, 60, 0, 1);
INSERT INTO findings (harness, found, kind, signal, stack_hash, stack, input, fixed) VALUES
 ('image', '2026-12-01T10:05:00Z', 'crash', 'SIGSEGV', 'aaaa', 'ref_read_node <ref/x.c:1>', x'00', 0),
 ('image', '2026-12-01T10:15:00Z', 'crash', 'SIGABRT', 'bbbb', 'assert', x'01', 1),
 ('workload', '2026-12-01T10:12:00Z', 'hang', NULL, 'cccc', NULL, x'02', 0);
SQL
cat >"$T/cov.info" <<'I'
TN:
SF:/src/btrsim/ref/a.c
FNF:4
FNH:3
LF:100
LH:80
BRF:10
BRH:5
end_of_record
SF:/src/btrsim/sim/b.c
LF:50
LH:50
end_of_record
I
cp "$db" "$T/r.orig"

R="$T/rep"
run report-write 0 "$BTRSIM" report --db "$db" -o "$R" --coverage "$T/cov.info"
out_has "^report: $R/index.html\$"
err_empty
for f in index.html states-per-workload.svg verdicts-per-epoch.svg fault-points.svg \
	fuzz-execs.svg fuzz-findings.svg coverage.svg; do
	[ -s "$R/$f" ] || fail "no $R/$f"
done
ls -a "$R" | grep -q '\.tmp$' && fail "temporary files left: $(ls -a "$R" | tr '\n' ' ')"
cmp -s "$db" "$T/r.orig" || fail "the report changed the database"
done_check

NAME=report-sections
BAD=0
for s in $SECTIONS; do
	grep -q "<section id=\"$s\">" "$R/index.html" || fail "no section $s"
	grep -q "href=\"#$s\"" "$R/index.html" || fail "no link to section $s"
done
n=$(grep -cE "<h2>[0-9]\. ($HEADINGS)</h2>" "$R/index.html")
[ "$n" -eq 7 ] || fail "$n section headings, expected 7"
done_check

NAME=report-images
BAD=0
srcs=$(grep -oE '<(img|object)[^>]* (src|data)="[^"]*"' "$R/index.html" | sed 's/.*"\([^"]*\)"$/\1/')
[ "$(echo "$srcs" | grep -c .)" -eq 7 ] || fail "expected 7 images, found: $(echo $srcs)"
for s in $srcs; do
	case $s in */* | *:*) fail "image $s is not a file beside the page" ;; esac
	[ -s "$R/$s" ] || fail "image $s does not exist"
done
grep -qiE '<script|<link|https?:|@import|url\(' "$R/index.html" && fail "the page loads or runs something"
grep -l 'href' "$R"/*.svg >/dev/null 2>&1 && fail "an SVG links elsewhere"
done_check

NAME=report-svg-well-formed
BAD=0
for s in "$R"/*.svg; do
	if command -v xmllint >/dev/null 2>&1; then
		xmllint --noout "$s" 2>"$T/xml.err" || fail "$(basename "$s"): $(head -c 200 "$T/xml.err")"
	else
		head -c 40 "$s" | grep -q '^<?xml' || fail "$(basename "$s") does not start as XML"
		tail -n 1 "$s" | grep -q '^</svg>$' || fail "$(basename "$s") does not end in </svg>"
		[ "$(grep -c '<svg' "$s")" -eq 1 ] || fail "$(basename "$s"): not one <svg>"
	fi
	grep -q '<title>' "$s" || fail "$(basename "$s") has no title"
done
grep -q '<text[^>]*>Crash states per workload</text>' "$R/states-per-workload.svg" || fail "no plot title"
grep -q '<rect[^>]* fill="#2ca02c"' "$R/verdicts-per-epoch.svg" || fail "no ok bars per epoch"
# The verdicts as shares per epoch too (a 3% verdict must show), and why the
# epochs start where they do (issue 18).
grep -q '<img[^>]*src="verdict-shares-per-epoch.svg"' "$R/index.html" || fail "no shares chart"
grep -q '<text[^>]*>100%</text>' "$R/verdict-shares-per-epoch.svg" || fail "the shares chart does not go to 100%"
grep -q 'The charts start at epoch [1-9][0-9]*: the epochs before it are those of mkfs' "$R/index.html" ||
	fail "the first epoch is not explained"
grep -q '<polyline' "$R/fuzz-execs.svg" || fail "no execs/s line"
grep -q '>image</text>' "$R/fuzz-findings.svg" || fail "no harness in the findings legend"
done_check

NAME=report-content
BAD=0
page="$R/index.html"
grep -q '<code>btrsim campaign --seq 1 --ops create,link --max-subset 3 --samples 2 --db ' "$page" ||
	fail "the campaign's command is not shown"
grep -q 'ref/commit/flush nth=2 errno=EIO' "$page" || fail "the explore run's fault plan is not shown"
grep -qE '<tr><td><code>ref/commit/flush</code></td><td class="n">1</td><td class="n">[1-9][0-9]*</td><td class="n">1</td></tr>' "$page" ||
	fail "fault point ref/commit/flush not listed with its hits"
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$page" || fail "the reproducer is not escaped"
grep -q 'alert(1)</script>' "$page" && fail "raw text from the database in the page"
grep -q 'expected &lt;file&gt; &amp; &quot;x&quot;' "$page" || fail "the description is not escaped"
grep -q "btrsim replay --db $db 2 --crash-state $vk --out crash-" "$page" || fail "no replay command"
grep -q '<td>image</td>' "$page" || fail "no fuzzing harness"
grep -q 'No coverage data' "$page" && fail "the coverage file was not read"
grep -q '<td>ref/</td><td class="n">80.0% (80/100)</td><td class="n">75.0% (3/4)</td><td class="n">50.0% (5/10)</td>' "$page" ||
	fail "coverage of ref/ wrong"
nv=$(sq "$db" 'SELECT count(*) FROM violations')
[ $mutant -eq 0 ] || [ "$nv" -ge 2 ] || fail "the mutant's violation was not recorded"
[ "$(grep -c 'id="violation-' "$page")" -eq "$nv" ] || fail "not $nv violations shown"
done_check

# The crash-state command the page shows rebuilds the state's images.
cmdline=$(grep -o "btrsim replay --db $db 2 --crash-state $vk --out crash-[0-9]*" "$page" | head -n 1)
run report-replay-command 0 sh -c "cd '$T' && '$BTRSIM' ${cmdline#btrsim }"
[ -s "$T/crash-${cmdline##*crash-}/disk0.img" ] || fail "the replay command wrote no disk0.img"
done_check

run report-deterministic 0 "$BTRSIM" report --db "$db" -o "$T/rep2" --coverage "$T/cov.info"
for f in "$R"/*; do
	cmp -s "$f" "$T/rep2/$(basename "$f")" || fail "$(basename "$f") differs between two reports"
done
done_check

run report-campaign 0 "$BTRSIM" report --db "$db" -o "$T/rep-c1" --campaign 1
grep -q 'campaign 1 only' "$T/rep-c1/index.html" || fail "not restricted to campaign 1"
grep -q 'Runs outside a campaign' "$T/rep-c1/index.html" && fail "lists the runs outside campaign 1"
grep -q 'No coverage data: run <code>make coverage</code>' "$T/rep-c1/index.html" ||
	fail "no 'no coverage data' without a coverage file"
done_check
run report-no-campaign 1 "$BTRSIM" report --db "$db" -o "$T/rep-c9" --campaign 9
err_has 'campaign 9: no such campaign'
err_lines 1
[ -e "$T/rep-c9" ] && fail "made the directory anyway"
done_check

# Long tables are cut at 200 rows, 50 violations are shown whole, and both say so.
cp "$db" "$T/many.db"
sq "$T/many.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 260)
  INSERT INTO violations (run_id, description, state_k, verdict) SELECT 3, 'v' || i, 0, 'check' FROM n;"
run report-caps 0 "$BTRSIM" report --db "$T/many.db" -o "$T/rep-many"
nv=$(sq "$T/many.db" 'SELECT count(*) FROM violations')
grep -q "$((nv - 200)) more violations left out: the table shows 200 of $nv" "$T/rep-many/index.html" ||
	fail "the violations table does not say what it left out"
[ "$(grep -c 'id="violation-' "$T/rep-many/index.html")" -eq 50 ] || fail "not 50 violations shown whole"
done_check

# Bad input: one line, exit 1, nothing changed.
run report-missing-db 1 "$BTRSIM" report --db "$T/none.db" -o "$T/x"
err_has 'none.db: no such trace database'
err_lines 1
[ -e "$T/none.db" ] && fail "created the database"
[ -e "$T/x" ] && fail "made the directory"
done_check
head -c 8192 /dev/urandom >"$T/junk.db"
cp "$T/junk.db" "$T/junk.orig"
run report-junk-db 1 "$BTRSIM" report --db "$T/junk.db" -o "$T/x"
err_has 'junk.db: not an SQLite trace database'
err_lines 1
cmp -s "$T/junk.db" "$T/junk.orig" || fail "the file was changed"
done_check
sq "$T/foreign.db" 'CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES (1);'
cp "$T/foreign.db" "$T/foreign.orig"
run report-foreign-db 1 "$BTRSIM" report --db "$T/foreign.db" -o "$T/x"
err_has 'foreign.db: not a btrsim trace database'
err_lines 1
cmp -s "$T/foreign.db" "$T/foreign.orig" || fail "the foreign database was changed"
done_check
sq "$T/v8.db" 'PRAGMA user_version = 8; CREATE TABLE runs (id INTEGER PRIMARY KEY);'
run report-v8-without-tables 1 "$BTRSIM" report --db "$T/v8.db" -o "$T/x"
err_has 'v8.db: not a btrsim trace database of version 8 \(no such table: '
err_lines 1
done_check
sq "$T/new.db" 'PRAGMA user_version = 99'
run report-newer-db 1 "$BTRSIM" report --db "$T/new.db" -o "$T/x"
err_has 'version 99 is newer than this btrsim knows'
err_lines 1
done_check
run report-db-is-dir 1 "$BTRSIM" report --db "$T" -o "$T/x"
err_lines 1
done_check

# A version-1 database (the first schema, without the v3 tables) is migrated
# on open, as by every reading command, and reported; into the directory of
# the full report, whose plots it has no data for are removed.
sq "$T/v1.db" <<'SQL'
CREATE TABLE workloads (id INTEGER PRIMARY KEY, hash TEXT UNIQUE NOT NULL, text TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, seed INTEGER, build TEXT,
  config TEXT, workload_id INTEGER REFERENCES workloads(id), started TEXT, ended TEXT,
  ops INTEGER, crash_points INTEGER, states INTEGER, violations INTEGER, seconds REAL,
  status INTEGER);
CREATE TABLE violations (id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id),
  description TEXT NOT NULL);
CREATE INDEX violations_run ON violations(run_id);
INSERT INTO workloads VALUES (1, 'abcdef0123456789', 'sync');
INSERT INTO runs VALUES (1, 'explore', 1, 'v0', 'max-subset=10', 1, '2026-01-01T00:00:00Z',
  '2026-01-01T00:00:01Z', 1, 1, 3, 0, 0.1, 0);
PRAGMA user_version = 1;
SQL
cp -r "$R" "$T/rep-v1"
run report-v1-migrated 0 "$BTRSIM" report --db "$T/v1.db" -o "$T/rep-v1"
grep -q '<td>abcdef012345</td>' "$T/rep-v1/index.html" || fail "the version-1 run is not listed"
grep -q 'states not recorded' "$T/rep-v1/index.html" || fail "its missing crash states are not said"
grep -q 'No fuzzing recorded' "$T/rep-v1/index.html" || fail "no 'no fuzzing recorded'"
grep -q 'No coverage data' "$T/rep-v1/index.html" || fail "no 'no coverage data'"
for f in fuzz-execs.svg fuzz-findings.svg fault-points.svg verdicts-per-epoch.svg coverage.svg; do
	[ -e "$T/rep-v1/$f" ] && fail "a stale $f is left"
done
[ "$(sq "$T/v1.db" 'PRAGMA user_version')" = 8 ] || fail "not migrated"
done_check

: >"$T/afile"
run report-out-is-file 1 "$BTRSIM" report --db "$db" -o "$T/afile"
err_has 'afile: Not a directory'
err_lines 1
done_check
run report-bad-coverage 1 "$BTRSIM" report --db "$db" -o "$T/x" --coverage "$T/junk.db"
err_has 'junk.db'
err_lines 1
[ -e "$T/x" ] && fail "made the directory"
done_check
run report-missing-coverage 1 "$BTRSIM" report --db "$db" -o "$T/x" --coverage "$T/none.info"
err_has 'none.info: No such file or directory'
err_lines 1
done_check
run report-no-output 2 "$BTRSIM" report --db "$db"
err_has 'give the report.s directory: -o DIR'
done_check
run report-bad-campaign 2 "$BTRSIM" report --db "$db" -o "$T/x" --campaign abc
done_check
run report-operand 2 "$BTRSIM" report --db "$db" -o "$T/x" extra
done_check
run report-help 0 "$BTRSIM" report --help
out_has '^usage: btrsim report \[--db FILE\] -o DIR'
done_check

# The page in a browser: headless Chromium renders it, its DOM holds every
# heading, a screenshot is written, and (through a test page with a script,
# the report has none) every image loaded and decoded.
CHROMIUM=""
for c in chromium chromium-browser google-chrome; do
	command -v "$c" >/dev/null 2>&1 && CHROMIUM=$c && break
done
if [ -z "$CHROMIUM" ]; then
	echo "SKIP report-chromium: chromium is not installed (make deps installs the Debian package chromium)"
	exit 0
fi
if ! command -v timeout >/dev/null 2>&1; then
	echo "SKIP report-chromium: no timeout(1)"
	exit 0
fi
chrome() {
	HOME="$T" timeout 180 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--no-first-run --user-data-dir="$T/chrome-profile" "$@"
}
# Lines of Chromium's log about the page (its own D-Bus and GPU noise is not).
page_errors() {
	grep -E 'Failed to load|ERR_|CONSOLE|ERROR' "$1" | grep -E 'file://|index\.html|\.svg|CONSOLE' | head -n 3
}

run report-chromium-dom 0 chrome --enable-logging=stderr --v=0 --dump-dom "file://$R/index.html"
for s in $SECTIONS; do
	grep -q "<section id=\"$s\">" "$OUT" || fail "the DOM has no section $s"
done
n=$(grep -cE "<h2>[0-9]\. ($HEADINGS)</h2>" "$OUT")
[ "$n" -eq 7 ] || fail "the DOM has $n of the 7 section headings"
e=$(page_errors "$ERR")
[ -n "$e" ] && fail "errors about the page: $e"
done_check

run report-chromium-screenshot 0 chrome --window-size=1280,3000 --screenshot="$T/shot.png" "file://$R/index.html"
[ -s "$T/shot.png" ] || fail "no screenshot written"
[ "$(head -c 4 "$T/shot.png" | od -An -c | tr -d ' \n')" = '211PNG' ] || fail "the screenshot is not a PNG"
done_check

cat >"$T/check.html" <<EOF
<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>check</title></head><body>
<pre id="out">pending</pre>
<iframe id="f" src="file://$R/index.html" width="1200" height="900"></iframe>
<script>
var f = document.getElementById('f');
f.onload = function () {
  var out = ['checked'];
  try {
    var d = f.contentDocument, imgs = d.images;
    out.push('images ' + imgs.length);
    for (var i = 0; i < imgs.length; i++)
      out.push((imgs[i].complete && imgs[i].naturalWidth > 0 ? 'loaded ' : 'FAILED ') +
               imgs[i].getAttribute('src'));
    var hs = d.querySelectorAll('section > h2');
    out.push('headings ' + hs.length);
  } catch (e) { out.push('ERROR ' + e); }
  out.push('end');
  document.getElementById('out').textContent = out.join('\n');
};
</script></body></html>
EOF
run report-chromium-images 0 chrome --allow-file-access-from-files --virtual-time-budget=20000 \
	--dump-dom "file://$T/check.html"
out_has '<pre id="out">checked$'
out_has '^images 7$'
out_has '^headings 7$'
grep -qE '^(FAILED|ERROR) ' "$OUT" && fail "$(grep -m 3 -E '^(FAILED|ERROR) ' "$OUT" | tr '\n' ' ')"
[ "$(grep -c '^loaded ' "$OUT")" -eq 7 ] || fail "not 7 images loaded"
done_check
