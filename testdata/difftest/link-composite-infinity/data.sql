INSERT INTO "user0" ("k1", "k2") VALUES
  (-2, 'infinity');
INSERT INTO "order item3" ("id") VALUES
  ('a.b');
INSERT INTO "ünï"."OrderLine_link" ("user0_k1", "user0_k2", "order it_id") VALUES
  (-2, 'infinity', 'a.b');
ANALYZE;
