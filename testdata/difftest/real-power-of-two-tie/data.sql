INSERT INTO "reading" ("id", "v")
  SELECT i, power(2::float8, i)::real FROM generate_series(-149, 127) AS i
  UNION ALL
  SELECT 1000 + i, -power(2::float8, i)::real FROM generate_series(-149, 127) AS i;
ANALYZE;
