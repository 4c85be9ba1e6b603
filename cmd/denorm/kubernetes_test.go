package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/denorm/denorm/internal/testenv"
)

// TestKubernetesIndexedJob checks the Kubernetes manifest (no cluster runs
// here): an Indexed Job whose completions, parallelism and partition count
// agree; the image that make image builds (the repository scripts/release.sh
// names, with the tag it pins); no shell, since the image has none: the
// container gives only args to the image's entrypoint, and those args, with
// $(VAR) expanded as Kubernetes does, parse as a denorm migrate command line
// with --job, --partition <index>/N and --resume-or-start; and a non-root,
// read-only container with a writable /tmp.
func TestKubernetesIndexedJob(t *testing.T) {
	root := testenv.Root(t)
	path := filepath.Join(root, "deploy", "kubernetes", "denorm-job.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type envVar struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom any    `yaml:"valueFrom"`
	}
	var job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Parallelism    int    `yaml:"parallelism"`
			Template       struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Image           string   `yaml:"image"`
						Command         []string `yaml:"command"`
						Args            []string `yaml:"args"`
						Env             []envVar `yaml:"env"`
						SecurityContext struct {
							RunAsNonRoot           bool `yaml:"runAsNonRoot"`
							ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
						} `yaml:"securityContext"`
						VolumeMounts []struct {
							Name      string `yaml:"name"`
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(false)
	if err := dec.Decode(&job); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || s.CompletionMode != "Indexed" {
		t.Fatalf("want a batch/v1 Job with completionMode Indexed, got %s %s %q", job.APIVersion, job.Kind, s.CompletionMode)
	}
	if s.Completions < 2 || s.Parallelism != s.Completions {
		t.Errorf("completions %d, parallelism %d: want equal, at least 2", s.Completions, s.Parallelism)
	}
	if p := s.Template.Spec.RestartPolicy; p != "Never" && p != "OnFailure" {
		t.Errorf("restartPolicy %q", p)
	}
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(s.Template.Spec.Containers))
	}
	c := s.Template.Spec.Containers[0]

	// The image: the repository make image names, with the tag that
	// make release replaces by the release's version in dist/denorm-job.yaml.
	script, err := os.ReadFile(filepath.Join(root, "scripts", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE=\$\{IMAGE:-([^}]+)\}$`).FindSubmatch(script)
	if m == nil || !strings.Contains(string(script), `want="image: $IMAGE:latest"`) {
		t.Fatal("scripts/release.sh: no IMAGE default, or it no longer pins image: $IMAGE:latest")
	}
	if want := string(m[1]) + ":latest"; c.Image != want {
		t.Errorf("image %q, want %q (the image make image builds)", c.Image, want)
	}

	// No shell in the image: the entrypoint (denorm) gets the args.
	if len(c.Command) != 0 {
		t.Errorf("command %q: the image has no shell and its entrypoint is denorm; give args only", c.Command)
	}
	env := map[string]string{"JOB_COMPLETION_INDEX": "0"} // set by the Job controller
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if n, err := strconv.Atoi(env["PARTITIONS"]); err != nil || n != s.Completions {
		t.Errorf("PARTITIONS=%q, want the completions count %d", env["PARTITIONS"], s.Completions)
	}
	for _, need := range []string{"DENORM_SOURCE", "DENORM_TARGET"} {
		if _, ok := env[need]; !ok {
			t.Errorf("no %s in the container's environment", need)
		}
	}
	var args []string
	for _, a := range c.Args {
		args = append(args, regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(a, func(ref string) string {
			name := ref[2 : len(ref)-1]
			v, ok := env[name]
			if !ok {
				t.Errorf("args use %s, which the container's environment lacks (Kubernetes would leave it as is)", ref)
			}
			return v
		}))
	}
	cmd, rest, err := newRootCmd(&globals{}).Find(args)
	if err != nil || cmd.Name() != "migrate" {
		t.Fatalf("args %q: want a denorm migrate command line (%v)", c.Args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("args %q: %v", c.Args, err)
	}
	if extra := cmd.Flags().Args(); len(extra) != 0 {
		t.Errorf("args %q: migrate takes no arguments, got %q", c.Args, extra)
	}
	flag := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	if flag("job") == "" || flag("resume-or-start") != "true" {
		t.Errorf("want --job NAME and --resume-or-start, got --job %q, --resume-or-start %s", flag("job"), flag("resume-or-start"))
	}
	if want := "0/" + strconv.Itoa(s.Completions); flag("partition") != want {
		t.Errorf("--partition expands to %q for index 0, want %q", flag("partition"), want)
	}
	mounted := map[string]bool{}
	for _, v := range c.VolumeMounts {
		mounted[v.MountPath] = true
	}
	if !mounted[filepath.Dir(flag("mapping"))] {
		t.Errorf("--mapping %q is not in a mounted volume", flag("mapping"))
	}
	if !c.SecurityContext.RunAsNonRoot {
		t.Error("securityContext.runAsNonRoot is not set (the image's user is numeric, so it can be)")
	}
	if c.SecurityContext.ReadOnlyRootFilesystem && !mounted["/tmp"] {
		t.Error("a read-only root filesystem without a volume at /tmp")
	}
}
