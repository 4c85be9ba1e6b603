-- A schema whose names are hostile to a mapping file and to the target:
-- reserved words, dots, a leading $, camelCase collisions, white space,
-- YAML words, Markdown and HTML characters, a newline, names the target
-- reserves (_id, _denorm, system.*), a path, two tables that pluralize to
-- one name. `denorm advise` must still draft a mapping that validates and
-- migrates, with safe names everywhere (cmd/denorm/advise_test.go).
CREATE TABLE "user" (
  id   integer PRIMARY KEY,
  name text NOT NULL
);
CREATE TABLE "order" (
  id            integer PRIMARY KEY,
  user_id       integer NOT NULL REFERENCES "user"(id),
  "userId"      integer,
  "a.b"         text,
  "$price"      numeric(8,2),
  "_id"         text,
  "*"           text,
  "weird col"   text,
  "yes"         boolean,
  "x|y"         text,
  "<b>bold</b>" text,
  "`tick`"      text,
  "*star*"      text,
  "_under_"     text,
  "line
break"        text,
  "naïve"       text,
  prix_été      integer,
  "select"      text,
  "#note"       text,
  "recentEvents" text,
  item_count    integer,
  "itemCount"   integer,
  password_hash text,
  "apiKey"      text,
  search        tsvector
);
CREATE TABLE orders (
  id    integer PRIMARY KEY,
  total integer NOT NULL
);
-- a child keyed by its parent, with white space in every key column
CREATE TABLE "order line" (
  "order id" integer NOT NULL REFERENCES "order"(id),
  "line no"  integer NOT NULL,
  qty        integer NOT NULL,
  PRIMARY KEY ("order id", "line no")
);
-- children that grow with time under "order": a bucket whose parent key
-- column is named like the page field, and a key with a dot
CREATE TABLE "a.b" (
  "ev.id" integer PRIMARY KEY,
  page    integer NOT NULL REFERENCES "order"(id),
  at      timestamptz NOT NULL,
  what    text
);
CREATE TABLE "x|y" (id integer PRIMARY KEY, "<script>" text);
CREATE TABLE "_denorm" (id integer PRIMARY KEY, v text);
CREATE TABLE "system.profile" (id integer PRIMARY KEY, v text);
CREATE TABLE "../../etc" (id integer PRIMARY KEY, v text);
CREATE TABLE only_key (id integer PRIMARY KEY);

INSERT INTO "user" SELECT n, 'u' || n FROM generate_series(1, 3) n;
INSERT INTO "order" (id, user_id, "userId", "a.b", "$price", "_id", "*", "weird col", "yes", "x|y", "<b>bold</b>", "`tick`",
                     "*star*", "_under_", "line
break", "naïve", prix_été, "select", "#note", "recentEvents", item_count, "itemCount", password_hash, "apiKey", search)
SELECT n, 1 + n % 3, n, 'dot' || n, n * 1.5, 'under' || n, 'star' || n, 'weird' || n, n % 2 = 0, 'pipe', 'html', 'tick',
       'stars', 'unders', 'newline', 'naive', 7, 'select', 'note', 'recent', n, n + 1, 'secret-hash', 'secret-key', to_tsvector('english', 'order ' || n)
FROM generate_series(1, 6) n;
INSERT INTO orders SELECT n, n * 10 FROM generate_series(1, 4) n;
INSERT INTO "order line" SELECT 1 + n % 6, n, n FROM generate_series(1, 12) n;
INSERT INTO "a.b" SELECT n, 1 + n % 2, timestamptz '2024-01-01' + n * interval '1 hour', 'event ' || n FROM generate_series(1, 300) n;
INSERT INTO "x|y" VALUES (1, 'alert');
INSERT INTO "_denorm" VALUES (1, 'v');
INSERT INTO "system.profile" VALUES (1, 'v');
INSERT INTO "../../etc" VALUES (1, 'passwd');
INSERT INTO only_key VALUES (1), (2);
ANALYZE;
