CREATE TABLE "tag" ("tag id" smallint PRIMARY KEY);
CREATE TABLE "note" ("note id" integer PRIMARY KEY, "tag id" smallint);
CREATE TABLE "note tag" ("note id" numeric NOT NULL, "tag id" smallint NOT NULL REFERENCES "tag");
