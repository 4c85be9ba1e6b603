package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
)

func main() {
	ctx := context.Background()
	src, err := extract.ParseSource(os.Args[1])
	if err != nil {
		panic(err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		panic(err)
	}
	f, err := mappings.Load(os.Args[2])
	if err != nil {
		panic(err)
	}
	cat, err := extract.ReadCatalog(ctx, snap, f.Tables())
	if err != nil {
		panic(err)
	}
	plan, err := mappings.Resolve(f, cat)
	if err != nil {
		panic(err)
	}
	if len(os.Args) > 3 {
		sql, _ := extract.CoverageSQL(ctx, snap, plan)
		fmt.Println(sql)
		return
	}
	for i := 0; i < 5; i++ {
		start := time.Now()
		cov, err := extract.Coverage(ctx, snap, plan)
		if err != nil {
			panic(err)
		}
		var rows, un int64
		for _, c := range cov {
			rows += c.Rows
			un += c.Unreached
		}
		fmt.Printf("%d tables, %d rows, %d unreached: %v\n", len(cov), rows, un, time.Since(start))
	}
}
