INSERT INTO "orders" ("key") VALUES
  (-3);
INSERT INTO "trailing 6_link" ("orders_key", "orders_key_1", "UPPER_2") VALUES
  (-1, -3, 1.7976931348623157e308),
  (-2, -3, 1.7976931348623157e308);
ANALYZE;
