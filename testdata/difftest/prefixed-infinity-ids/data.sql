INSERT INTO "e" VALUES (1, 'infinity', 'a'), (2, '-infinity', 'b'), (3, '2001-02-03 04:05:06.789', 'c');
INSERT INTO "d" VALUES ('infinity'), ('2020-01-01'), ('-infinity');
INSERT INTO "c" VALUES (1, 'infinity', 1), (2, 'infinity', 2), (3, '2020-01-01', 3);
ANALYZE;
