INSERT INTO "city" VALUES (1, '00:00'), (2, '12:30:00.5');
INSERT INTO "town" VALUES (1, '\x00', 'a'), (2, '\x3132', NULL);
ANALYZE;
