CREATE TABLE "p" ("id" integer PRIMARY KEY);
CREATE TABLE "c" ("id" integer PRIMARY KEY, "p_id" integer, "at" timestamp, "tz" timestamptz, "ch" char(4));
