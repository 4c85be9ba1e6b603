INSERT INTO "p" VALUES (1), (2);
INSERT INTO "c" VALUES
  (5, 1, 1.00, 0, 'ab', '24:00:00'),
  (2, 1, 1.0, '-0', 'AB', '1 day'),
  (9, 1, 1, 0, 'Ab', '1440 minutes'),
  (3, 2, 7.50, 2, 'z', '1 hour'),
  (1, 2, 7.5, 2, 'Z', '60 minutes'),
  (4, 2, 7.500, 2, 'Z', '3600 seconds');
INSERT INTO "nopk" VALUES (1, 2.0, 'b'), (1, 2, 'a'), (1, 2.00, 'c'), (2, -0.0, 'x'), (2, 0, 'y');
ANALYZE;
