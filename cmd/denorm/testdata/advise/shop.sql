-- Line items for `denorm advise` (cmd/denorm/advise_test.go): order lines
-- refer to their order and to a product; invoice lines are keyed by their
-- invoice. Order lines per order: 1 to 5 (p99 5), except one order with 25
-- lines, an outlier that must not stop the lines from being embedded.
-- Lines per product are many (p99 over 20), so lines belong to orders.
CREATE TABLE customer (
  id    integer PRIMARY KEY,
  name  text NOT NULL,
  email text
);
CREATE TABLE product (
  id    integer PRIMARY KEY,
  name  text NOT NULL,
  code  char(8) NOT NULL,
  price numeric(10,2) NOT NULL
);
CREATE TABLE "order" (
  id          integer PRIMARY KEY,
  customer_id integer NOT NULL REFERENCES customer(id),
  ordered_at  timestamptz NOT NULL
);
CREATE TABLE order_line (
  id         integer PRIMARY KEY,
  order_id   integer NOT NULL REFERENCES "order"(id),
  product_id integer NOT NULL REFERENCES product(id),
  quantity   integer NOT NULL,
  price      numeric(10,2) NOT NULL
);
CREATE TABLE invoice (
  id          integer PRIMARY KEY,
  customer_id integer NOT NULL REFERENCES customer(id),
  issued_on   date NOT NULL
);
CREATE TABLE invoice_line (
  invoice_id integer NOT NULL REFERENCES invoice(id),
  line_no    integer NOT NULL,
  product_id integer NOT NULL REFERENCES product(id),
  amount     numeric(10,2) NOT NULL,
  PRIMARY KEY (invoice_id, line_no)
);

INSERT INTO customer SELECT n, 'customer ' || n, 'c' || n || '@example.com' FROM generate_series(1, 20) n;
INSERT INTO product SELECT n, 'product ' || n, 'P' || n, n * 1.25 FROM generate_series(1, 30) n;
INSERT INTO "order" SELECT n, 1 + n % 20, timestamptz '2024-01-01' + n * interval '1 day' FROM generate_series(1, 200) n;
INSERT INTO order_line (id, order_id, product_id, quantity, price)
SELECT row_number() OVER (), o, 1 + (o * 7 + l) % 30, l, 2.50
FROM generate_series(1, 200) o, generate_series(1, 25) l
WHERE l <= CASE WHEN o = 1 THEN 25 ELSE 1 + o % 5 END;
INSERT INTO invoice SELECT n, 1 + n % 20, date '2024-01-01' + n FROM generate_series(1, 100) n;
INSERT INTO invoice_line SELECT i, l, 1 + (i + l) % 30, l * 10 FROM generate_series(1, 100) i, generate_series(1, 4) l WHERE l <= 1 + i % 4;
ANALYZE;
