#!/bin/sh
# sqlite_check.sh DB TXS ROWS: after a crash, in the mount: DB passes PRAGMA integrity_check, holds
# whole transactions (ROWS rows each, tx 1..k) and every one committed before the last
# persistence point ($BTRSIM_OPS_DURABLE operations of $BTRSIM_WORKLOAD): in rollback-journal
# mode a commit ends with the journal's unlink, in WAL mode with the WAL's fdatasync (at most
# TXS of them: the close's checkpoint syncs it again)
db=$1 txs=$2 rows=$3
r=$(sqlite3 "$db" 'PRAGMA integrity_check' 2>&1) || { echo "sqlite3: $r"; exit 1; }
[ "$r" = ok ] || { echo "integrity_check: $r"; exit 1; }
committed=$(head -n "$BTRSIM_OPS_DURABLE" "$BTRSIM_WORKLOAD" | grep -c -e "^unlink /$db-journal\$" -e "^fdatasync /$db-wal\$")
[ "$committed" -gt "$txs" ] && committed=$txs
have=$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name = 't'")
if [ "$have" = 0 ]; then
	[ "$committed" = 0 ] || { echo "no table after $committed commits"; exit 1; }
	exit 0
fi
bad=$(sqlite3 "$db" "SELECT tx || ':' || count(*) FROM t GROUP BY tx HAVING count(*) != $rows")
[ -z "$bad" ] || { echo "transactions cut: $bad"; exit 1; }
set -- $(sqlite3 "$db" "SELECT count(DISTINCT tx) || ' ' || ifnull(max(tx), 0) FROM t")
[ "$1" = "$2" ] || { echo "not a prefix: $1 transactions up to $2"; exit 1; }
[ "$1" -ge "$committed" ] || { echo "$committed transactions committed, $1 there"; exit 1; }
