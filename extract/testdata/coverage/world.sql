CREATE TABLE city (
  id integer PRIMARY KEY,
  name text NOT NULL,
  countrycode char(3) NOT NULL,
  district text NOT NULL,
  population integer NOT NULL
);
CREATE TABLE country (
  code char(3) PRIMARY KEY,
  name text NOT NULL,
  continent text NOT NULL,
  population integer NOT NULL,
  capital integer
);
CREATE TABLE countrylanguage (
  countrycode char(3) NOT NULL REFERENCES country(code),
  language text NOT NULL,
  isofficial boolean NOT NULL,
  percentage real NOT NULL,
  PRIMARY KEY (countrycode, language)
);
INSERT INTO country SELECT lpad(i::text, 3, '0'), 'Country ' || i, 'Continent ' || (i % 7), i * 1000,
  CASE WHEN i > 7 THEN i END FROM generate_series(1, 239) i;
-- city i belongs to country ((i-1) % 239) + 1 for i <= 239 (its capital for countries 8..239), then skewed
INSERT INTO city SELECT i, 'City ' || i,
  lpad((CASE WHEN i <= 239 THEN i WHEN i % 3 = 0 THEN (i % 10) + 1 ELSE (i % 239) + 1 END)::text, 3, '0'),
  'D' || (i % 7), i * 100 FROM generate_series(1, 4079) i;
INSERT INTO countrylanguage SELECT lpad(i::text, 3, '0'), l, l = 'English', 10.5 FROM generate_series(1, 239) i, unnest(ARRAY['English','Spanish','French','German']) l WHERE i % 4 <> 0 OR l <> 'German';
ALTER TABLE country ADD FOREIGN KEY (capital) REFERENCES city(id);
ANALYZE;
