CREATE TABLE "city" ("k1" integer NOT NULL, "K 2" time NOT NULL, PRIMARY KEY ("k1", "K 2"));
CREATE TABLE "town" ("k1" integer NOT NULL, "K 2" bytea NOT NULL, "name" text, PRIMARY KEY ("k1", "K 2"));
