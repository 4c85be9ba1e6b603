-- The sync ceiling's source (bench/ceiling.go, and BenchmarkSyncCeiling in
-- pipeline/syncer): %[1]d regions, %[2]d customers (12.5 a region), %[3]d
-- orders (3 a customer), every replica identity FULL. A Go format string:
-- %% is a percent sign.
CREATE TABLE region (id integer PRIMARY KEY, name text NOT NULL);
CREATE TABLE customer (id integer PRIMARY KEY, name text NOT NULL, region_id integer NOT NULL REFERENCES region(id), note text);
CREATE INDEX ON customer(region_id);
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES customer(id), amount integer NOT NULL, placed date NOT NULL);
CREATE INDEX ON orders(customer_id);
INSERT INTO region SELECT g, 'Region ' || g FROM generate_series(1, %[1]d) g;
INSERT INTO customer SELECT g, 'Customer ' || md5(g::text), 1 + g %% %[1]d, NULL FROM generate_series(1, %[2]d) g;
INSERT INTO orders SELECT g, 1 + g %% %[2]d, g %% 1000, date '2026-01-01' + g %% 300 FROM generate_series(1, %[3]d) g;
ALTER TABLE region REPLICA IDENTITY FULL;
ALTER TABLE customer REPLICA IDENTITY FULL;
ALTER TABLE orders REPLICA IDENTITY FULL;
ANALYZE;
