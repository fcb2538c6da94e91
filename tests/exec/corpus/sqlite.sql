CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 60000)
INSERT INTO t(k, v) SELECT (x * 7919) % 1000, hex(randomblob(0) || x) FROM c;
CREATE INDEX tk ON t(k);
SELECT count(*), sum(k), max(length(v)) FROM t;
SELECT k, count(*) FROM t GROUP BY k ORDER BY count(*) DESC, k LIMIT 3;
UPDATE t SET v = v || 'x' WHERE k % 3 = 0;
SELECT sum(length(v)) FROM t;
