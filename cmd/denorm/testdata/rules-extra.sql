-- Extra data for the example rules (rules_test.go), loaded after
-- testdata/examples/seed.sql: the hard cases the rules in
-- testdata/examples/README.md must hold on, beyond the seed rows.
BEGIN;

-- people: NULLs in every nullable address column, persons without addresses
-- or contact details, unicode names, many contact details for one person.
INSERT INTO contact_detail_type VALUES (4, 'télex'), (5, '電話');
INSERT INTO person (id, first_name, last_name) VALUES
  (10, 'Zoë', 'Ångström'),
  (11, '太郎', '山田'),
  (12, '🦄 Uni', 'Corn 🌈'),
  (13, 'Seán "the quote"', 'O''Brien \ back'),
  (14, E'Tab\there', E'New\nline'),
  (15, 'Lonely', 'Nobody');
INSERT INTO address (id, person_id, type_id, line1, line2, city, state, zip) VALUES
  (10, 10, NULL, NULL, NULL, NULL, NULL, NULL),
  (11, 10, 2, 'Hauptstraße 1', NULL, 'München', NULL, 80331),
  (12, 11, 1, '千代田1-1', '丸の内', '東京', '東京都', NULL),
  (13, 12, 1, NULL, 'only line2', NULL, 'ZZ', 0),
  (9, 10, 1, 'first by id', NULL, NULL, NULL, -1);
INSERT INTO contact_detail (id, person_id, type_id, detail, extension) VALUES
  (10, 10, 4, 'zoë@example.org', NULL),
  (11, 10, 2, '+49 89 0', 0),
  (12, 11, 5, '+81 3 0000', -7),
  (13, 12, 3, '🦄@example.org', NULL),
  (9, 10, 1, 'first by id', 2147483647);
INSERT INTO person (id, first_name, last_name)
SELECT 100 + g, 'Gen' || g, 'Person ' || g FROM generate_series(1, 400) g;
INSERT INTO contact_detail (id, person_id, type_id, detail, extension)
SELECT 100 + g, 100 + (g % 7) * 50 + 1, 1 + g % 5, 'd' || g, CASE WHEN g % 3 = 0 THEN NULL ELSE g END
FROM generate_series(1, 600) g;
INSERT INTO address (id, person_id, type_id, line1, line2, city, state, zip)
SELECT 100 + g, 100 + g % 400 + 1, CASE WHEN g % 2 = 0 THEN 1 END,
       CASE WHEN g % 5 <> 0 THEN g || ' Street' END, CASE WHEN g % 4 = 0 THEN 'Unit ' || g END,
       CASE WHEN g % 6 <> 0 THEN 'City ' || g END, CASE WHEN g % 7 <> 0 THEN 'S' || g % 50 END,
       CASE WHEN g % 8 <> 0 THEN 10000 + g END
FROM generate_series(1, 450) g;

-- blog: posts with exactly 100, 101 and 0 comments; ties in created_at that
-- straddle the 3-item subset and the page boundary at 100; one post whose
-- comments all share one timestamp; unicode; a NULL summary.
INSERT INTO post VALUES
  (10, 'Exactly one hundred', NULL),
  (11, 'One hundred and one', 'One more than a page'),
  (12, 'Nobody commented', NULL),
  (13, 'Ties everywhere', 'Ties straddle the subset and the pages'),
  (14, 'All at once', 'Every comment at the same instant'),
  (15, 'Ünïcödé 投稿 🎉', E'quote " and \\ backslash'),
  (16, 'Large', 'Many comments');
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 1000 + g, 10, 'a' || g, 'c' || g, timestamptz '2024-03-01 00:00:00+00' + g * interval '1 second'
FROM generate_series(1, 100) g;
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 2000 + g, 11, 'a' || g, 'c' || g, timestamptz '2024-03-01 00:00:00+00' - g * interval '1 second'
FROM generate_series(1, 101) g;
-- Post 13: ids go down while time goes up in blocks of 7 equal timestamps,
-- so the id tie-break decides inside every block, including around the
-- 100th/101st comment and the 3 newest.
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 5000 - g, 13, 'tie' || g, 'tied comment ' || g, timestamptz '2024-04-01 00:00:00+00' + (g / 7) * interval '1 minute'
FROM generate_series(0, 250) g;
-- Interleaved ids, shuffled insertion order, the same instant for all.
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 6000 + (g * 37) % 211, 14, 'same', 'same instant ' || g, timestamptz '2024-05-01 00:00:00+00'
FROM generate_series(0, 210) g;
INSERT INTO comment (id, post_id, author, comment, created_at) VALUES
  (7001, 15, 'Zoë', 'Très bien — merci!', timestamptz '2024-06-01 00:00:00+00'),
  (7002, 15, '山田', '素晴らしい記事です', timestamptz '2024-06-01 00:00:00+00'),
  (7003, 15, '🦄', '🎉🎉 "quoted" \ back', timestamptz '2024-06-01 00:00:01+00'),
  (7004, 15, E'tab\tauthor', E'multi\nline', timestamptz '2024-05-31 23:59:59+00');
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 10000 + g, 16, 'bulk', 'bulk comment ' || g, timestamptz '2024-07-01 00:00:00+00' + (g % 997) * interval '1 second'
FROM generate_series(1, 3000) g;

