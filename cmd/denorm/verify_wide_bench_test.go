package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/procmem"
	"github.com/denorm/denorm/internal/testenv"
)

// wideBenchSQL is bench/wide.go's orders with 4 wide lines each (numeric,
// date, char(n), varchar), %[1]d orders.
const wideBenchSQL = `
CREATE TABLE orders (
  id bigint PRIMARY KEY, customer varchar(40) NOT NULL, status char(1) NOT NULL,
  ordered_on date NOT NULL, total numeric(14,2) NOT NULL);
CREATE TABLE order_line (
  order_id bigint NOT NULL REFERENCES orders(id), line_no integer NOT NULL,
  sku char(12) NOT NULL, description varchar(80) NOT NULL, quantity numeric(12,3) NOT NULL,
  unit_price numeric(12,2) NOT NULL, discount numeric(5,2), amount numeric(14,2) NOT NULL,
  ship_date date NOT NULL, due_date date NOT NULL, invoice_date date, warehouse char(4) NOT NULL,
  currency char(3) NOT NULL, uom char(2), carrier varchar(20), note varchar(200),
  PRIMARY KEY (order_id, line_no));
INSERT INTO orders (id, customer, status, ordered_on, total)
SELECT g, 'Customer ' || g %% 50000, (ARRAY['N','S','C'])[1 + g %% 3], date '2019-01-01' + g %% 2000,
       round((g %% 1000003) / 7.0, 2)
FROM generate_series(1, %[1]d) g;
INSERT INTO order_line
SELECT o, l, 'SKU' || lpad(((o * 7919 + l) %% 1000000)::text, 6, '0'),
       CASE WHEN o %% 10 = 0 THEN 'Café crème, größe ' || l ELSE 'Item ' || substr(md5((o * 4 + l)::text), 1, 12) END,
       ((o * l) %% 10000) / 8.0, round(((o * 31 + l) %% 100000) / 100.0, 2),
       CASE WHEN l = 2 THEN NULL ELSE (o %% 20)::numeric(5,2) END,
       round(((o * l) %% 10000) / 8.0 * (((o * 31 + l) %% 100000) / 100.0), 2),
       date '2020-01-01' + (o %% 1800)::int, date '2020-01-31' + (o %% 1800)::int,
       CASE WHEN o %% 5 = 0 THEN NULL ELSE date '2020-01-02' + (o %% 1800)::int END,
       'W' || o %% 50, (ARRAY['USD','EUR','GBP'])[1 + o %% 3],
       CASE l %% 3 WHEN 0 THEN 'EA' WHEN 1 THEN 'KG' END, 'Carrier ' || o %% 17,
       CASE WHEN o %% 4 = 0 THEN 'Deliver to the back door, ring twice — order ' || o END
FROM generate_series(1::bigint, %[1]d) o, generate_series(1, 4) l
ORDER BY o, l;
ANALYZE;
`

// BenchmarkVerifyWide runs migrate of the wide orders (bench/wide.yaml
// with numeric: double, DENORM_BENCH_WIDE orders, default 300,000) into a
// directory and verify of that directory, alternately, b.N times each,
// as separate processes with denorm's own memory settings, and reports
// the medians: each one's rate, verify's rate over migrate's (issue 29's
// goal: at least 0.75) and each one's peak RSS.
//
//	make bench-micro BENCH=VerifyWide PKGS=./cmd/denorm  (add -benchtime=3x)
func BenchmarkVerifyWide(b *testing.B) {
	n := 300_000
	if s := os.Getenv("DENORM_BENCH_WIDE"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("DENORM_BENCH_WIDE=%q: not a number of orders", s)
		}
		n = v
	}
	bin := denormBinary(b)
	sqlFile := filepath.Join(b.TempDir(), "wide.sql")
	if err := os.WriteFile(sqlFile, []byte(fmt.Sprintf(wideBenchSQL, n)), 0o644); err != nil {
		b.Fatal(err)
	}
	db := testenv.PostgresDB(b, sqlFile)
	yaml, err := os.ReadFile(repoPath(b, "bench", "wide.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	mapping := writeMapping(b, strings.Replace(string(yaml), "version: 1\n", "version: 1\nnumeric: double\n", 1))
	run := func(args ...string) (time.Duration, int64, string) {
		cmd := exec.Command(bin, args...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		peak, err := procmem.Run(cmd, 20*time.Millisecond)
		if err != nil {
			b.Fatalf("denorm %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return time.Since(start), peak, out.String()
	}
	var mRate, vRate, ratio, mRSS, vRSS []float64
	b.ResetTimer()
	for range b.N {
		dir := filepath.Join(b.TempDir(), "out")
		mt, mp, _ := run("migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir)
		vt, vp, out := run("verify", "--mapping", mapping, "--source", db, "--target", dir, "--temp-dir", b.TempDir())
		if !strings.Contains(out, "result: identical") {
			b.Fatalf("verify: not identical\n%s", out)
		}
		mRate, vRate = append(mRate, float64(n)/mt.Seconds()), append(vRate, float64(n)/vt.Seconds())
		ratio = append(ratio, mt.Seconds()/vt.Seconds())
		mRSS, vRSS = append(mRSS, float64(mp)/1024), append(vRSS, float64(vp)/1024)
		os.RemoveAll(dir)
	}
	med := func(x []float64) float64 { s := slices.Clone(x); slices.Sort(s); return s[len(s)/2] }
	b.ReportMetric(med(mRate), "migrate-docs/s")
	b.ReportMetric(med(vRate), "verify-docs/s")
	b.ReportMetric(med(ratio), "verify/migrate")
	b.ReportMetric(med(mRSS), "migrate-peak-RSS-MiB")
	b.ReportMetric(med(vRSS), "verify-peak-RSS-MiB")
}
