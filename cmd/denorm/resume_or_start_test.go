package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeOrStart: --resume-or-start, what the Kubernetes manifest runs in
// an image without a shell, starts a job that has no checkpoint, resumes one
// that has (giving the plain run's files), and leaves a finished one alone.
func TestResumeOrStart(t *testing.T) {
	src := seedDB(t)
	mapping := example(t, "blog")
	plain, dir := t.TempDir(), t.TempDir()
	base := []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "2"}
	expect := func(wantCode int, wantText []string, args ...string) {
		t.Helper()
		expectCLI(t, wantCode, wantText, args...)
	}
	same := func() {
		t.Helper()
		for _, f := range []string{"posts.jsonl", "comments.jsonl"} {
			a, _ := os.ReadFile(filepath.Join(plain, f))
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if len(a) == 0 || string(a) != string(b) {
				t.Errorf("%s of the job differs from the plain run's", f)
			}
		}
	}
	expect(2, []string{"need --job"}, append(base, "--target", dir, "--resume-or-start")...)
	expect(2, []string{"--resume-or-start excludes --resume and --restart"}, append(base, "--target", dir, "--job", "k", "--resume-or-start", "--resume")...)

	expect(0, nil, append(base, "--target", plain)...)
	expect(0, nil, append(base, "--target", dir, "--job", "k", "--resume-or-start")...)
	same()
	expect(0, []string{"job k finished at", "nothing to resume"}, append(base, "--target", dir, "--job", "k", "--resume-or-start")...)

	// An interrupted job: the checkpoint says running, the files hold more
	// than it acknowledged. It resumes (a plain rerun would refuse, exit 2).
	ck := filepath.Join(dir, "_denorm", "k.json")
	b, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ck, []byte(strings.Replace(string(b), `"phase": "done"`, `"phase": "running"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "comments.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"written":"after the checkpoint"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	expect(2, []string{"is unfinished"}, append(base, "--target", dir, "--job", "k")...)
	expect(0, []string{"resuming job"}, append(base, "--target", dir, "--job", "k", "--resume-or-start")...)
	same()
}

// expectCLI runs one command line in-process and checks its exit code and
// that its output (stdout and stderr) holds every wantText; it returns the
// output.
func expectCLI(t *testing.T, wantCode int, wantText []string, args ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != wantCode {
		t.Fatalf("denorm %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out, errs)
	}
	for _, w := range wantText {
		if !strings.Contains(out+errs, w) {
			t.Errorf("denorm %s: output lacks %q:\n%s%s", strings.Join(args, " "), w, out, errs)
		}
	}
	return out + errs
}
