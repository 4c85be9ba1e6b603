-- %[1]d persons of the person example (bench/runs.go personDB, and
-- BenchmarkCopyWorkers in pipeline/syncer), on a database already
-- holding its schema: 2 contact details and 1.5 addresses each. A Go
-- format string: %% is a percent sign.
INSERT INTO person (id, first_name, last_name)
SELECT 1000 + g, 'First' || g, 'Last ' || md5(g::text) FROM generate_series(1, %[1]d) g;
INSERT INTO contact_detail (id, person_id, type_id, detail, extension)
SELECT 1000 + g, 1000 + (g + 1) / 2, 1 + g %% 3, 'detail-' || g || '@example.com', CASE WHEN g %% 4 = 0 THEN g %% 10000 END
FROM generate_series(1, 2 * %[1]d) g;
INSERT INTO address (id, person_id, type_id, line1, line2, city, state, zip)
SELECT 1000 + g, 1000 + (g * 2 + 2) / 3, 1 + g %% 2, g || ' Main Street', CASE WHEN g %% 3 = 0 THEN 'Unit ' || g %% 100 END,
       'Springfield', 'ZZ', 10000 + g %% 90000
FROM generate_series(1, (3 * %[1]d) / 2) g;
