-- Key columns of types that cannot name a document or mark where a read
-- resumes (mappings/keytype.go): refused by validate in the user's terms.
CREATE SCHEMA keys;
GRANT USAGE ON SCHEMA keys TO PUBLIC;
CREATE TABLE keys.tagged (tags text[] PRIMARY KEY, v int);
CREATE TABLE keys.doc (body jsonb PRIMARY KEY, v int);
CREATE TABLE keys.shape (id int PRIMARY KEY, at point, x xml, j json, grid int[], n int);
CREATE VIEW keys.shape_view AS SELECT * FROM keys.shape;
CREATE TABLE keys.item (id int PRIMARY KEY, kinds text[] NOT NULL, meta jsonb NOT NULL);
GRANT SELECT ON ALL TABLES IN SCHEMA keys TO PUBLIC;
