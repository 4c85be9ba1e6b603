CREATE TABLE "tag0" (
  "uid" smallint NOT NULL,
  "qty_1" numeric,
  UNIQUE ("uid")
);
CREATE TABLE "UPPER" (
  "Id" integer NOT NULL,
  "tag0_uid" smallint,
  PRIMARY KEY ("Id")
);
