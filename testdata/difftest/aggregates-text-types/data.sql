INSERT INTO "p" VALUES (1), (2), (3);
INSERT INTO "c" VALUES
  (1, 1, '1 day', '1.50', 'sad', '10.0.0.1', '12:00', '12:00+02', 'a', '0/1', 1.5, 0.5),
  (2, 1, '-2 hours', '-2.25', 'a.b', '::1', '24:00', '13:00+02', 'é', 'FFFFFFFF/FFFFFFFF', 2.50, -0.25),
  (3, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
ANALYZE;
