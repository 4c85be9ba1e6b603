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

// TestKubernetesIndexedJob checks the structure of the Kubernetes manifest
// (no cluster runs here): an Indexed Job whose completions, parallelism and
// partition count agree, and whose command runs denorm migrate with
// --partition $(JOB_COMPLETION_INDEX)/N, --job, and a resume on restart.
func TestKubernetesIndexedJob(t *testing.T) {
	path := filepath.Join(testenv.Root(t), "deploy", "kubernetes", "denorm-job.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
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
						Command []string `yaml:"command"`
						Args    []string `yaml:"args"`
						Env     []struct {
							Name  string `yaml:"name"`
							Value string `yaml:"value"`
						} `yaml:"env"`
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
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if n, err := strconv.Atoi(env["PARTITIONS"]); err != nil || n != s.Completions {
		t.Errorf("PARTITIONS=%q, want the completions count %d", env["PARTITIONS"], s.Completions)
	}
	line := strings.Join(append(c.Command, c.Args...), " ")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`denorm migrate .*--partition "?\$\{JOB_COMPLETION_INDEX\}/\$\{PARTITIONS\}"?`),
		regexp.MustCompile(`--job \S+`),
		regexp.MustCompile(`--resume`),
		regexp.MustCompile(`--mapping \S+`),
	} {
		if !want.MatchString(line) {
			t.Errorf("the container's command does not match %s:\n%s", want, line)
		}
	}
	// The command line parses as denorm flags.
	for _, flag := range regexp.MustCompile(`\s(--[a-z-]+)`).FindAllStringSubmatch(line, -1) {
		name := strings.TrimPrefix(flag[1], "--")
		cmd := newMigrateCmd(&globals{})
		st := newStatusCmd(&globals{})
		if cmd.Flags().Lookup(name) == nil && st.Flags().Lookup(name) == nil && name != "prefix" {
			t.Errorf("the manifest uses %s, which denorm does not have", flag[1])
		}
	}
}
