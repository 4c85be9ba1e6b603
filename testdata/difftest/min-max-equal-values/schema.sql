CREATE EXTENSION IF NOT EXISTS citext;
CREATE TABLE "p" ("id" integer PRIMARY KEY);
CREATE TABLE "c" ("id" integer PRIMARY KEY, "p_id" integer, "n" numeric, "f" double precision, "ci" citext, "iv" interval);
CREATE TABLE "nopk" ("p_id" integer, "n" numeric, "note" text);
