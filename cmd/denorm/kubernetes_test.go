package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
	var job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			CompletionMode string      `yaml:"completionMode"`
			Completions    int         `yaml:"completions"`
			Parallelism    int         `yaml:"parallelism"`
			Template       podTemplate `yaml:"template"`
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

	checkImage(t, root, c.Image)
	env := map[string]string{"JOB_COMPLETION_INDEX": "0"} // set by the Job controller
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if n, err := strconv.Atoi(env["PARTITIONS"]); err != nil || n != s.Completions {
		t.Errorf("PARTITIONS=%q, want the completions count %d", env["PARTITIONS"], s.Completions)
	}
	cmd := containerCommand(t, "migrate", c.Command, c.Args, c.Env, env)
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

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

// checkImage: the image is the repository make image names, with the tag
// that make release replaces by the release's version in dist/.
func checkImage(t *testing.T, root, image string) {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(root, "scripts", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE=\$\{IMAGE:-([^}]+)\}$`).FindSubmatch(script)
	if m == nil || !strings.Contains(string(script), `want="image: $IMAGE:latest"`) {
		t.Fatal("scripts/release.sh: no IMAGE default, or it no longer pins image: $IMAGE:latest")
	}
	if want := string(m[1]) + ":latest"; image != want {
		t.Errorf("image %q, want %q (the image make image builds)", image, want)
	}
}

// containerCommand checks a container's command line: no command (the
// image has no shell; its entrypoint, denorm, gets the args), the source
// and target URLs in the environment, and args that, with $(VAR) expanded
// from vars as Kubernetes does, parse as the denorm subcommand want. It
// returns that command with its flags parsed.
func containerCommand(t *testing.T, want string, command, args []string, envs []envVar, vars map[string]string) *cobra.Command {
	t.Helper()
	if len(command) != 0 {
		t.Errorf("command %q: the image has no shell and its entrypoint is denorm; give args only", command)
	}
	have := map[string]envVar{}
	for _, e := range envs {
		have[e.Name] = e
	}
	for _, need := range []string{"DENORM_SOURCE", "DENORM_TARGET"} {
		if _, ok := have[need]; !ok {
			t.Errorf("no %s in the container's environment", need)
		}
	}
	var expanded []string
	for _, a := range args {
		expanded = append(expanded, regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(a, func(ref string) string {
			name := ref[2 : len(ref)-1]
			v, ok := vars[name]
			if !ok {
				t.Errorf("args use %s, which the container's environment lacks (Kubernetes would leave it as is)", ref)
			}
			return v
		}))
	}
	cmd, rest, err := newRootCmd(&globals{}).Find(expanded)
	if err != nil || cmd.Name() != want {
		t.Fatalf("args %q: want a denorm %s command line (%v)", args, want, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("args %q: %v", args, err)
	}
	if extra := cmd.Flags().Args(); len(extra) != 0 {
		t.Errorf("args %q: %s takes no arguments, got %q", args, want, extra)
	}
	return cmd
}

// podSpec is the part of a pod template the manifests' tests read.
type podSpec struct {
	RestartPolicy string `yaml:"restartPolicy"`
	Containers    []struct {
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []envVar `yaml:"env"`
		Ports   []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		ReadinessProbe *struct {
			HTTPGet *struct {
				Path string `yaml:"path"`
				Port string `yaml:"port"`
			} `yaml:"httpGet"`
		} `yaml:"readinessProbe"`
		SecurityContext struct {
			RunAsNonRoot           bool `yaml:"runAsNonRoot"`
			ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
}

type podTemplate struct {
	Metadata struct {
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec podSpec `yaml:"spec"`
}

// syncManifest reads one of the sync manifests and checks what both
// share: one container with the release image, args only, parsing as a
// denorm sync command line that passes sync's own flag checks, the URLs
// from the Secret, the mapping in a mounted volume, non-root with a
// writable /tmp. It returns the parsed command's flags.
func syncManifest(t *testing.T, file string, doc any, tmpl func() *podTemplate) (*podTemplate, func(string) string) {
	t.Helper()
	root := testenv.Root(t)
	path := filepath.Join(root, "deploy", "kubernetes", file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	p := tmpl()
	if len(p.Spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", file, len(p.Spec.Containers))
	}
	c := p.Spec.Containers[0]
	checkImage(t, root, c.Image)
	for _, e := range c.Env {
		if (e.Name == "DENORM_SOURCE" || e.Name == "DENORM_TARGET") && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("%s: %s does not come from a Secret", file, e.Name)
		}
	}
	cmd := containerCommand(t, "sync", c.Command, c.Args, c.Env, map[string]string{})
	f := cmd.Flags()
	flag := func(name string) string { return f.Lookup(name).Value.String() }
	o := &syncOptions{job: flag("job"), method: flag("method"), metricsAddr: flag("metrics-addr"), mapping: flag("mapping")}
	o.once, _ = f.GetBool("once")
	o.follow, _ = f.GetBool("follow")
	o.drop, _ = f.GetBool("drop")
	o.every, _ = f.GetDuration("every")
	o.batchSize, _ = f.GetInt("batch-size")
	o.workers, _ = f.GetInt("workers")
	o.maxKeys, _ = f.GetInt("max-keys")
	o.maxDelay, _ = f.GetDuration("max-delay")
	o.retryFor, _ = f.GetDuration("retry-for")
	o.sortMemMiB, _ = f.GetInt("sort-memory")
	o.leaseTTL, _ = f.GetDuration("lease-ttl")
	if err := o.check(); err != nil {
		t.Errorf("%s: args %q: %v", file, c.Args, err)
	}
	if o.method == "" {
		t.Errorf("%s: no --method: a new job needs one", file)
	}
	mounted := map[string]bool{}
	for _, v := range c.VolumeMounts {
		mounted[v.MountPath] = true
	}
	if !mounted[filepath.Dir(o.mapping)] {
		t.Errorf("%s: --mapping %q is not in a mounted volume", file, o.mapping)
	}
	if d := flag("temp-dir"); d != "" && !mounted[d] {
		t.Errorf("%s: --temp-dir %q is not a mounted volume", file, d)
	}
	if !c.SecurityContext.RunAsNonRoot || c.SecurityContext.ReadOnlyRootFilesystem && !mounted["/tmp"] {
		t.Errorf("%s: want runAsNonRoot, and a volume at /tmp with a read-only root filesystem", file)
	}
	return p, flag
}

// TestKubernetesSync checks the sync manifests (no cluster runs here): a
// CronJob whose pod runs one pass (sync --once) and never overlaps the
// next (concurrencyPolicy Forbid), and a Deployment of one replica,
// replaced with Recreate (a slot streams to one reader), following the
// changes (sync --method logical --follow) with its metrics address's port
// declared as the container's metrics port, named in the prometheus.io
// scrape annotations and probed for readiness at /metrics; both as
// syncManifest checks.
func TestKubernetesSync(t *testing.T) {
	var cron struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Schedule          string `yaml:"schedule"`
			ConcurrencyPolicy string `yaml:"concurrencyPolicy"`
			JobTemplate       struct {
				Spec struct {
					Template podTemplate `yaml:"template"`
				} `yaml:"spec"`
			} `yaml:"jobTemplate"`
		} `yaml:"spec"`
	}
	p, flag := syncManifest(t, "denorm-sync-cronjob.yaml", &cron, func() *podTemplate { return &cron.Spec.JobTemplate.Spec.Template })
	if cron.APIVersion != "batch/v1" || cron.Kind != "CronJob" || len(strings.Fields(cron.Spec.Schedule)) != 5 {
		t.Errorf("cronjob: want a batch/v1 CronJob with a five-field schedule, got %s %s %q", cron.APIVersion, cron.Kind, cron.Spec.Schedule)
	}
	if cron.Spec.ConcurrencyPolicy != "Forbid" {
		t.Errorf("cronjob: concurrencyPolicy %q, want Forbid (two passes of one job must not race)", cron.Spec.ConcurrencyPolicy)
	}
	if flag("once") != "true" {
		t.Errorf("cronjob: want sync --once")
	}
	if rp := p.Spec.RestartPolicy; rp != "Never" && rp != "OnFailure" {
		t.Errorf("cronjob: restartPolicy %q", rp)
	}

	var dep struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Replicas int `yaml:"replicas"`
			Strategy struct {
				Type string `yaml:"type"`
			} `yaml:"strategy"`
			Template podTemplate `yaml:"template"`
		} `yaml:"spec"`
	}
	p, flag = syncManifest(t, "denorm-sync-deployment.yaml", &dep, func() *podTemplate { return &dep.Spec.Template })
	if dep.APIVersion != "apps/v1" || dep.Kind != "Deployment" || dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != "Recreate" {
		t.Errorf("deployment: want an apps/v1 Deployment of 1 replica with strategy Recreate, got %s %s, %d, %q", dep.APIVersion, dep.Kind, dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}
	if flag("follow") != "true" || flag("method") != "logical" {
		t.Errorf("deployment: want sync --method logical --follow")
	}
	_, port, err := net.SplitHostPort(flag("metrics-addr"))
	if err != nil {
		t.Fatalf("deployment: --metrics-addr %q: %v", flag("metrics-addr"), err)
	}
	c := p.Spec.Containers[0]
	declared := ""
	for _, cp := range c.Ports {
		if cp.Name == "metrics" {
			declared = strconv.Itoa(cp.ContainerPort)
		}
	}
	a := p.Metadata.Annotations
	if declared != port || a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != port || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("deployment: metrics on port %s; container port 'metrics' %q; annotations %v: want them to agree, scrape true, path /metrics", port, declared, a)
	}
	if r := c.ReadinessProbe; r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/metrics" || r.HTTPGet.Port != "metrics" {
		t.Errorf("deployment: want a readiness probe GET /metrics on the metrics port")
	}
}
