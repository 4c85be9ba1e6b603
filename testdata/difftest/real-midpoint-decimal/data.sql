INSERT INTO "s1"."order item0" ("key", "name") VALUES
  (8, ARRAY[(-2013731 * power(2::float8, 6))::real, -3.4e38, 0]::real[]);
ANALYZE;
