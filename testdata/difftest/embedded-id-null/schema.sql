CREATE TABLE "a.b" (
  "uid" smallint NOT NULL,
  UNIQUE ("uid")
);
CREATE TABLE "event" (
  "a_b_uid" smallint,
  "title" text
);
ALTER TABLE "event" ADD CONSTRAINT "fk0_event" FOREIGN KEY ("a_b_uid") REFERENCES "a.b" ("uid");
