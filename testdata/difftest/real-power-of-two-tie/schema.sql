CREATE TABLE "reading" (
  "id" integer NOT NULL,
  "v" real,
  PRIMARY KEY ("id")
);
