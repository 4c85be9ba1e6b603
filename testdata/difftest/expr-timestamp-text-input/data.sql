INSERT INTO "Person0" ("id col", "data_2") VALUES
  ('daa66d13-0000-4000-8000-000000000003', ARRAY['2083-11-10 08:28:29+05:30']::timestamptz[]);
ANALYZE;
