INSERT INTO "t" VALUES
  (1, ARRAY['[1,2]'::jsonb, '{"a":1}', '[]', 'null'], ARRAY['[[3]]'::json]),
  (2, ARRAY['{"a":[1]}'::jsonb], '{}'),
  (3, NULL, ARRAY['["x",{"y":[]}]'::json]);
ANALYZE;
