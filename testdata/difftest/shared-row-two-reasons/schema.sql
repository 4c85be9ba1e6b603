CREATE TABLE "city0" (
  "ïd" integer NOT NULL,
  "title" jsonb,
  "aB" bigint,
  PRIMARY KEY ("ïd")
);
