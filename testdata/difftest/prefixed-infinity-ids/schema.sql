CREATE TABLE "e" ("k1" integer, "k2" timestamp, "v" text, PRIMARY KEY ("k1", "k2"));
CREATE TABLE "d" ("id" date PRIMARY KEY);
CREATE TABLE "c" ("id" integer PRIMARY KEY, "e_day" date, "x" integer);
