CREATE SCHEMA IF NOT EXISTS "Other Schema";
CREATE TABLE "日本0" (
  "k1" integer NOT NULL,
  "K 2" smallint NOT NULL,
  "score_2" date,
  PRIMARY KEY ("k1", "K 2")
);
CREATE TABLE "Other Schema"."MiXeD" (
  "ïd" bigint NOT NULL,
  "日本0_k1" integer,
  "日本0_K 2" smallint,
  "created_at" varchar(300),
  "amount" uuid,
  PRIMARY KEY ("ïd")
);
