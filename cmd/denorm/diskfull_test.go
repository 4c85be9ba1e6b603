package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
)

// diskFullSQL is 6,000 rows whose documents take about 400 KB as JSON
// Lines.
const diskFullSQL = `CREATE TABLE part (id int PRIMARY KEY, name text NOT NULL, note text NOT NULL);
INSERT INTO part SELECT g, 'part ' || g, repeat('x', 30) FROM generate_series(1, 6000) g;`

const diskFullMapping = `version: 1
collections:
  - name: parts
    table: part
    fields: [name, note]
    indexes:
      - {keys: [name], unique: true}
`

// smallFS mounts a tmpfs of size (mount's units: "128k") at dir, which
// the test fills for real, when this process may mount one (root, with
// the capability); ok is false when it may not.
func smallFS(t *testing.T, dir string, size string) (remount func(size string), ok bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("cannot mount a tmpfs (%v: %s)", err, bytes.TrimSpace(out))
		return nil, false
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return func(size string) {
		if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
			t.Fatalf("remount %s: %v: %s", dir, err, out)
		}
	}, true
}

// wantTargetError checks a run the directory target stopped: exit 1, the
// target's error naming the file and the system's words, the command to
// run next, and nothing about the source.
func wantTargetError(t *testing.T, what string, code int, out string, want ...string) {
	t.Helper()
	if code != 1 {
		t.Errorf("%s: exit %d, want 1\n%s", what, code, out)
	}
	for _, w := range append([]string{"target directory "}, want...) {
		if !strings.Contains(out, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
	for _, bad := range []string{"source connection", "reconnect", "write /", ": write "} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: output has %q:\n%s", what, bad, out)
		}
	}
}

