-- Rows that reach no document, each for a reason (extract/coverage_test.go).
CREATE TABLE author (id int PRIMARY KEY, name text NOT NULL, active boolean NOT NULL);
INSERT INTO author VALUES (1, 'ann', true), (2, 'bob', true), (3, 'cy', false);

CREATE TABLE category (id int PRIMARY KEY, name text);
INSERT INTO category VALUES (10, 'news'), (11, 'tech'), (12, 'unused');

-- No foreign keys: orphans and NULL keys are the point.
CREATE TABLE post (id int PRIMARY KEY, author_id int, category_id int, title text, created int NOT NULL);
INSERT INTO post VALUES
  (100, 1, 10, 'a1', 1), (101, 1, 11, 'a2', 2), (102, 1, 10, 'a3', 3),
  (103, 2, 10, 'b1', 1),
  (104, 3, 11, 'c1', 1),
  (105, NULL, 10, 'x', 1),
  (106, 99, 10, 'y', 1);

CREATE TABLE comment (id int PRIMARY KEY, post_id int NOT NULL, body text);
INSERT INTO comment VALUES (1000, 102, 'c'), (1001, 100, 'c'), (1002, 103, 'c'), (1003, 104, 'c'), (1004, 555, 'c');

-- No primary key, and two identical rows.
CREATE TABLE tag (post_id int, label text);
INSERT INTO tag VALUES (102, 'x'), (102, 'x'), (102, 'a'), (103, 'z'), (NULL, 'n');

CREATE TABLE vote (id int PRIMARY KEY, post_id int NOT NULL);
INSERT INTO vote VALUES (1, 102), (2, 100), (3, 103), (4, 105);

-- An inheritance parent: denorm reads ONLY note; pinned_note's rows (one
-- with a key the parent has too) are in no document.
CREATE TABLE note (id int PRIMARY KEY, author_id int NOT NULL, body text);
CREATE TABLE pinned_note (pinned_at int) INHERITS (note);
INSERT INTO note VALUES (1, 1, 'n1'), (2, 2, 'n2');
INSERT INTO pinned_note VALUES (3, 1, 'p3', 5), (1, 2, 'p1', 6);

-- A partitioned table is read whole: its partitions' rows are its rows.
CREATE TABLE event (id int NOT NULL, author_id int NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE event_low PARTITION OF event FOR VALUES FROM (0) TO (10);
CREATE TABLE event_high PARTITION OF event FOR VALUES FROM (10) TO (20);
INSERT INTO event VALUES (1, 1), (2, 2), (15, 3);

CREATE TABLE book (id int PRIMARY KEY, title text);
INSERT INTO book VALUES (500, 'kept'), (501, 'ghost only'), (502, 'unlinked'), (503, 'inactive only'), (504, 'second');

-- A join table without a primary key.
CREATE TABLE book_author (author_id int, book_id int, role text);
INSERT INTO book_author VALUES (1, 500, 'writer'), (2, 501, 'ghost'), (3, 503, 'writer'), (99, 500, 'writer'),
  (1, 777, 'writer'), (NULL, 500, 'writer'), (98, 778, 'writer'), (1, 504, 'writer'), (2, 500, 'writer'), (1, NULL, 'editor');

CREATE TABLE chapter (id int PRIMARY KEY, book_id int NOT NULL, n int NOT NULL);
INSERT INTO chapter VALUES (1, 500, 1), (2, 500, 2), (3, 504, 1), (4, 502, 1), (5, 500, 3);

CREATE TABLE visit (id int PRIMARY KEY, author_id int, at int NOT NULL);
INSERT INTO visit VALUES (1, 1, 1), (2, 1, 2), (3, 1, 3), (4, 3, 1), (5, 3, 2), (6, NULL, 1);

CREATE VIEW post_view AS SELECT id, title FROM post WHERE id > 102;
