package main

import (
	"context"
	"fmt"
	"log"
	"time"
)

// The wide benchmark: orders, each with four lines of 16 columns (four
// numeric, three date, four char(n), three varchar, a composite primary
// key), the shape of real order systems, where decoding the values rather
// than joining the rows is the work. bench/wide.yaml embeds the lines in
// their order.

const wideMapping = "bench/wide.yaml"

// wideLines is the number of lines per order.
const wideLines = 4

// wideDB is a database with n orders of wideLines lines each.
func wideDB(ctx context.Context, admin, name string, n int) (string, error) {
	t0 := time.Now()
	db, reused, err := benchDB(ctx, admin, name, fmt.Sprintf("wide %d", n))
	if err != nil || reused {
		return db, err
	}
	err = exec1(ctx, db, fmt.Sprintf(`
CREATE TABLE orders (
  id         bigint PRIMARY KEY,
  customer   varchar(40) NOT NULL,
  status     char(1) NOT NULL,
  ordered_on date NOT NULL,
  total      numeric(14,2) NOT NULL
);
CREATE TABLE order_line (
  order_id     bigint NOT NULL REFERENCES orders(id),
  line_no      integer NOT NULL,
  sku          char(12) NOT NULL,
  description  varchar(80) NOT NULL,
  quantity     numeric(12,3) NOT NULL,
  unit_price   numeric(12,2) NOT NULL,
  discount     numeric(5,2),
  amount       numeric(14,2) NOT NULL,
  ship_date    date NOT NULL,
  due_date     date NOT NULL,
  invoice_date date,
  warehouse    char(4) NOT NULL,
  currency     char(3) NOT NULL,
  uom          char(2),
  carrier      varchar(20),
  note         varchar(200),
  PRIMARY KEY (order_id, line_no)
);
INSERT INTO orders (id, customer, status, ordered_on, total)
SELECT g, 'Customer ' || g %% 50000, (ARRAY['N','S','C'])[1 + g %% 3], date '2019-01-01' + g %% 2000,
       round((g %% 1000003) / 7.0, 2)
FROM generate_series(1, %[1]d) g;
INSERT INTO order_line
SELECT o, l,
       'SKU' || lpad(((o * 7919 + l) %% 1000000)::text, 6, '0'),
       CASE WHEN o %% 10 = 0 THEN 'Café crème, größe ' || l ELSE 'Item ' || substr(md5((o * 4 + l)::text), 1, 12) END,
       ((o * l) %% 10000) / 8.0,
       round(((o * 31 + l) %% 100000) / 100.0, 2),
       CASE WHEN l = 2 THEN NULL ELSE (o %% 20)::numeric(5,2) END,
       round(((o * l) %% 10000) / 8.0 * (((o * 31 + l) %% 100000) / 100.0), 2),
       date '2020-01-01' + (o %% 1800)::int,
       date '2020-01-31' + (o %% 1800)::int,
       CASE WHEN o %% 5 = 0 THEN NULL ELSE date '2020-01-02' + (o %% 1800)::int END,
       'W' || o %% 50,
       (ARRAY['USD','EUR','GBP'])[1 + o %% 3],
       CASE l %% 3 WHEN 0 THEN 'EA' WHEN 1 THEN 'KG' END,
       'Carrier ' || o %% 17,
       CASE WHEN o %% 4 = 0 THEN 'Deliver to the back door, ring twice — order ' || o END
FROM generate_series(1::bigint, %[1]d) o, generate_series(1, %[2]d) l
ORDER BY o, l;
`, n, wideLines))
	if err == nil {
		err = finishDB(ctx, admin, name, db, fmt.Sprintf("wide %d", n))
	}
	if err != nil {
		return "", fmt.Errorf("generate orders: %w", err)
	}
	log.Printf("  %s: %d orders, %d lines in %.1fs", name, n, n*wideLines, time.Since(t0).Seconds())
	return db, nil
}

// wideLineJSON builds one line as denorm writes it (relaxed Extended
// JSON: numeric as $numberDecimal, dates as $date, char(n) without its
// blank padding - the cast to text trims it, as denorm does - NULLs left
// out).
const wideLineJSON = `json_strip_nulls(json_build_object(
  'lineNo', l.line_no, 'sku', l.sku::text, 'description', l.description,
  'quantity', json_build_object('$numberDecimal', l.quantity::text),
  'unitPrice', json_build_object('$numberDecimal', l.unit_price::text),
  'discount', CASE WHEN l.discount IS NOT NULL THEN json_build_object('$numberDecimal', l.discount::text) END,
  'amount', json_build_object('$numberDecimal', l.amount::text),
  'shipDate', json_build_object('$date', to_char(l.ship_date, 'YYYY-MM-DD"T00:00:00Z"')),
  'dueDate', json_build_object('$date', to_char(l.due_date, 'YYYY-MM-DD"T00:00:00Z"')),
  'invoiceDate', CASE WHEN l.invoice_date IS NOT NULL THEN json_build_object('$date', to_char(l.invoice_date, 'YYYY-MM-DD"T00:00:00Z"')) END,
  'warehouse', l.warehouse::text, 'currency', l.currency::text, 'uom', l.uom::text, 'carrier', l.carrier, 'note', l.note))`

const wideOrderJSON = `json_build_object('_id', o.id, 'customer', o.customer, 'status', o.status::text,
  'orderedOn', json_build_object('$date', to_char(o.ordered_on, 'YYYY-MM-DD"T00:00:00Z"')),
  'total', json_build_object('$numberDecimal', o.total::text), 'lines', coalesce(x.arr, '[]'::json))`

// wideQueries build the orders' documents inside PostgreSQL.
var wideQueries = map[string]string{
	"group-by-join": `
SELECT ` + wideOrderJSON + `
FROM orders o
LEFT JOIN (SELECT l.order_id, json_agg(` + wideLineJSON + ` ORDER BY l.line_no) AS arr
           FROM order_line l GROUP BY l.order_id) x ON x.order_id = o.id
ORDER BY o.id`,
	"lateral": `
SELECT ` + wideOrderJSON + `
FROM orders o
LEFT JOIN LATERAL (SELECT json_agg(` + wideLineJSON + ` ORDER BY l.line_no) AS arr
                   FROM order_line l WHERE l.order_id = o.id) x ON true
ORDER BY o.id`,
}