-- trading: a NULL pe, a person holding many stocks, unicode symbols.
INSERT INTO stock VALUES
  (3, 'nopé', 0.01, 0.02, 0, 0, 0, NULL),
  (4, '株式', 12345678.9, 12345678.99, 0.1, 9223372036854775807, 1, -3.5);
INSERT INTO stock (id, symbol, open, high, low, vol, mkt_cap, pe)
SELECT 10 + g, 'S' || g, g * 1.25, g * 1.5, g * 0.75, g * 1000, g * 100000, CASE WHEN g % 2 = 0 THEN g / 4.0 END
FROM generate_series(1, 60) g;
INSERT INTO holding VALUES (10, 3, 1), (10, 4, 2), (10, 1, 3), (11, 4, 0);
INSERT INTO holding (person_id, stock_id, number_held)
SELECT 15, 10 + g, g FROM generate_series(60, 1, -1) g;

-- publishing: a publisher without books, books without publisher or
-- authors, authors without books or images, an author with several
-- thumbnails, unicode, many books for one publisher and one author.
INSERT INTO publisher VALUES ('empty', 'No Books Press'), ('big', 'Große Verlag 出版社 📚'), ('q''uote', 'Quote "Press"');
INSERT INTO book VALUES
  ('b6', 'Without publisher or authors', NULL),
  ('b7', '本のタイトル 📖', 'q''uote'),
  ('bé', 'Accented id', 'mspress');
INSERT INTO book (id, name, pub_id)
SELECT 'g' || lpad(g::text, 4, '0'), 'Generated book ' || g, CASE WHEN g % 10 <> 0 THEN 'big' END
FROM generate_series(1, 350) g;
INSERT INTO author VALUES
  ('a3', 'Zoë', 'Ångström'),
  ('a4', 'Bookless', 'Writer'),
  ('a5', '太郎', '山田'),
  ('a6', 'Prolific', 'Author 🖋');
INSERT INTO book_author VALUES ('b7', 'a3'), ('b7', 'a5'), ('bé', 'a5'), ('b1', 'a5'), ('b2', 'a3');
INSERT INTO book_author (book_id, author_id)
SELECT 'g' || lpad(g::text, 4, '0'), 'a6' FROM generate_series(1, 350) g WHERE g % 3 <> 0;
INSERT INTO book_author (book_id, author_id)
SELECT 'g' || lpad(g::text, 4, '0'), 'a1' FROM generate_series(1, 350) g WHERE g % 5 = 0;
INSERT INTO author_image VALUES
  (10, 'a3', 'profile', 'http://img.example/a3-profile.png'),
  (12, 'a5', 'thumbnail', 'http://img.example/a5-thumb-second.png'),
  (11, 'a5', 'thumbnail', 'http://img.example/a5-thumb-first.png'),
  (13, 'a5', 'large', 'http://img.example/山田.png'),
  (14, 'a6', 'thumbnail', 'http://img.example/a6 "quoted".png');
INSERT INTO review VALUES
  ('r3', 'b7', 'Ünïcödé review 🎉'),
  ('r4', 'b1', E'multi\nline "review"');
INSERT INTO review (id, book_id, content)
SELECT 'rg' || g, 'g' || lpad((1 + g % 350)::text, 4, '0'), 'generated review ' || g FROM generate_series(1, 300) g;

ANALYZE;
COMMIT;
