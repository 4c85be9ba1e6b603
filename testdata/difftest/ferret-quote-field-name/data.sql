INSERT INTO "orders" ("id", "say ""hi""") VALUES (1, 'a'), (2, NULL);
INSERT INTO "line" ("id", "orders_id", "qty") VALUES (1, 1, 5), (2, 1, 6), (3, 2, 7);
ANALYZE;
