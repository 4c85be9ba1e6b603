INSERT INTO "a.b" ("uid") VALUES
  (5);
INSERT INTO "event" ("a_b_uid", "title") VALUES
  (5, NULL);
ANALYZE;
