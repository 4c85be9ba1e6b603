-- A Northwind-like schema (advise_test.go, TestAdviseNorthwind): plural
-- table names, product_name / category_name / company_name columns,
-- order_details keyed by (order_id, product_id), employees.reports_to a
-- nullable self-reference, a customer history table without a primary
-- key, an empty join table (customer_customer_demo), a country/city pair
-- where country.capital is a NULLABLE reference to city and city
-- references country, payment cards with card numbers and CVVs.
CREATE TABLE categories (category_id smallint PRIMARY KEY, category_name text NOT NULL, description text);
CREATE TABLE suppliers (supplier_id smallint PRIMARY KEY, company_name text NOT NULL, contact_name text, city text, country text);
CREATE TABLE products (
  product_id smallint PRIMARY KEY,
  product_name text NOT NULL,
  supplier_id smallint REFERENCES suppliers,
  category_id smallint REFERENCES categories,
  quantity_per_unit text,
  unit_price numeric(10,2) NOT NULL,
  units_in_stock smallint NOT NULL,
  discontinued boolean NOT NULL
);
CREATE TABLE employees (
  employee_id smallint PRIMARY KEY,
  last_name text NOT NULL,
  first_name text NOT NULL,
  title text,
  hire_date date NOT NULL,
  reports_to smallint REFERENCES employees
);
CREATE TABLE customers (customer_id char(5) PRIMARY KEY, company_name text NOT NULL, contact_name text, city text, country text);
CREATE TABLE customer_demographics (customer_type_id char(10) PRIMARY KEY, customer_desc text);
CREATE TABLE customer_customer_demo (
  customer_id char(5) NOT NULL REFERENCES customers,
  customer_type_id char(10) NOT NULL REFERENCES customer_demographics,
  PRIMARY KEY (customer_id, customer_type_id)
);
-- no primary key: a customer's history of changes
CREATE TABLE customer_history (
  customer_id char(5) NOT NULL REFERENCES customers,
  changed text NOT NULL,
  old_value text,
  new_value text
);
CREATE TABLE payment_cards (
  card_id integer PRIMARY KEY,
  customer_id char(5) NOT NULL REFERENCES customers,
  card_number text NOT NULL,
  cvv text NOT NULL,
  expiry text NOT NULL,
  holder text NOT NULL
);
CREATE TABLE orders (
  order_id smallint PRIMARY KEY,
  customer_id char(5) REFERENCES customers,
  employee_id smallint REFERENCES employees,
  order_date date NOT NULL,
  freight numeric(10,2) NOT NULL,
  ship_city text
);
CREATE TABLE order_details (
  order_id smallint NOT NULL REFERENCES orders,
  product_id smallint NOT NULL REFERENCES products,
  unit_price numeric(10,2) NOT NULL,
  quantity smallint NOT NULL,
  discount real NOT NULL,
  PRIMARY KEY (order_id, product_id)
);
CREATE TABLE country (code char(3) PRIMARY KEY, name text NOT NULL, capital integer);
CREATE TABLE city (id integer PRIMARY KEY, name text NOT NULL, country_code char(3) NOT NULL REFERENCES country(code), population integer NOT NULL);
CREATE TABLE country_language (country_code char(3) NOT NULL REFERENCES country(code), language text NOT NULL, official boolean NOT NULL, PRIMARY KEY (country_code, language));
ALTER TABLE country ADD FOREIGN KEY (capital) REFERENCES city(id);

INSERT INTO categories SELECT i, 'Category ' || i, 'about ' || i FROM generate_series(1, 8) i;
INSERT INTO suppliers SELECT i, 'Supplier ' || i, 'Contact ' || i, 'City ' || (i % 5), 'Country ' || (i % 3) FROM generate_series(1, 29) i;
INSERT INTO products SELECT i, 'Product ' || i, 1 + i % 29, 1 + i % 8, i || ' boxes', (i * 1.25)::numeric(10,2), i % 50, i % 10 = 0 FROM generate_series(1, 77) i;
INSERT INTO employees SELECT i, 'Last' || i, 'First' || i, 'Sales', date '2020-01-01' + i, CASE WHEN i = 1 THEN NULL WHEN i <= 3 THEN 1 ELSE 2 END FROM generate_series(1, 9) i;
INSERT INTO customers SELECT lpad(i::text, 5, 'C'), 'Company ' || i, 'Contact ' || i, 'City ' || (i % 12), 'Country ' || (i % 7) FROM generate_series(1, 91) i;
INSERT INTO customer_demographics VALUES ('retail', 'retail buyers'), ('wholesale', 'wholesale buyers');
INSERT INTO customer_history SELECT lpad((1 + i % 91)::text, 5, 'C'), 'city', 'Old ' || i, 'New ' || i FROM generate_series(1, 150) i;
INSERT INTO payment_cards SELECT i, lpad((1 + i % 91)::text, 5, 'C'), '4111 1111 1111 ' || lpad(i::text, 4, '0'), lpad((i % 1000)::text, 3, '0'), '12/30', 'Holder ' || i FROM generate_series(1, 120) i;
INSERT INTO orders SELECT i, lpad((1 + i % 89)::text, 5, 'C'), 1 + i % 9, date '2021-01-01' + (i % 700), (i % 100 + 0.5)::numeric(10,2), 'City ' || (i % 20) FROM generate_series(1, 830) i;
INSERT INTO order_details SELECT o, p, (p * 1.25)::numeric(10,2), 1 + (o + p) % 20, 0 FROM generate_series(1, 830) o, generate_series(1, 77) p WHERE (o * 7 + p * 13) % 31 < 1 + o % 3;
INSERT INTO country SELECT lpad(i::text, 3, '0'), 'Country ' || i, NULL FROM generate_series(1, 40) i;
INSERT INTO city SELECT i, 'City ' || i, lpad((1 + i % 40)::text, 3, '0'), i * 1000 FROM generate_series(1, 400) i;
UPDATE country SET capital = (SELECT min(id) FROM city WHERE city.country_code = country.code) WHERE code <> '001';
INSERT INTO country_language SELECT code, l, l = 'English' FROM country, unnest(ARRAY['English', 'French']) l;
ANALYZE;
