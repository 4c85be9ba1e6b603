CREATE TABLE "t" (
  "id" integer NOT NULL,
  "r" real,
  "d" double precision,
  "a" double precision[],
  PRIMARY KEY ("id")
);
