CREATE TABLE "orders" (
  "key" integer NOT NULL,
  PRIMARY KEY ("key")
);
CREATE TABLE "trailing 6_link" (
  "orders_key" integer NOT NULL,
  "orders_key_1" integer NOT NULL,
  "UPPER_2" double precision,
  PRIMARY KEY ("orders_key", "orders_key_1")
);
