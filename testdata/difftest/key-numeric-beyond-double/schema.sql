CREATE TABLE "event4" (
  "k1" integer NOT NULL,
  "k2" bigint NOT NULL,
  "orders_id col" varchar(20) NOT NULL,
  "title" numeric NOT NULL,
  "value" uuid,
  PRIMARY KEY ("k1", "k2")
);
