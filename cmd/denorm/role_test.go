package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// TestRoleWarning: validate, migrate, plan and verify warn once, on
// stderr, when the source role can do more than read (a superuser, a
// member of pg_signal_backend or pg_write_all_data), and say nothing for
// the least-privileged role SECURITY.md recommends.
func TestRoleWarning(t *testing.T) {
	root := testenv.Root(t)
	mapping := filepath.Join(root, "mappings", "examples", "person.yaml")
	super := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	reader := testenv.ReaderRole(t, super, "", "pw")
	signaller := testenv.ReaderRole(t, super, "", "pw")
	writer := testenv.ReaderRole(t, super, "", "pw")
	testenv.Exec(t, super, fmt.Sprintf("GRANT pg_signal_backend TO %s; GRANT pg_write_all_data TO %s",
		roleOf(t, signaller), roleOf(t, writer)))
	dir := t.TempDir()
	commands := func(src string) [][]string {
		return [][]string{
			{"validate", "--mapping", mapping, "--source", src},
			{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", dir},
			{"plan", "--mapping", mapping, "--source", src},
			{"verify", "--mapping", mapping, "--source", src, "--target", dir},
		}
	}
	for _, c := range []struct {
		name, src, want string
	}{
		{"superuser", super, "is a superuser"},
		{"pg_signal_backend", signaller, "is a member of pg_signal_backend:"},
		{"pg_write_all_data", writer, "is a member of pg_write_all_data:"},
		{"reader", reader, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range commands(c.src) {
				code, out, errs := runCLI(t, args...)
				if code != 0 {
					t.Fatalf("denorm %s: exit %d\n%s%s", args[0], code, out, errs)
				}
				n := strings.Count(errs, "level=WARN msg=\"the source role")
				switch {
				case c.want == "" && n != 0:
					t.Errorf("%s as a reader warns:\n%s", args[0], errs)
				case c.want != "" && (n != 1 || !strings.Contains(errs, c.want) || !strings.Contains(errs, "SECURITY.md")):
					t.Errorf("%s: %d warnings, want one saying %q:\n%s", args[0], n, c.want, errs)
				}
				if strings.Contains(out, "source role") {
					t.Errorf("%s: the warning is on stdout", args[0])
				}
			}
		})
	}
}

// roleOf is the user name of a PostgreSQL URL.
func roleOf(t *testing.T, u string) string {
	t.Helper()
	_, rest, _ := strings.Cut(u, "://")
	user, _, _ := strings.Cut(rest, ":")
	return user
}
