CREATE SCHEMA IF NOT EXISTS "ünï";
CREATE TYPE "mood 1 Ü" AS ENUM ('sad', 'ok', 'happy', 'with space', 'ünï', 'a.b', '$x', '');
CREATE TABLE "user0" (
  "k1" integer NOT NULL,
  "k2" date NOT NULL,
  PRIMARY KEY ("k1", "k2")
);
CREATE TABLE "order item3" (
  "id" "mood 1 Ü" NOT NULL,
  PRIMARY KEY ("id")
);
CREATE TABLE "ünï"."OrderLine_link" (
  "user0_k1" integer NOT NULL,
  "user0_k2" date NOT NULL,
  "order it_id" "mood 1 Ü" NOT NULL,
  PRIMARY KEY ("user0_k1", "user0_k2", "order it_id")
);
ALTER TABLE "ünï"."OrderLine_link" ADD CONSTRAINT "fk0_OrderLine_link" FOREIGN KEY ("user0_k1", "user0_k2") REFERENCES "user0" ("k1", "k2");
ALTER TABLE "ünï"."OrderLine_link" ADD CONSTRAINT "fk1_OrderLine_link" FOREIGN KEY ("order it_id") REFERENCES "order item3" ("id");
