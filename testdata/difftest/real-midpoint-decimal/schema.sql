CREATE SCHEMA IF NOT EXISTS "s1";
CREATE TABLE "s1"."order item0" (
  "key" integer NOT NULL,
  "name" real[],
  PRIMARY KEY ("key")
);
