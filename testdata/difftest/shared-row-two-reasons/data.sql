INSERT INTO "city0" ("ïd", "title", "aB") VALUES
  (-2, '[[],{},["l$DGuFnp","xap"]]', NULL);
ANALYZE;
