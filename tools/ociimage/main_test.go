package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

var imageFlag = flag.String("image", "", "check this image tarball (`make image` passes dist/denorm-image.tar) instead of building one")

// TestImage builds denorm the way `make release` does (scripts/release.sh,
// stamped with a test version), writes its image with build, and reads the
// tarball back with the standard library alone, as a registry or runtime
// would: blobs match their digests, the configuration has the entrypoint, a
// numeric non-root user and the labels, the filesystem is the minimal one,
// and the binary taken from the layers runs and prints the stamped version.
// With -image it checks that tarball instead (every platform's structure;
// the binary of this machine's platform is run).
func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image holds linux binaries; this test runs one of them")
	}
	path := *imageFlag
	var want map[string]string // labels the image must carry (nil: take them from the image)
	if path == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dist := t.TempDir()
		stamp := map[string]string{"VERSION": "v0.0.0-imagetest", "COMMIT": "0123456789abcdef0123456789abcdef01234567", "DATE": "2026-01-02T03:04:05Z"}
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "release.sh"), "binaries")
		cmd.Env = append(os.Environ(), "DIST="+dist, "PLATFORMS=linux/"+runtime.GOARCH)
		for k, v := range stamp {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release.sh binaries: %v\n%s", err, out)
		}
		o := options{name: "ghcr.io/denorm/denorm", version: stamp["VERSION"], revision: stamp["COMMIT"],
			source: "https://github.com/denorm/denorm", license: filepath.Join(root, "LICENSE"), caCerts: caFile,
			binaries: []platformBinary{{platformOf(runtime.GOARCH), filepath.Join(dist, "denorm-linux-"+runtime.GOARCH)}}}
		o.created, _ = time.Parse(time.RFC3339, stamp["DATE"])
		path = filepath.Join(dist, "denorm-image.tar")
		o.out = path
		if err := build(o); err != nil {
			t.Fatal(err)
		}
		// Reproducible: the same inputs give the same bytes.
		o.out = filepath.Join(dist, "again.tar")
		if err := build(o); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(path)
		b, _ := os.ReadFile(o.out)
		if !bytes.Equal(a, b) {
			t.Errorf("two builds of the same image differ (%d and %d bytes)", len(a), len(b))
		}
		want = map[string]string{
			"org.opencontainers.image.version":  stamp["VERSION"],
			"org.opencontainers.image.revision": stamp["COMMIT"],
			"org.opencontainers.image.created":  stamp["DATE"],
			"org.opencontainers.image.source":   "https://github.com/denorm/denorm",
			"org.opencontainers.image.licenses": "Apache-2.0",
		}
	}
	checkImage(t, path, want)
}

func platformOf(arch string) v1.Platform {
	p := v1.Platform{OS: "linux", Architecture: arch}
	if arch == "arm64" {
		p.Variant = "v8"
	}
	return p
}

