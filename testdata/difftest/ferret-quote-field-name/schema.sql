CREATE TABLE "orders" (
  "id" integer NOT NULL,
  "say ""hi""" text,
  PRIMARY KEY ("id")
);
CREATE TABLE "line" (
  "id" integer NOT NULL,
  "orders_id" integer,
  "qty" integer,
  PRIMARY KEY ("id")
);
