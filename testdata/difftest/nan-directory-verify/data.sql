INSERT INTO "t" ("id", "r", "d", "a") VALUES
  (1, 'NaN', 'NaN', ARRAY['NaN', '-0', 'Infinity']::double precision[]),
  (2, '-0', '-Infinity', NULL),
  (3, 1.5, 2.5, '{}');
ANALYZE;