// The OCI structures the test reads, declared here so that the check does
// not rely on the library that wrote them.
type (
	ociDescriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Platform    *ociPlatform      `json:"platform"`
		Annotations map[string]string `json:"annotations"`
	}
	ociPlatform struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	}
	ociIndex struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Manifests     []ociDescriptor `json:"manifests"`
	}
	ociManifest struct {
		MediaType string          `json:"mediaType"`
		Config    ociDescriptor   `json:"config"`
		Layers    []ociDescriptor `json:"layers"`
	}
	ociConfig struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Created      string `json:"created"`
		Config       struct {
			Entrypoint []string          `json:"Entrypoint"`
			Cmd        []string          `json:"Cmd"`
			User       string            `json:"User"`
			Env        []string          `json:"Env"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
)

// checkImage reads the OCI archive at path and checks every platform's
// image; want, when not nil, are labels the images must carry.
func checkImage(t *testing.T, path string, want map[string]string) {
	entries := readTar(t, path, false)
	var layoutFile struct {
		Version string `json:"imageLayoutVersion"`
	}
	unmarshal(t, "oci-layout", entries["oci-layout"].data, &layoutFile)
	if layoutFile.Version != "1.0.0" {
		t.Errorf("oci-layout: imageLayoutVersion %q", layoutFile.Version)
	}
	blob := func(d ociDescriptor) []byte {
		t.Helper()
		hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
		e := entries["blobs/sha256/"+hexDigest]
		if !ok || e == nil {
			t.Fatalf("blob %s is missing", d.Digest)
		}
		sum := sha256.Sum256(e.data)
		if hex.EncodeToString(sum[:]) != hexDigest || int64(len(e.data)) != d.Size {
			t.Fatalf("blob %s: content does not match its digest and size %d", d.Digest, d.Size)
		}
		return e.data
	}

	var top ociIndex
	unmarshal(t, "index.json", entries["index.json"].data, &top)
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("index.json: want one image index, got %+v", top.Manifests)
	}
	tag := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
	if name := top.Manifests[0].Annotations["io.containerd.image.name"]; tag == "" || name != "ghcr.io/denorm/denorm:"+tag {
		t.Errorf("index.json: ref.name %q, image name %q: want ghcr.io/denorm/denorm:<ref.name>", tag, name)
	}
	var idx ociIndex
	unmarshal(t, "image index", blob(top.Manifests[0]), &idx)
	ranHere := false
	for _, md := range idx.Manifests {
		if md.Platform == nil || md.Platform.OS != "linux" {
			t.Fatalf("manifest %s: platform %+v, want linux", md.Digest, md.Platform)
		}
		arch := md.Platform.Architecture
		t.Run(arch, func(t *testing.T) {
			var m ociManifest
			unmarshal(t, "manifest", blob(md), &m)
			if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
				t.Errorf("manifest media types %q, config %q: want OCI", m.MediaType, m.Config.MediaType)
			}
			var c ociConfig
			unmarshal(t, "config", blob(m.Config), &c)
			if c.OS != "linux" || c.Architecture != arch {
				t.Errorf("config for %s/%s in the %s manifest", c.OS, c.Architecture, arch)
			}
			if got := c.Config.Entrypoint; len(got) != 1 || got[0] != "/usr/local/bin/denorm" {
				t.Errorf("entrypoint %q, want [/usr/local/bin/denorm]", got)
			}
			if len(c.Config.Cmd) != 0 {
				t.Errorf("cmd %q: want none (Kubernetes args go straight to denorm)", c.Config.Cmd)
			}
			u, g, ok := strings.Cut(c.Config.User, ":")
			uidN, err1 := strconv.Atoi(u)
			gidN, err2 := strconv.Atoi(g)
			if !ok || err1 != nil || err2 != nil || uidN == 0 || gidN == 0 {
				t.Errorf("user %q: want numeric uid:gid, not root (runAsNonRoot needs numbers)", c.Config.User)
			}
			labels := c.Config.Labels
			for _, k := range []string{"version", "revision", "created", "source", "licenses"} {
				if labels["org.opencontainers.image."+k] == "" {
					t.Errorf("label org.opencontainers.image.%s is missing", k)
				}
			}
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, labels[k], v)
				}
			}
			if labels["org.opencontainers.image.version"] != tag {
				t.Errorf("version label %q, tag %q", labels["org.opencontainers.image.version"], tag)
			}
			if c.Created != labels["org.opencontainers.image.created"] {
				t.Errorf("created %q, label %q", c.Created, labels["org.opencontainers.image.created"])
			}

			// The filesystem: layers applied in order (no whiteouts in ours).
			if len(c.RootFS.DiffIDs) != len(m.Layers) {
				t.Fatalf("%d diff_ids for %d layers", len(c.RootFS.DiffIDs), len(m.Layers))
			}
			fsys := map[string]*tarEntry{}
			created, _ := time.Parse(time.RFC3339, c.Created)
			for i, l := range m.Layers {
				if l.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
					t.Errorf("layer %d: media type %q", i, l.MediaType)
				}
				zr, err := gzip.NewReader(bytes.NewReader(blob(l)))
				if err != nil {
					t.Fatal(err)
				}
				raw, err := io.ReadAll(zr)
				if err != nil {
					t.Fatal(err)
				}
				if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != c.RootFS.DiffIDs[i] {
					t.Errorf("layer %d: diff_id does not match its content", i)
				}
				for name, e := range readTarBytes(t, raw, true) {
					if !e.mtime.Equal(created) {
						t.Errorf("%s: mtime %s, want the image's creation time %s", name, e.mtime, created)
					}
					fsys[name] = e
				}
			}
			checkFilesystem(t, fsys, c.Config.User)

			if arch != runtime.GOARCH {
				return
			}
			ranHere = true
			bin := filepath.Join(t.TempDir(), "denorm")
			if err := os.WriteFile(bin, fsys["usr/local/bin/denorm"].data, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil {
				t.Fatalf("denorm version from the image: %v\n%s", err, out)
			}
			for _, w := range []string{
				"denorm " + labels["org.opencontainers.image.version"] + "\n",
				"commit:         " + labels["org.opencontainers.image.revision"] + "\n",
				"built:          " + labels["org.opencontainers.image.created"] + "\n",
				"linux/" + arch + "\n",
				"mapping format: v",
			} {
				if !strings.Contains(string(out), w) {
					t.Errorf("denorm version from the image prints\n%s\nwithout %q", out, w)
				}
			}
			t.Logf("denorm version, from the %s image:\n%s", arch, out)
		})
	}
	if !ranHere {
		t.Errorf("no linux/%s image in %s: nothing was run", runtime.GOARCH, path)
	}
}

// checkFilesystem checks the minimal filesystem: the binary, the user, CA
// certificates, /tmp, and no shell.
func checkFilesystem(t *testing.T, fsys map[string]*tarEntry, user string) {
	t.Helper()
	uidS, _, _ := strings.Cut(user, ":")
	must := func(name string, typ byte, mode int64) *tarEntry {
		t.Helper()
		e := fsys[name]
		if e == nil {
			t.Errorf("%s is missing", name)
			return &tarEntry{}
		}
		if e.typ != typ || e.mode != mode {
			t.Errorf("%s: type %c mode %o, want %c %o", name, e.typ, e.mode, typ, mode)
		}
		return e
	}
	if bin := must("usr/local/bin/denorm", tar.TypeReg, 0o755); !bytes.HasPrefix(bin.data, []byte("\x7fELF")) {
		t.Errorf("usr/local/bin/denorm is not an ELF binary")
	}
	must("tmp/", tar.TypeDir, 0o1777)
	if ca := must("etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644); !bytes.Contains(ca.data, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Errorf("etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
	if lic := must("usr/share/doc/denorm/LICENSE", tar.TypeReg, 0o644); !bytes.Contains(lic.data, []byte("Apache License")) {
		t.Errorf("the license file is not the Apache License")
	}
	passwd := must("etc/passwd", tar.TypeReg, 0o644)
	found := false
	for _, line := range strings.Split(string(passwd.data), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[2] == uidS {
			found = true
			if h := fsys[strings.TrimPrefix(f[5], "/")+"/"]; h == nil || strconv.Itoa(h.uid) != uidS || h.mode != 0o700 {
				t.Errorf("the user's home %s is missing or not the user's own", f[5])
			}
		}
	}
	if !found {
		t.Errorf("/etc/passwd has no entry for uid %s:\n%s", uidS, passwd.data)
	}
	must("etc/group", tar.TypeReg, 0o644)
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox"} {
		if fsys[sh] != nil {
			t.Errorf("%s is in the image; it should hold no shell", sh)
		}
	}
	for name, e := range fsys {
		if !strings.HasPrefix(name, "home/") && (e.uid != 0 || e.gid != 0) {
			t.Errorf("%s is owned by %d:%d, want root", name, e.uid, e.gid)
		}
	}
}

type tarEntry struct {
	typ      byte
	mode     int64
	uid, gid int
	mtime    time.Time
	data     []byte
}

func readTar(t *testing.T, path string, dirs bool) map[string]*tarEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readTarBytes(t, b, dirs)
}

func readTarBytes(t *testing.T, b []byte, dirs bool) map[string]*tarEntry {
	t.Helper()
	entries := map[string]*tarEntry{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir && !dirs {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = &tarEntry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, mtime: h.ModTime, data: data}
	}
}

func unmarshal(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		err  string
	}{
		{"ok", []string{"-version", "v1", "-revision", "abc", "-created", "2026-01-02T03:04:05Z", "linux/amd64=a", "linux/arm64=b"}, ""},
		{"bad date", []string{"-version", "v1", "-revision", "abc", "-created", "yesterday", "linux/amd64=a"}, "want RFC 3339"},
		{"no version", []string{"-revision", "abc", "-created", "2026-01-02T03:04:05Z", "linux/amd64=a"}, "required"},
		{"darwin", []string{"-version", "v1", "-revision", "abc", "-created", "2026-01-02T03:04:05Z", "darwin/arm64=a"}, "want linux/ARCH=PATH"},
		{"no binary", []string{"-version", "v1", "-revision", "abc", "-created", "2026-01-02T03:04:05Z"}, "no binaries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseArgs(c.args)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one with %q", err, c.err)
			case c.err == "":
				var got []string
				for _, b := range o.binaries {
					got = append(got, fmt.Sprintf("%s/%s/%s=%s", b.platform.OS, b.platform.Architecture, b.platform.Variant, b.path))
				}
				if s := strings.Join(got, " "); s != "linux/amd64/=a linux/arm64/v8=b" {
					t.Errorf("binaries %s", s)
				}
			}
		})
	}
}
