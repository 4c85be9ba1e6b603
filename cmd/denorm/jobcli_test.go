package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJobCommandLine covers the job decisions the crash test does not:
// usage errors, a changed mapping, a corrupt checkpoint, a finished job,
// status output, and a resumed directory job equal to a plain run.
func TestJobCommandLine(t *testing.T) {
	src := seedDB(t)
	mapping := filepath.Join(t.TempDir(), "blog.yaml")
	orig, err := os.ReadFile(example(t, "blog"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mapping, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", dir, "--batch-size", "2"}
	expect := func(wantCode int, wantText []string, args ...string) string {
		t.Helper()
		return expectCLI(t, wantCode, wantText, args...)
	}
	expect(2, []string{"--workers and --partition need a server target"}, append(base, "--workers", "2")...)
	expect(2, []string{"--partition \"3/3\""}, append(base, "--partition", "3/3", "--target", "mongodb://127.0.0.1:1/x")...)
	expect(2, []string{"need --job"}, append(base, "--resume")...)
	expect(2, []string{"exclude each other"}, append(base, "--job", "j", "--resume", "--restart")...)
	expect(2, []string{`job "j" has no checkpoint`}, append(base, "--job", "j", "--resume")...)

	plain := t.TempDir()
	expect(0, nil, append(base, "--target", plain)...)
	expect(0, nil, append(base, "--job", "j")...)
	for _, f := range []string{"posts.jsonl", "comments.jsonl"} {
		a, _ := os.ReadFile(filepath.Join(plain, f))
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s of the job differs from the plain run's", f)
		}
	}
	expect(0, []string{"job j finished at", "nothing to resume"}, append(base, "--job", "j", "--resume")...)
	expect(0, []string{"job j: done", "posts", "comments", "next: nothing"}, "status", "--target", dir)

	// An unfinished job: mark the checkpoint running again.
	ck := filepath.Join(dir, "_denorm", "j.json")
	b, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	running := strings.Replace(string(b), `"phase": "done"`, `"phase": "running"`, 1)
	if err := os.WriteFile(ck, []byte(running), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(2, []string{`job "j" in`, "is unfinished", "To continue it:", "--job j --batch-size 2 --resume", "To start it over:", "--restart"}, append(base, "--job", "j")...)
	expect(0, []string{"job j: running", "next: denorm migrate", "--resume"}, "status", "--target", dir, "--job", "j")

	// A changed mapping refuses to resume.
	if err := os.WriteFile(mapping, append(orig, []byte("\n# changed\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(1, []string{"cannot resume: the mapping file changed", "--restart"}, append(base, "--job", "j", "--resume")...)
	if err := os.WriteFile(mapping, orig, 0o644); err != nil {
		t.Fatal(err)
	}

	// A corrupt checkpoint has its own error; --restart starts over.
	if err := os.WriteFile(ck, []byte(running[:len(running)/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(1, []string{"is corrupt", "--restart"}, append(base, "--job", "j", "--resume")...)
	expect(1, []string{"is corrupt", "1 corrupt checkpoint(s)"}, "status", "--target", dir)
	expect(0, nil, append(base, "--job", "j", "--restart")...)
	expect(0, []string{"job j: done"}, "status", "--target", dir, "--job", "j")
	expect(1, []string{`no job "nope"`}, "status", "--target", dir, "--job", "nope")
}
