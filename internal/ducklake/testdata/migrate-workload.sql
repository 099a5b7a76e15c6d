-- A day of pipeline work on a DuckLake attached as "l", written by an older
-- DuckDB release in its own DuckLake format (TestMigrateOldWriters). Each
-- statement is one snapshot; the set covers what the migration steps
-- rewrite: data and delete files, updates, added/renamed/dropped columns
-- with a default, partitioning, views, a second schema with nested types,
-- compaction, a dropped table and (DuckDB catalogs) inlined rows.
CREATE TABLE l.t1 (id INTEGER, name VARCHAR, price DECIMAL(9,2), ts TIMESTAMP);
INSERT INTO l.t1 SELECT i, 'n' || i, i * 1.5, TIMESTAMP '2025-01-01' + INTERVAL (i) HOUR FROM range(100) r(i);
INSERT INTO l.t1 SELECT i, 'm' || i, i, TIMESTAMP '2025-02-01' FROM range(100, 150) r(i);
DELETE FROM l.t1 WHERE id % 7 = 0;
UPDATE l.t1 SET name = upper(name) WHERE id < 20;
ALTER TABLE l.t1 ADD COLUMN qty INTEGER DEFAULT 7;
ALTER TABLE l.t1 RENAME COLUMN name TO label;
INSERT INTO l.t1 VALUES (1000, 'late', 1.00, NULL, 3);
CREATE TABLE l.p (region VARCHAR, v BIGINT);
ALTER TABLE l.p SET PARTITIONED BY (region);
INSERT INTO l.p SELECT CASE WHEN i % 3 = 0 THEN 'eu' WHEN i % 3 = 1 THEN 'us' ELSE 'asia' END, i FROM range(60) r(i);
CREATE VIEW l.v1 AS SELECT region, sum(v) AS s FROM l.p GROUP BY region;
CREATE SCHEMA l.s2;
CREATE TABLE l.s2.nested (id INTEGER, tags VARCHAR[], info STRUCT(a INTEGER, b VARCHAR));
INSERT INTO l.s2.nested VALUES (1, ['a', 'b'], {'a': 1, 'b': 'x'}), (2, [], NULL);
ALTER TABLE l.t1 DROP COLUMN ts;
INSERT INTO l.p VALUES ('eu', 1000);
INSERT INTO l.p VALUES ('us', 1001);
CALL ducklake_merge_adjacent_files('l');
CREATE TABLE l.gone (x INTEGER);
INSERT INTO l.gone VALUES (1), (2);
DROP TABLE l.gone;
CREATE TABLE l.small (k INTEGER, v VARCHAR);
INSERT INTO l.small VALUES (1, 'one'), (2, 'two');
INSERT INTO l.small VALUES (3, 'three');
DELETE FROM l.small WHERE k = 2;
