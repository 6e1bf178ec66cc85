package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// job is the part of a Kubernetes Job the deployment relies on.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          *int   `yaml:"completions"`
		Parallelism          *int   `yaml:"parallelism"`
		BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
		Template             struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name         string   `yaml:"name"`
					Image        string   `yaml:"image"`
					Command      []string `yaml:"command"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readJob(t *testing.T, path string) *job {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j job
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(false)
	if err := dec.Decode(&j); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" {
		t.Errorf("%s: %s %s, want batch/v1 Job", path, j.APIVersion, j.Kind)
	}
	if n := len(j.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%s: %d containers, want 1", path, n)
	}
	if p := j.Spec.Template.Spec.RestartPolicy; p != "Never" {
		t.Errorf("%s: restartPolicy %q: a retry must be a new pod (Never)", path, p)
	}
	return &j
}

// flag returns the value after name in a command line.
func flag(cmd []string, name string) string {
	if i := slices.Index(cmd, name); i >= 0 && i+1 < len(cmd) {
		return cmd[i+1]
	}
	return ""
}

// sharedVolume returns the claim of the volume mounted at the directory
// that holds path, and that directory.
func sharedVolume(t *testing.T, what string, j *job, path string) (claim string) {
	t.Helper()
	c := j.Spec.Template.Spec.Containers[0]
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			for _, v := range j.Spec.Template.Spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName != "" {
					return v.PersistentVolumeClaim.ClaimName
				}
			}
			t.Errorf("%s: the volume %s mounted at %s is not a persistent volume claim", what, m.Name, m.MountPath)
			return ""
		}
	}
	t.Errorf("%s: %s is on no mounted volume", what, path)
	return ""
}

// TestKubernetesJobs checks the Indexed Job and the merge Job: the fields
// that make the shards of one run and their merge meet.
func TestKubernetesJobs(t *testing.T) {
	sup := readJob(t, "k8s/superopt-job.yaml")
	s := sup.Spec
	if s.CompletionMode != "Indexed" {
		t.Errorf("superopt-job: completionMode %q, want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || *s.Completions < 1 {
		t.Fatalf("superopt-job: completions %v", s.Completions)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex < 1 {
		t.Errorf("superopt-job: backoffLimitPerIndex %v: a failed shard must be retried for its index", s.BackoffLimitPerIndex)
	}
	if s.Parallelism != nil && *s.Parallelism > *s.Completions {
		t.Errorf("superopt-job: parallelism %d > completions %d", *s.Parallelism, *s.Completions)
	}
	cmd := s.Template.Spec.Containers[0].Command
	if len(cmd) < 3 || cmd[0] != "mirage" || cmd[1] != "superopt" {
		t.Fatalf("superopt-job: command %q, want mirage superopt ...", cmd)
	}
	if flag(cmd, "--shard") != "auto" {
		t.Errorf("superopt-job: --shard %q, want auto (JOB_COMPLETION_INDEX)", flag(cmd, "--shard"))
	}
	if n, err := strconv.Atoi(flag(cmd, "--shards")); err != nil || n != *s.Completions {
		t.Errorf("superopt-job: --shards %q, completions %d: they must be equal", flag(cmd, "--shards"), *s.Completions)
	}
	dir := flag(cmd, "--shard-dir")
	claim := sharedVolume(t, "superopt-job", sup, dir)

	merge := readJob(t, "k8s/merge-job.yaml")
	mcmd := merge.Spec.Template.Spec.Containers[0].Command
	if len(mcmd) < 3 || mcmd[0] != "mirage" || mcmd[1] != "merge" {
		t.Fatalf("merge-job: command %q, want mirage merge DIR ...", mcmd)
	}
	if mcmd[2] != dir {
		t.Errorf("merge-job merges %s, the shards go to %s", mcmd[2], dir)
	}
	if mc := sharedVolume(t, "merge-job", merge, mcmd[2]); mc != claim {
		t.Errorf("merge-job reads claim %q, the shards write claim %q", mc, claim)
	}
	if out := flag(mcmd, "-o"); out == "" {
		t.Error("merge-job: no -o")
	} else {
		sharedVolume(t, "merge-job", merge, out+"/x")
	}
	if img, mimg := sup.Spec.Template.Spec.Containers[0].Image, merge.Spec.Template.Spec.Containers[0].Image; img != mimg {
		t.Errorf("the shards run %s, the merge %s: one mirage version must write and merge", img, mimg)
	}
}

// TestSlurmScriptsParse checks the Slurm scripts' syntax and submit.sh's
// refusals.
func TestSlurmScriptsParse(t *testing.T) {
	for _, f := range []string{"slurm/superopt.sbatch", "slurm/merge.sbatch", "slurm/submit.sh", "../scripts/slurm-local.sh"} {
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", f, err, out)
		}
	}
	// An sbatch that fails with 99: submit.sh must refuse before it.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte("#!/bin/sh\nexit 99\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"k8s/superopt-job.yaml"}, {"nothere.py", "2"}, {"slurm/submit.sh", "0"}, {"slurm/submit.sh", "x"}} {
		cmd := exec.Command("slurm/submit.sh", args...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
			t.Errorf("submit.sh %q: exit %d, want 2\n%s", args, code, out)
		}
	}
}

// TestSlurm runs a sharded superopt through a real single-node Slurm
// cluster (scripts/slurm-local.sh): the array and the merge that
// submit.sh submits give the answer of one process; a shard left out makes
// the merge refuse (exit 2) until it has run.
func TestSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Slurm cluster")
	}
	skip := t.Skipf
	if os.Getenv("MIRAGE_REQUIRE_SLURM") == "1" { // .ci/run: it must run
		skip = t.Fatalf
	}
	// The daemons run as root: the script does, through sudo if need be.
	var asRoot []string
	if os.Geteuid() != 0 {
		if err := exec.Command("sudo", "-n", "true").Run(); err != nil {
			skip("not root and no sudo without a password: slurmctld and slurmd cannot be started here")
		}
		asRoot = []string{"sudo", "-n", "--preserve-env=PATH"}
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		if _, err := exec.LookPath("sbatch"); err != nil {
			skip("no apt-get and no Slurm: nothing to run the cluster with")
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	state := filepath.Join(work, "slurm")
	if asRoot != nil {
		// The daemons' files are root's: t.TempDir could not remove them.
		if state, err = os.MkdirTemp("", "mirage-slurm-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { exec.Command("sudo", "-n", "rm", "-rf", state).Run() })
	}
	script := func(verb string) *exec.Cmd {
		argv := append(slices.Clone(asRoot), filepath.Join(root, "scripts/slurm-local.sh"), verb, state)
		return exec.Command(argv[0], argv[1:]...)
	}
	start := script("start")
	start.Stderr = os.Stderr
	started, err := start.Output()
	t.Cleanup(func() { script("stop").Run() })
	if err != nil {
		t.Fatalf("starting Slurm: %v\n%s", err, started)
	}
	conf := filepath.Join(state, "slurm.conf")

	mirage := filepath.Join(work, "mirage")
	if out, err := exec.Command("go", "build", "-o", mirage, "../cmd/mirage").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	program := filepath.Join(root, "examples/gated_mlp.py")
	env := append(os.Environ(), "SLURM_CONF="+conf, "MIRAGE="+mirage)
	run := func(dir string, extra []string, name string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(slices.Clone(env), extra...)
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s: %v", name, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	// One process, for the answer the cluster must give.
	if out, code := run(work, nil, mirage, "superopt", program, "--no-cache", "--time-limit", "120s", "-o", "one"); code != 0 {
		t.Fatalf("one process: exit %d\n%s", code, out)
	}

	// submit.sh: 3 shards, then the merge.
	sub := filepath.Join(work, "submitted")
	os.MkdirAll(sub, 0o755)
	out, code := run(sub, []string{"MIRAGE_OUT=out"}, filepath.Join(root, "deploy/slurm/submit.sh"), program, "3", "--", "--no-cache", "--time-limit", "120s")
	if code != 0 {
		t.Fatalf("submit.sh: exit %d\n%s", code, out)
	}
	var array, merge int
	if _, err := fmt.Sscanf(out, "array %d\nmerge %d", &array, &merge); err != nil {
		t.Fatalf("submit.sh printed %q: %v", out, err)
	}
	if state := waitJob(t, env, merge, 3*time.Minute); state != "COMPLETED" {
		t.Fatalf("the merge job ended %s\n%s", state, logs(sub))
	}
	sameAnswer(t, filepath.Join(work, "one"), filepath.Join(sub, "out"))
	if n := len(glob(t, filepath.Join(sub, "shards/gated_mlp/*.shard-*-of-3.json"))); n != 3 {
		t.Errorf("%d shard files, want 3", n)
	}

	// An index left out (--array=0,2): the merge refuses until it has run.
	gap := filepath.Join(work, "gap")
	os.MkdirAll(gap, 0o755)
	superopt := filepath.Join(root, "deploy/slurm/superopt.sbatch")
	mergeJob := filepath.Join(root, "deploy/slurm/merge.sbatch")
	opts := []string{"--wait", "--export=ALL,MIRAGE_SHARDS=3"}
	if out, code := run(gap, nil, "sbatch", append(opts, "--array=0,2", superopt, program, "--no-cache", "--time-limit", "120s")...); code != 0 {
		t.Fatalf("sbatch --array=0,2: exit %d\n%s\n%s", code, out, logs(gap))
	}
	if out, code := run(gap, []string{"MIRAGE_OUT=out"}, "sbatch", "--wait", mergeJob, program); code == 0 {
		t.Fatalf("the merge of shards 0 and 2 of 3 succeeded\n%s", out)
	}
	if l := logs(gap); !strings.Contains(l, "shard(s) 1 of 3 (0..2) missing") {
		t.Errorf("the refused merge's output does not name the missing shard:\n%s", l)
	}
	if _, err := os.Stat(filepath.Join(gap, "out")); !os.IsNotExist(err) {
		t.Errorf("the refused merge wrote %s/out", gap)
	}
	if out, code := run(gap, nil, "sbatch", append(opts, "--array=1", superopt, program, "--no-cache", "--time-limit", "120s")...); code != 0 {
		t.Fatalf("sbatch --array=1: exit %d\n%s\n%s", code, out, logs(gap))
	}
	if out, code := run(gap, []string{"MIRAGE_OUT=out"}, "sbatch", "--wait", mergeJob, program); code != 0 {
		t.Fatalf("the merge after the missing shard ran: exit %d\n%s\n%s", code, out, logs(gap))
	}
	sameAnswer(t, filepath.Join(work, "one"), filepath.Join(gap, "out"))
}

// waitJob waits until Slurm job id has ended and returns its state.
func waitJob(t *testing.T, env []string, id int, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		cmd := exec.Command("scontrol", "show", "job", strconv.Itoa(id))
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("scontrol show job %d: %v", id, err)
		}
		for _, field := range strings.Fields(string(out)) {
			if state, ok := strings.CutPrefix(field, "JobState="); ok {
				switch state {
				case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING":
				default:
					return state
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %d did not end in %v", id, limit)
	return ""
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// logs returns the jobs' output files in dir.
func logs(dir string) string {
	var b strings.Builder
	m, _ := filepath.Glob(filepath.Join(dir, "mirage-*.out"))
	for _, f := range m {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "== %s\n%s", filepath.Base(f), data)
	}
	return b.String()
}

// sameAnswer checks that the output set in got is the one in want: the
// same graphs in the same order, the same CUDA bytes.
func sameAnswer(t *testing.T, want, got string) {
	t.Helper()
	graphs := func(dir string) string {
		data, err := os.ReadFile(filepath.Join(dir, "gated_mlp.ugraph.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Meta   json.RawMessage   `json:"meta"`
			Graphs []json.RawMessage `json:"graphs"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(doc)
		return string(out)
	}
	if graphs(want) != graphs(got) {
		t.Errorf("%s: the graphs differ from one process's", got)
	}
	for _, f := range []string{"gated_mlp.cu", "gated_mlp.h"} {
		a, err := os.ReadFile(filepath.Join(want, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s/%s differs from one process's", got, f)
		}
	}
}
