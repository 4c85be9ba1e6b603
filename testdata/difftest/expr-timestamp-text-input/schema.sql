CREATE TABLE "Person0" (
  "id col" uuid NOT NULL,
  "data_2" timestamptz[],
  PRIMARY KEY ("id col")
);
