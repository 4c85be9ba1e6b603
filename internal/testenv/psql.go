package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PsqlFile runs an SQL file with psql, for files the extended protocol
// cannot run (COPY ... FROM stdin, as in a pg_dump). psql comes from
// $DENORM_TEST_PG_BIN (set by scripts/testenv.sh), else from PATH; the
// file stops at its first error.
func PsqlFile(t testing.TB, dbURL, file string) {
	t.Helper()
	psql := "psql"
	if dir := os.Getenv("DENORM_TEST_PG_BIN"); dir != "" {
		psql = filepath.Join(dir, "psql")
	}
	cmd := exec.Command(psql, "--no-psqlrc", "-q", "-v", "ON_ERROR_STOP=1", "-d", dbURL, "-f", file)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c client_min_messages=warning")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql -f %s: %v\n%s", file, err, out)
	}
}
