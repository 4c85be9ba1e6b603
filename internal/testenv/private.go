package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// OpenTempDir is a new temporary directory other users may traverse and
// read (MkdirTemp and t.TempDir make theirs 0700): for a server running
// as its own user, or a command run as another. It is removed when t
// ends.
func OpenTempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// PrivatePostgres starts a PostgreSQL cluster of the test's own with the
// project's scripts/pg.sh on a free port, for server settings the shared
// server must keep (wal_level, slot limits), and returns its admin URL
// and a function that restarts it (after ALTER SYSTEM). It is stopped
// when t ends.
func PrivatePostgres(t testing.TB) (url string, restart func()) {
	t.Helper()
	script := filepath.Join(Root(t), "scripts", "pg.sh")
	data := filepath.Join(OpenTempDir(t, "denorm-pg-"), "pg")
	port := strings.Split(ClosedPort(t), ":")[1]
	pg := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(script, args...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("pg.sh %v: %v\n%s", args, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	url = pg("start", data, port)
	// Registered after OpenTempDir's removal, so it runs first.
	t.Cleanup(func() { _ = exec.Command(script, "stop", data).Run() })
	return url, func() {
		pg("stop", data)
		pg("start", data, port)
	}
}
