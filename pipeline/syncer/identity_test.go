package syncer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/job"
)

// TestIdentityAdviceUsingIndex: a table whose replica identity lacks the
// columns sync needs is refused with the statements that fix it: REPLICA
// IDENTITY USING INDEX when a unique index over NOT NULL columns covers
// them (lighter than FULL), FULL always.
func TestIdentityAdviceUsingIndex(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, strings.Replace(ackSchema, "ALTER TABLE child REPLICA IDENTITY FULL;", `
		ALTER TABLE child ALTER COLUMN parent_id SET NOT NULL;
		CREATE UNIQUE INDEX child_by_parent ON child (parent_id, id);
		CREATE UNIQUE INDEX child_partial ON child (parent_id) WHERE v < 0;`, 1), "ident")
	src, plan := sourcePlan(t, f.db, f.mapping)
	_, err := Sync(ctx, src, plan, f.target, Options{Job: f.job, Mapping: f.mapping, Method: job.SyncLogical})
	var rie *extract.ReplicaIdentityError
	if !errors.As(err, &rie) {
		t.Fatalf("sync = %v, want a ReplicaIdentityError", err)
	}
	for _, want := range []string{
		`ALTER TABLE "public"."child" REPLICA IDENTITY USING INDEX child_by_parent;`,
		`ALTER TABLE "public"."child" REPLICA IDENTITY FULL;`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the advice lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "child_partial") {
		t.Errorf("a partial index was offered:\n%v", err)
	}
}
