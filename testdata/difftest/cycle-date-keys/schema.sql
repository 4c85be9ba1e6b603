CREATE TABLE "orders0" (
  "ïd" date NOT NULL,
  PRIMARY KEY ("ïd")
);
CREATE TABLE "item3_link" (
  "orderlin_Id" integer NOT NULL,
  "orders0_ïd" date NOT NULL,
  PRIMARY KEY ("orderlin_Id", "orders0_ïd")
);
ALTER TABLE "item3_link" ADD CONSTRAINT "fk1_item3_link" FOREIGN KEY ("orders0_ïd") REFERENCES "orders0" ("ïd");
