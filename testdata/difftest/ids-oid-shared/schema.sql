CREATE TABLE "event0" (
  "ïd" oid NOT NULL,
  PRIMARY KEY ("ïd")
);
