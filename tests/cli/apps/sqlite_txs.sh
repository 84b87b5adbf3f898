#!/bin/sh
# sqlite_txs.sh MODE TXS ROWS: the SQL of TXS transactions of ROWS rows each (tx 1..TXS; the
# first makes the table), in journal mode MODE (delete or wal) with synchronous=FULL, for
# sqlite3 to read on stdin.
echo "PRAGMA journal_mode=$1; PRAGMA synchronous=FULL;"
tx=1
while [ "$tx" -le "$2" ]; do
	echo "BEGIN;"
	[ "$tx" = 1 ] && echo "CREATE TABLE t(tx, v);"
	i=0
	while [ "$i" -lt "$3" ]; do
		echo "INSERT INTO t VALUES($tx, randomblob(300));"
		i=$((i + 1))
	done
	echo "COMMIT;"
	tx=$((tx + 1))
done
