package syncer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestStepsRegistered: sync tells Options.Debug only of the steps in Steps,
// by their constants: a step told by a literal name, or a constant missing
// from Steps, is a commit point the crash tests would never aim at.
func TestStepsRegistered(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, p := range Steps {
		if registered[p.Step] {
			t.Errorf("step %q listed twice in Steps", p.Step)
		}
		registered[p.Step] = true
		if len(p.Copy)+len(p.Pass) == 0 {
			t.Errorf("step %q is reached by no method", p.Step)
		}
	}
	consts := map[string]bool{}
	calls := 0
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Debug" {
					return true
				}
				calls++
				id, ok := call.Args[0].(*ast.Ident)
				if !ok || !strings.HasPrefix(id.Name, "Step") {
					t.Errorf("%s: Debug told of %s, not of a Step constant", name, describe(call.Args[0]))
					return true
				}
				consts[id.Name] = true
				return true
			})
		}
	}
	if calls == 0 {
		t.Fatal("no Debug call found")
	}
	// Every constant told must be in Steps (StepSlotCreated is told by
	// job.SetupSlot, given Debug).
	values := map[string]string{
		"StepSlotCreated": StepSlotCreated, "StepCopySaved": StepCopySaved, "StepBatchReceived": StepBatchReceived,
		"StepDocumentsWritten": StepDocumentsWritten, "StepDocumentsDeleted": StepDocumentsDeleted,
		"StepCollectionRebuilt": StepCollectionRebuilt, "StepBatchWritten": StepBatchWritten,
		"StepCheckpointSaved": StepCheckpointSaved, "StepPositionConfirmed": StepPositionConfirmed,
		"StepIdleSaved": StepIdleSaved, "StepIdleConfirmed": StepIdleConfirmed,
		"StepPassWritten": StepPassWritten, "StepPassSaved": StepPassSaved,
		"StepCopyEntryDone": StepCopyEntryDone, "StepDocumentsTombstoned": StepDocumentsTombstoned,
		"StepRebuildRecorded": StepRebuildRecorded, "StepMappingRecorded": StepMappingRecorded,
	}
	for c := range consts {
		v, ok := values[c]
		if !ok || !registered[v] {
			t.Errorf("Debug is told of %s, which Steps does not list", c)
		}
	}
	for c, v := range values {
		if !registered[v] {
			t.Errorf("%s (%q) is not in Steps", c, v)
		}
	}
	if len(values) != len(Steps) {
		t.Errorf("Steps lists %d steps, the constants are %d", len(Steps), len(values))
	}
}

func describe(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok {
		return "the literal " + lit.Value
	}
	return "an expression"
}
