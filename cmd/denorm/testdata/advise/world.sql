-- A world-like schema (advise_test.go, TestAdviseCoverage): country.capital
-- references city.id and is NULL for 7 countries; countrylanguage belongs to
-- country; city_note refers to city by name only (city_id, no foreign key)
-- and 3 of its rows to no city; currency is a lookup table one of whose rows
-- no country uses.
CREATE TABLE city (
  id integer PRIMARY KEY,
  name text NOT NULL,
  countrycode char(3) NOT NULL,
  district text NOT NULL,
  population integer NOT NULL
);
CREATE TABLE currency (id integer PRIMARY KEY, name text NOT NULL UNIQUE);
INSERT INTO currency VALUES (1, 'euro'), (2, 'dollar'), (3, 'yen'), (4, 'unused');
CREATE TABLE country (
  code char(3) PRIMARY KEY,
  name text NOT NULL,
  continent text NOT NULL,
  population integer NOT NULL,
  currency_id integer NOT NULL REFERENCES currency(id),
  capital integer
);
CREATE TABLE countrylanguage (
  countrycode char(3) NOT NULL REFERENCES country(code),
  language text NOT NULL,
  isofficial boolean NOT NULL,
  percentage real NOT NULL,
  PRIMARY KEY (countrycode, language)
);
CREATE TABLE city_note (id integer PRIMARY KEY, city_id integer NOT NULL, note text NOT NULL);
INSERT INTO country SELECT lpad(i::text, 3, '0'), 'Country ' || i, 'Continent ' || (i % 7), i * 1000, 1 + i % 3,
  CASE WHEN i > 7 THEN i END FROM generate_series(1, 239) i;
-- city i <= 239 is in country i (its capital for countries 8..239); the rest spread unevenly
INSERT INTO city SELECT i, 'City ' || i,
  lpad((CASE WHEN i <= 239 THEN i WHEN i % 3 = 0 THEN (i % 10) + 1 ELSE (i % 239) + 1 END)::text, 3, '0'),
  'D' || (i % 7), i * 100 FROM generate_series(1, 4079) i;
INSERT INTO countrylanguage SELECT lpad(i::text, 3, '0'), l, l = 'English', 10.5
  FROM generate_series(1, 239) i, unnest(ARRAY['English', 'Spanish', 'French', 'German']) l WHERE i % 4 <> 0 OR l <> 'German';
INSERT INTO city_note SELECT i, CASE WHEN i <= 3 THEN 90000 + i ELSE i * 7 END, 'note ' || i FROM generate_series(1, 300) i;
ALTER TABLE country ADD FOREIGN KEY (capital) REFERENCES city(id);
ANALYZE;
