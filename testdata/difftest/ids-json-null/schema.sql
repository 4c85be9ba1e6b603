CREATE SCHEMA IF NOT EXISTS "ünï";
CREATE DOMAIN "dom3" AS jsonb;
CREATE TABLE "ünï"."tag" (
  "k1" integer NOT NULL,
  "k2" time NOT NULL,
  "data" "dom3",
  PRIMARY KEY ("k1", "k2")
);
CREATE TABLE "order1_link" (
  "tag_k1" integer NOT NULL,
  "tag_k2" time NOT NULL,
  "tag_k1_2" integer NOT NULL,
  "tag_k2_3" time NOT NULL,
  PRIMARY KEY ("tag_k1", "tag_k2", "tag_k1_2", "tag_k2_3")
);
ALTER TABLE "order1_link" ADD CONSTRAINT "fk0_order1_link" FOREIGN KEY ("tag_k1", "tag_k2") REFERENCES "ünï"."tag" ("k1", "k2");
ALTER TABLE "order1_link" ADD CONSTRAINT "fk1_order1_link" FOREIGN KEY ("tag_k1_2", "tag_k2_3") REFERENCES "ünï"."tag" ("k1", "k2");
