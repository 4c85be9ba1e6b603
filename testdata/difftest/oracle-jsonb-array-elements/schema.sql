CREATE TABLE "t" ("id" integer PRIMARY KEY, "j" jsonb[], "n" json[]);
