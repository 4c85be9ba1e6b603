package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

func TestResolveBuild(t *testing.T) {
	vcs := func(rev, when, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}
	}
	here := buildInfo{GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, MappingFormat: mappings.CurrentVersion}
	with := func(v, c, d string) buildInfo { b := here; b.Version, b.Commit, b.Date = v, c, d; return b }
	for _, c := range []struct {
		name  string
		stamp buildStamp
		bi    *debug.BuildInfo
		want  buildInfo
	}{
		{"stamped by make release", buildStamp{"v1.2.3", "abc123", "2026-01-02T03:04:05Z"},
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("fff", "2020-01-01T00:00:00Z", "true")},
			with("v1.2.3", "abc123", "2026-01-02T03:04:05Z")},
		{"go install @v1.4.0", buildStamp{}, &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			with("v1.4.0", "unknown", "unknown")},
		{"go build in a modified checkout", buildStamp{},
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260102030405-abc123def456+dirty"}, Settings: vcs("abc123def456", "2026-01-02T03:04:05Z", "true")},
			with("v0.0.0-20260102030405-abc123def456+dirty", "abc123def456-dirty", "2026-01-02T03:04:05Z")},
		{"go build, no VCS", buildStamp{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			with("devel", "unknown", "unknown")},
		{"no build info", buildStamp{}, nil, with("devel", "unknown", "unknown")},
		{"version stamped alone", buildStamp{version: "v2.0.0"}, &debug.BuildInfo{Settings: vcs("abc", "2026-01-02T03:04:05Z", "false")},
			with("v2.0.0", "abc", "2026-01-02T03:04:05Z")},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := resolveBuild(c.stamp, c.bi)
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// TestVersionCommand: `denorm version` and `denorm --version` print the same
// report with the injected stamps.
func TestVersionCommand(t *testing.T) {
	saved := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })
	version, commit, date = "v9.8.7", "0123abcd", "2026-05-06T07:08:09Z"
	want := "denorm v9.8.7\n" +
		"commit:         0123abcd\n" +
		"built:          2026-05-06T07:08:09Z\n" +
		"go:             " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
		"mapping format: v1\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || errs != "" {
			t.Fatalf("denorm %s: exit %d\n%s", args[0], code, errs)
		}
		if out != want {
			t.Errorf("denorm %s printed\n%s\nwant\n%s", args[0], out, want)
		}
	}
	if code, _, errs := runCLI(t, "version", "extra"); code != exitUsage {
		t.Errorf("denorm version extra: exit %d, want %d\n%s", code, exitUsage, errs)
	}
}

// TestReleaseBinary builds denorm for this machine as `make release` does
// (scripts/release.sh: CGO_ENABLED=0, -trimpath, -buildid=, -ldflags -X),
// twice, and checks the binary: statically linked, byte for byte the same
// both times, and `version` / `--version` print the stamps.
func TestReleaseBinary(t *testing.T) {
	root := testenv.Root(t)
	platform := runtime.GOOS + "/" + runtime.GOARCH
	stamp := []string{"VERSION=v0.0.0-releasetest", "COMMIT=fedcba9876543210fedcba9876543210fedcba98", "DATE=2026-03-04T05:06:07Z"}
	var bins [2][]byte
	var bin string
	for i := range bins {
		dist := t.TempDir()
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "release.sh"), "binaries")
		cmd.Env = append(append(os.Environ(), "DIST="+dist, "PLATFORMS="+platform), stamp...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release.sh binaries: %v\n%s", err, out)
		}
		bin = filepath.Join(dist, "denorm-"+runtime.GOOS+"-"+runtime.GOARCH)
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bins[i] = b
	}
	if !bytes.Equal(bins[0], bins[1]) {
		t.Errorf("two release builds differ: sha256 %x and %x", sha256.Sum256(bins[0]), sha256.Sum256(bins[1]))
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("the release binary is dynamically linked (program header %v)", p.Type)
			}
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", bin, args[0], err, out)
		}
		for _, w := range []string{"denorm v0.0.0-releasetest\n", "commit:         fedcba9876543210fedcba9876543210fedcba98\n",
			"built:          2026-03-04T05:06:07Z\n", "go:             go", platform + "\n", "mapping format: v1\n"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("denorm %s printed\n%s\nwithout %q", args[0], out, w)
			}
		}
	}
}
