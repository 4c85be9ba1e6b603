INSERT INTO "ünï"."tag" ("k1", "k2", "data") VALUES
  (-3, '00:00:00', NULL),
  (-3, '00:01:00', 'null');
INSERT INTO "order1_link" ("tag_k1", "tag_k2", "tag_k1_2", "tag_k2_3") VALUES
  (-3, '00:01:00', -3, '00:00:00');
ANALYZE;