// TestDirectoryTargetWriteErrors makes a directory target's writes fail
// for real, on each of its write paths, and checks that the failure is
// reported as the target's (the file, the system's error, what to do,
// the command that resumes; exit 1), never as a lost source connection,
// and that resuming once the cause is gone gives the files of an
// uninterrupted run:
//   - the collection's file when the file system fills up mid-load (a
//     small tmpfs, remounted bigger to resume), and when it grows past
//     the file size the process may write (prlimit --fsize: EFBIG,
//     which denorm reports because it ignores SIGXFSZ);
//   - the checkpoint file: its temporary file on a full device
//     (/dev/full) mid-run, and its rename onto a directory;
//   - the index file: written on a full device, and flushed (fsync) on a
//     device that cannot (/dev/null);
//   - the collection's file opened on a device that cannot be truncated.
func TestDirectoryTargetWriteErrors(t *testing.T) {
	bin := denormBinary(t)
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, diskFullSQL)
	mapping := writeMapping(t, diskFullMapping)
	migrate := func(target string, extra ...string) []string {
		return append([]string{"migrate", "-q", "--progress", "none", "--batch-size", "500", "--mapping", mapping, "--source", src, "--target", target}, extra...)
	}
	want := filepath.Join(t.TempDir(), "want")
	runDenorm(t, bin, migrate(want, "--job", "w")...)
	wantData := readFile(t, filepath.Join(want, "parts.jsonl"))
	wantIndexes := readFile(t, filepath.Join(want, "parts.indexes.json"))
	same := func(what, dir string) {
		t.Helper()
		if got := readFile(t, filepath.Join(dir, "parts.jsonl")); !bytes.Equal(got, wantData) {
			t.Errorf("%s: parts.jsonl (%d bytes) differs from an uninterrupted run's (%d bytes)", what, len(got), len(wantData))
		}
		if got := readFile(t, filepath.Join(dir, "parts.indexes.json")); !bytes.Equal(got, wantIndexes) {
			t.Errorf("%s: parts.indexes.json differs from an uninterrupted run's:\n%s", what, got)
		}
	}

	t.Run("file system full", func(t *testing.T) {
		mnt := filepath.Join(t.TempDir(), "small")
		remount, mounted := smallFS(t, mnt, "128k")
		if !mounted {
			t.Skip("cannot mount a tmpfs here; the file size limit below fails writes instead")
		}
		target := filepath.Join(mnt, "out")
		args := migrate(target, "--job", "full")
		p := startDenorm(t, bin, args...)
		wantTargetError(t, "full", p.wait(), p.out.String(),
			"cannot write parts.jsonl: no space left on device (the file system holding the target directory is full: free space on it)",
			"the last checkpoint saved (", "stands. Once the target takes writes again, continue with:", "--job full --batch-size 500 --resume\n")
		remount("16m")
		runDenorm(t, bin, append(args, "--resume")...)
		same("resumed after the file system was full", target)
	})
	t.Run("file size limit", func(t *testing.T) {
		prlimit, err := exec.LookPath("prlimit")
		if err != nil {
			t.Skip("no prlimit to limit the file size denorm may write")
		}
		target := filepath.Join(t.TempDir(), "out")
		args := migrate(target, "--job", "fsize")
		p := startDenorm(t, prlimit, append([]string{"--fsize=100000", "--", bin}, args...)...)
		wantTargetError(t, "file size limit", p.wait(), p.out.String(),
			"cannot write parts.jsonl: file too large (the file is over the largest size this process may write (ulimit -f)",
			"continue with:", "--job fsize --batch-size 500 --resume\n")
		runDenorm(t, bin, append(args, "--resume")...)
		same("resumed without the file size limit", target)
	})

	// The checkpoint gate holds the run at a checkpoint mid-load; the
	// test then breaks the checkpoint file's path and lets it save.
	breakCheckpoint := func(t *testing.T, jobName string, breakIt func(ckpt string)) (target string, args []string, code int, out string) {
		target = filepath.Join(t.TempDir(), "out")
		args = migrate(target, "--job", jobName)
		g := startGated(t, bin, args...)
		held, _ := g.until(func(c, _ *job.Record) bool {
			for _, s := range c.Streams {
				if s.Rows >= 2000 {
					return true
				}
			}
			return false
		}, nil)
		if held == nil {
			g.wait()
			t.Fatalf("the run ended before the checkpoint aimed at:\n%s", g.output())
		}
		breakIt(filepath.Join(target, load.RecordCollection, jobName+".json"))
		g.ungate()
		code = g.wait()
		return target, args, code, g.output()
	}
	t.Run("checkpoint write", func(t *testing.T) {
		target, args, code, out := breakCheckpoint(t, "ckw", func(ckpt string) {
			if err := os.Symlink("/dev/full", ckpt+".tmp"); err != nil {
				t.Fatal(err)
			}
		})
		wantTargetError(t, "checkpoint write", code, out, "cannot write _denorm/ckw.json.tmp: no space left on device", "--job ckw --batch-size 500 --resume\n")
		if _, err := os.Lstat(filepath.Join(target, "_denorm", "ckw.json.tmp")); !os.IsNotExist(err) {
			t.Errorf("the checkpoint's temporary file is left behind (%v)", err)
		}
		runDenorm(t, bin, append(args, "--resume")...)
		same("resumed after the checkpoint could not be written", target)
	})
	t.Run("checkpoint rename", func(t *testing.T) {
		var saved []byte
		target, args, code, out := breakCheckpoint(t, "ckr", func(ckpt string) {
			saved = readFile(t, ckpt)
			if err := os.Remove(ckpt); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(ckpt, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		})
		wantTargetError(t, "checkpoint rename", code, out, "cannot rename ckr.json.tmp to _denorm/ckr.json: ", "--job ckr --batch-size 500 --resume\n")
		ckpt := filepath.Join(target, "_denorm", "ckr.json")
		if err := os.RemoveAll(ckpt); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ckpt, saved, 0o644); err != nil {
			t.Fatal(err)
		}
		runDenorm(t, bin, append(args, "--resume")...)
		same("resumed after the checkpoint could not be renamed into place", target)
	})

	// Files of the target replaced by devices before the run.
	devices := []struct {
		name, file, device, job string
		want                    []string
	}{
		{"index file write", "parts.indexes.json.tmp", "/dev/full", "ixw",
			[]string{`create the indexes of "parts": target directory`, "cannot write parts.indexes.json.tmp: no space left on device", "--job ixw --batch-size 500 --resume\n"}},
		{"index file sync", "parts.indexes.json.tmp", "/dev/null", "ixs",
			[]string{"cannot sync parts.indexes.json.tmp: invalid argument", "--job ixs --batch-size 500 --resume\n"}},
		// An empty file is not truncated (ext4 would write a truncated
		// file back when it is closed: load/dir_resume.go), so the first
		// operation the device refuses is the sync.
		{"collection file", "parts.jsonl", "/dev/full", "data",
			[]string{"cannot sync parts.jsonl: invalid argument", "start the job again with:", "--job data --batch-size 500\n"}},
	}
	for _, d := range devices {
		t.Run(d.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "out")
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(target, d.file)
			if err := os.Symlink(d.device, link); err != nil {
				t.Fatal(err)
			}
			args := migrate(target, "--job", d.job)
			p := startDenorm(t, bin, args...)
			wantTargetError(t, d.name, p.wait(), p.out.String(), d.want...)
			if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			next := "--resume"
			if d.job == "data" {
				next = "--resume-or-start"
			}
			runDenorm(t, bin, append(args, next)...)
			same("after "+d.name, target)
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
