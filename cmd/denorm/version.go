package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/mappings"
)

// Build stamps, set by `make release` (scripts/release.sh) with
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=<sha> -X main.date=<RFC 3339>"
//
// A build without them (go install, go build) reports what the Go toolchain
// recorded instead: the module version of `go install ...@v1.2.3`, or the VCS
// revision and commit time of a build inside a git checkout (see
// resolveBuild). After init, version is what checkpoints record.
var (
	version string
	commit  string
	date    string
)

func init() {
	bi, _ := debug.ReadBuildInfo()
	b := resolveBuild(buildStamp{version, commit, date}, bi)
	version, commit, date = b.Version, b.Commit, b.Date
}

// buildStamp is what -ldflags set (empty strings when not stamped).
type buildStamp struct{ version, commit, date string }

// buildInfo is what `denorm version` and `denorm --version` print.
type buildInfo struct {
	Version       string
	Commit        string
	Date          string
	GoVersion     string
	Platform      string
	MappingFormat int
}

// resolveBuild fills each empty stamp from the toolchain's build info (bi
// may be nil) and the rest from the running binary.
func resolveBuild(s buildStamp, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: s.version, Commit: s.commit, Date: s.date,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		MappingFormat: mappings.CurrentVersion}
	if bi != nil {
		if v := bi.Main.Version; b.Version == "" && v != "" && v != "(devel)" {
			b.Version = v
		}
		if bi.GoVersion != "" {
			b.GoVersion = bi.GoVersion
		}
		var modified bool
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				if s.commit == "" {
					b.Commit = kv.Value
				}
			case "vcs.time":
				if s.date == "" {
					b.Date = kv.Value
				}
			case "vcs.modified":
				modified = kv.Value == "true"
			}
		}
		if modified && s.commit == "" && b.Commit != "" {
			b.Commit += "-dirty"
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

// String is the version report, one fact a line.
func (b buildInfo) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "denorm %s\n", b.Version)
	fmt.Fprintf(&sb, "commit:         %s\n", b.Commit)
	fmt.Fprintf(&sb, "built:          %s\n", b.Date)
	fmt.Fprintf(&sb, "go:             %s %s\n", b.GoVersion, b.Platform)
	fmt.Fprintf(&sb, "mapping format: v%d\n", b.MappingFormat)
	return sb.String()
}

func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return resolveBuild(buildStamp{version, commit, date}, bi)
}

// setVersion gives root the --version flag, printing what `denorm version` prints.
func setVersion(root *cobra.Command) {
	root.Version = currentBuild().String()
	root.SetVersionTemplate("{{.Version}}")
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Example: versionExamples,
		Short:   "Print denorm's version, commit, build date, Go version and mapping format",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprint(g.stdout, currentBuild())
			return nil
		},
	}
}
