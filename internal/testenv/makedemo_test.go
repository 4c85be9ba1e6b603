package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testOnlyTools are the programs only tests use (the HTML report is
// rendered in headless Chromium, the man pages formatted with groff):
// make demo must neither install nor need them.
var testOnlyTools = []string{"chromium", "chromium-browser", "google-chrome", "groff"}

// strippedPath is a directory of links to every program on PATH but the
// test-only ones (testOnlyTools, and anything named chrom* or groff*),
// readable by every user: a PATH of it is this machine without Chromium
// and groff.
func strippedPath(t *testing.T) string {
	t.Helper()
	dir := OpenTempDir(t, "denorm-nochromium-")
	for _, d := range filepath.SplitList(os.Getenv("PATH") + ":/usr/local/go/bin") {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, "chrom") || strings.HasPrefix(n, "google-chrome") || strings.HasPrefix(n, "groff") {
				continue
			}
			link := filepath.Join(dir, n)
			if _, err := os.Lstat(link); err == nil {
				continue // the first on PATH wins, as for the shell
			}
			_ = os.Symlink(filepath.Join(d, n), link)
		}
	}
	return dir
}

// TestMakeDemoDeps: make demo installs only what the demo needs. Its
// recipe (make -n) runs scripts/pg.sh install and builds the test server,
// never scripts/deps.sh, Chromium, groff or apt-get; make test and make
// deps still run scripts/deps.sh (Chromium and groff for the tests). On
// this machine with Chromium and groff taken off PATH, as an unprivileged
// user, the demo's install step succeeds (PostgreSQL is present), where
// scripts/deps.sh (what make demo ran before) fails asking for them; and
// make demo-deps itself succeeds with that PATH.
func TestMakeDemoDeps(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not installed: %v", err)
	}
	root := Root(t)
	makeN := func(target string) string {
		t.Helper()
		cmd := exec.Command("make", "--no-print-directory", "-n", target)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		return string(out)
	}
	demo := makeN("demo")
	for _, want := range []string{"scripts/pg.sh install", "scripts/testenv.sh scripts/demo.sh"} {
		if !strings.Contains(demo, want) {
			t.Errorf("make -n demo does not run %q:\n%s", want, demo)
		}
	}
	for _, bad := range append([]string{"scripts/deps.sh", "apt-get", "groff-base"}, testOnlyTools...) {
		if strings.Contains(demo, bad) {
			t.Errorf("make -n demo runs %q, which only the tests need:\n%s", bad, demo)
		}
	}
	for _, target := range []string{"test", "deps"} {
		if out := makeN(target); !strings.Contains(out, "scripts/deps.sh") {
			t.Errorf("make -n %s no longer runs scripts/deps.sh (Chromium and groff for the tests):\n%s", target, out)
		}
	}

	if testing.Short() {
		// The rest needs PostgreSQL installed and may build the test
		// server: not in the short suite (no servers).
		t.Log("short: the recipes only")
		return
	}
	bin := strippedPath(t)
	for _, tool := range testOnlyTools {
		if p, err := exec.LookPath(filepath.Join(bin, tool)); err == nil {
			t.Fatalf("the stripped PATH still has %s", p)
		}
	}
	// As an unprivileged user when this runs as root (the server
	// binaries may then not be installed: pg.sh would need root).
	asUser := func(args ...string) *exec.Cmd {
		env := []string{"PATH=" + bin, "HOME=/nonexistent", "LANG=C"}
		if os.Getuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "nobody", "--", "env", "-i"}, append(env, args...)...)...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = env
		return cmd
	}
	// The unprivileged user may not reach the checkout (a clone under a
	// 0700 temporary directory): it runs a copy of the scripts in a
	// directory everyone can read.
	scripts := readableScripts(t, root)
	cmd := asUser("bash", filepath.Join(scripts, "scripts", "pg.sh"), "install")
	cmd.Dir = scripts
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("make demo's install step (scripts/pg.sh install), unprivileged, without Chromium and groff on PATH: %v\n%s", err, out)
	}
	cmd = asUser("bash", filepath.Join(scripts, "scripts", "deps.sh"))
	cmd.Dir = scripts
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "missing packages: chromium groff-base") {
		t.Errorf("scripts/deps.sh, unprivileged, without Chromium and groff: %v; want it to fail asking for them (else this test shows nothing)\n%s", err, out)
	}
	// make demo-deps itself, as this user (make tools may build the test
	// server into bin/).
	cmd = exec.Command(filepath.Join(bin, "make"), "--no-print-directory", "demo-deps")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin, "MAKEFLAGS=", "MFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("make demo-deps without Chromium and groff on PATH: %v\n%s", err, out)
	} else {
		t.Logf("make demo-deps without Chromium and groff on PATH:\n%s", out)
	}
}

// readableScripts copies root's scripts/pg.sh and scripts/deps.sh (deps.sh
// runs pg.sh beside it) into a new directory any user can read and run,
// removed when t ends, and returns it.
func readableScripts(t *testing.T, root string) string {
	t.Helper()
	dir := OpenTempDir(t, "denorm-scripts-")
	// Chmod too: the umask may take bits from Mkdir's mode.
	if err := os.Mkdir(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pg.sh", "deps.sh"} {
		b, err := os.ReadFile(filepath.Join(root, "scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "scripts", name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
