CREATE SCHEMA IF NOT EXISTS "s1";
CREATE TABLE "s1"."OrderLine" (
  "id" uuid NOT NULL,
  "account0_id" numeric NOT NULL,
  PRIMARY KEY ("id")
);
