package syncer

import (
	"context"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// TestIrrelevantUpdatesCostNothing: updates that change only columns no
// mapping reads write no document and trace nothing, and are counted as
// skipped; an update of a column the mapping reads, and one the replica
// identity cannot show as irrelevant, still rebuild their documents.
func TestIrrelevantUpdatesCostNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, ackSchema+`
		ALTER TABLE child ADD COLUMN unmapped int DEFAULT 0;
		ALTER TABLE parent ADD COLUMN unmapped int DEFAULT 0;`, "irrel")
	db, mapping, name := f.db, f.mapping, f.job
	ct := &countingTarget{Target: f.target}
	pass := func() PassStats {
		t.Helper()
		ct.reset()
		snap, plan := snapshotPlan(t, db, mapping)
		res, err := Sync(ctx, snap.Source(), plan, ct, Options{Job: name, Mapping: mapping, Method: job.SyncLogical})
		if err != nil {
			t.Fatal(err)
		}
		return res.Total
	}
	pass() // the initial copy
	written := func() int {
		n := 0
		for _, ids := range ct.writes {
			for _, c := range ids {
				n += c
			}
		}
		return n
	}

	// child has REPLICA IDENTITY FULL: 300 updates of a column no mapping
	// reads are seen as such.
	testenv.Exec(t, db, `UPDATE child SET unmapped = unmapped + 1`)
	st := pass()
	if w := written(); w != 0 || len(ct.deletes) != 0 {
		t.Errorf("updates of an unmapped column wrote %d documents, deleted %v", w, ct.deletes)
	}
	if c := st.Tables["public.child"]; c == nil || c.Skipped != 300 || c.Rows() != 0 {
		t.Errorf("child's changes: %+v, want 300 skipped, none applied", c)
	}

	// A mapped column of the same table: its 3 rows' document is rebuilt.
	testenv.Exec(t, db, `UPDATE child SET v = v + 1 WHERE parent_id = 7`)
	pass()
	if w := written(); w != 1 || ct.writes["parents"]["7"] != 1 {
		t.Errorf("an update of a mapped column wrote %v, want parent 7 once", ct.writes)
	}

	// parent has the default replica identity: an update that kept the
	// key sends no old values, and the mapping reads name, which is no
	// key column, so the update may matter: it is rebuilt.
	testenv.Exec(t, db, `UPDATE parent SET unmapped = 1 WHERE id <= 5`)
	st = pass()
	if w := written(); w != 5 {
		t.Errorf("updates the replica identity cannot show irrelevant wrote %d documents, want 5", w)
	}
	if c := st.Tables["public.parent"]; c == nil || c.Skipped != 0 || c.Updates != 5 {
		t.Errorf("parent's changes: %+v", c)
	}
}
