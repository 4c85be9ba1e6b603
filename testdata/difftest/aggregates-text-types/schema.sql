CREATE TYPE "mood" AS ENUM ('sad', 'happy', 'a.b');
CREATE TABLE "p" ("id" integer PRIMARY KEY);
CREATE TABLE "c" (
  "id" integer PRIMARY KEY,
  "p_id" integer,
  "iv" interval,
  "m" money,
  "e" "mood",
  "ip" inet,
  "t" time,
  "tz" timetz,
  "ch" "char",
  "l" pg_lsn,
  "n" numeric,
  "f" real
);
