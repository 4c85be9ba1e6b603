CREATE TABLE "t" ("id" numeric PRIMARY KEY, "n" numeric, "p_id" integer);
CREATE TABLE "p" ("id" integer PRIMARY KEY);
