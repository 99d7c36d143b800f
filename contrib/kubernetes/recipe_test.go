package kubernetes_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hubcli/hub/events"
)

const (
	jobFile       = "job.yaml"
	dockerFile    = "Dockerfile"
	readmeFile    = "README.md"
	repoRoot      = "../.."
	installScript = repoRoot + "/scripts/install-agents.sh"
	pinProject    = repoRoot + "/tools/npm" // what install-agents.sh installs from
	hubContainer  = "hub"
)

// recipe is job.yaml, every document decoded strictly into its Kubernetes
// type: a field Kubernetes does not know is an error, as kubectl apply's
// server-side validation would make it.
type recipe struct {
	job        *batchv1.Job
	configMaps map[string]*corev1.ConfigMap
	claims     map[string]*corev1.PersistentVolumeClaim
}

func loadRecipe(t *testing.T) recipe {
	t.Helper()
	data, err := os.ReadFile(jobFile)
	if err != nil {
		t.Fatal(err)
	}
	r := recipe{configMaps: map[string]*corev1.ConfigMap{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	for i, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(data), -1) {
		if onlyComments(doc) {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("%s: document %d: %v", jobFile, i, err)
		}
		strict := func(obj any) {
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s: document %d (%s): %v", jobFile, i, tm.Kind, err)
			}
		}
		switch tm.APIVersion + " " + tm.Kind {
		case "batch/v1 Job":
			if r.job != nil {
				t.Fatalf("%s: more than one Job", jobFile)
			}
			r.job = &batchv1.Job{}
			strict(r.job)
		case "v1 ConfigMap":
			cm := &corev1.ConfigMap{}
			strict(cm)
			r.configMaps[cm.Name] = cm
		case "v1 PersistentVolumeClaim":
			pvc := &corev1.PersistentVolumeClaim{}
			strict(pvc)
			r.claims[pvc.Name] = pvc
		default:
			// A Secret in particular: the API key is created with kubectl,
			// never kept in a file of the repository.
			t.Fatalf("%s: document %d: unexpected %s %q", jobFile, i, tm.APIVersion, tm.Kind)
		}
	}
	if r.job == nil {
		t.Fatalf("%s: no batch/v1 Job", jobFile)
	}
	return r
}

func onlyComments(doc string) bool {
	for line := range strings.SplitSeq(doc, "\n") {
		if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
			return false
		}
	}
	return true
}

func (r recipe) pod() *corev1.PodSpec { return &r.job.Spec.Template.Spec }

func (r recipe) container(t *testing.T, name string) *corev1.Container {
	t.Helper()
	for i := range r.pod().Containers {
		if c := &r.pod().Containers[i]; c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q in the Job's pod", name)
	return nil
}

func (r recipe) volume(t *testing.T, name string) *corev1.Volume {
	t.Helper()
	for i := range r.pod().Volumes {
		if v := &r.pod().Volumes[i]; v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %q in the Job's pod", name)
	return nil
}

// mountOf returns c's mount whose directory holds file, the deepest one.
func mountOf(c *corev1.Container, file string) (corev1.VolumeMount, bool) {
	var best corev1.VolumeMount
	found := false
	for _, m := range c.VolumeMounts {
		dir := path.Clean(m.MountPath)
		if strings.HasPrefix(path.Clean(file), dir+"/") && (!found || len(dir) > len(path.Clean(best.MountPath))) {
			best, found = m, true
		}
	}
	return best, found
}

// hubCommand is the hub container's command line, which must be `hub run`
// with flags only (the prompt from --prompt-file).
func hubCommand(t *testing.T, r recipe) []string {
	t.Helper()
	c := r.container(t, hubContainer)
	argv := append(slices.Clone(c.Command), c.Args...)
	if len(argv) < 2 || argv[0] != "hub" || argv[1] != "run" {
		t.Fatalf("container %q runs %q, want hub run …", hubContainer, argv)
	}
	return argv[2:]
}

// hubSetting is one row of `hub config --json`.
type hubSetting struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

var hubBin struct {
	path string
	err  error
}

// buildHub builds hub from this checkout (in hub's own module) once.
func buildHub(t *testing.T) string {
	t.Helper()
	if hubBin.path == "" && hubBin.err == nil {
		dir, err := os.MkdirTemp("", "hub-k8s-test-")
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "hub")
		cmd := exec.Command("go", "build", "-C", repoRoot, "-o", bin, "./cmd/hub")
		out, err := cmd.CombinedOutput()
		if err != nil {
			hubBin.err = fmt.Errorf("go build ./cmd/hub: %v\n%s", err, out)
		}
		hubBin.path = bin
	}
	if hubBin.err != nil {
		t.Fatal(hubBin.err)
	}
	return hubBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hubBin.path != "" {
		os.RemoveAll(filepath.Dir(hubBin.path))
	}
	os.Exit(code)
}

// hubSettings runs `hub config --json` with the hub container's flags and
// the HUB_* variables of its environment (values from the ConfigMaps), as
// hub itself reads them: an unknown flag or a bad value fails the test.
func hubSettings(t *testing.T, r recipe) map[string]hubSetting {
	t.Helper()
	bin := buildHub(t)
	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"config", "--json"}, hubCommand(t, r)...)...)
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH")}
	for _, e := range r.container(t, hubContainer).Env {
		if !strings.HasPrefix(e.Name, "HUB_") {
			continue
		}
		v := e.Value
		if ref := envConfigMapRef(e); ref != nil {
			v = r.configMapValue(t, ref.Name, ref.Key)
		}
		cmd.Env = append(cmd.Env, e.Name+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hub config %q: %v\n%s", hubCommand(t, r), err, stderr.String())
	}
	var cfg struct {
		Settings []hubSetting `json:"settings"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("hub config --json: %v\n%s", err, out)
	}
	m := map[string]hubSetting{}
	for _, s := range cfg.Settings {
		m[s.Name] = s
	}
	return m
}

func envConfigMapRef(e corev1.EnvVar) *corev1.ConfigMapKeySelector {
	if e.ValueFrom == nil {
		return nil
	}
	return e.ValueFrom.ConfigMapKeyRef
}

func (r recipe) configMapValue(t *testing.T, name, key string) string {
	t.Helper()
	cm, ok := r.configMaps[name]
	if !ok {
		t.Fatalf("ConfigMap %q is not in %s", name, jobFile)
	}
	v, ok := cm.Data[key]
	if !ok {
		t.Fatalf("ConfigMap %q has no key %q", name, key)
	}
	return v
}

func setting(t *testing.T, s map[string]hubSetting, name string) string {
	t.Helper()
	v, ok := s[name]
	if !ok {
		t.Fatalf("hub config has no setting %q", name)
	}
	switch x := v.Value.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func TestJob(t *testing.T) {
	r := loadRecipe(t)
	job, pod := r.job, r.pod()
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Errorf("apiVersion/kind %s/%s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never (podFailurePolicy needs it)", pod.RestartPolicy)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit < 1 {
		t.Errorf("backoffLimit %v, want one of at least 1 (the retryable exit codes are retried)", job.Spec.BackoffLimit)
	}

	s := hubSettings(t, r)
	if got := setting(t, s, "agent"); got != "opencode" {
		t.Errorf("hub run --agent %q, want opencode", got)
	}
	if got := setting(t, s, "output"); got != "jsonl" {
		t.Errorf("hub run --output %q, want jsonl (hub's event stream is the Job's log)", got)
	}
	if got := setting(t, s, "model"); got == "" {
		t.Errorf("hub run has no --model (OpenCode would fall back to a hosted default model)")
	}
	timeout, err := time.ParseDuration(setting(t, s, "timeout"))
	if err != nil || timeout <= 0 {
		t.Fatalf("hub run --timeout %q: want a limit", setting(t, s, "timeout"))
	}

	// Deadlines: hub's own --timeout fires first (timeout/wall, with a
	// run.finished); the pod's deadline is the backstop of one attempt; the
	// Job's covers every attempt, so a retry is never cut short by it.
	podDeadline := pod.ActiveDeadlineSeconds
	if podDeadline == nil || time.Duration(*podDeadline)*time.Second <= timeout {
		t.Errorf("pod activeDeadlineSeconds %v, want more than hub's --timeout %v", podDeadline, timeout)
	}
	jobDeadline := job.Spec.ActiveDeadlineSeconds
	if jobDeadline == nil || time.Duration(*jobDeadline)*time.Second <= timeout {
		t.Fatalf("Job activeDeadlineSeconds %v, want more than hub's --timeout %v", jobDeadline, timeout)
	}
	if podDeadline != nil && job.Spec.BackoffLimit != nil {
		if attempts := int64(*job.Spec.BackoffLimit) + 1; *jobDeadline < attempts**podDeadline {
			t.Errorf("Job activeDeadlineSeconds %d < %d attempts × the pod's %d: the last retry would be cut short",
				*jobDeadline, attempts, *podDeadline)
		}
	}

	hub := r.container(t, hubContainer)
	// The status file: on an emptyDir that hub writes and a sidecar reads.
	status := setting(t, s, "status-file")
	if status == "" || !path.IsAbs(status) {
		t.Fatalf("hub run --status-file %q, want an absolute path", status)
	}
	m, ok := mountOf(hub, status)
	if !ok || m.ReadOnly {
		t.Fatalf("--status-file %s is on no writable volume of the hub container", status)
	}
	if v := r.volume(t, m.Name); v.EmptyDir == nil {
		t.Errorf("volume %q of the status file is not an emptyDir", m.Name)
	}
	rel := strings.TrimPrefix(path.Clean(status), path.Clean(m.MountPath)+"/")
	sidecars := 0
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		if c.Name == hubContainer {
			continue
		}
		for _, sm := range c.VolumeMounts {
			if sm.Name != m.Name {
				continue
			}
			sidecars++
			native := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
			isInit := slices.ContainsFunc(pod.InitContainers, func(x corev1.Container) bool { return x.Name == c.Name })
			if isInit && !native {
				t.Errorf("init container %q mounts the status volume but is no sidecar (restartPolicy: Always): it would end before hub starts", c.Name)
			}
			want := path.Join(sm.MountPath, rel)
			if script := strings.Join(append(slices.Clone(c.Command), c.Args...), " "); !strings.Contains(script, want) {
				t.Errorf("sidecar %q mounts the status volume at %s but does not name %s", c.Name, sm.MountPath, want)
			}
		}
	}
	if sidecars == 0 {
		t.Errorf("no sidecar mounts volume %q, where hub writes %s", m.Name, status)
	}

	// The working tree: on a PersistentVolumeClaim of this file, writable.
	cwd := setting(t, s, "cwd")
	if m, ok := mountOf(hub, path.Join(cwd, "x")); !ok || m.ReadOnly {
		t.Errorf("--cwd %s is on no writable volume of the hub container", cwd)
	} else if v := r.volume(t, m.Name); v.PersistentVolumeClaim == nil {
		t.Errorf("volume %q of --cwd is no PersistentVolumeClaim", m.Name)
	} else if _, ok := r.claims[v.PersistentVolumeClaim.ClaimName]; !ok {
		t.Errorf("PersistentVolumeClaim %q is not in %s", v.PersistentVolumeClaim.ClaimName, jobFile)
	}

	// The prompt: a key of a ConfigMap of this file.
	prompt := setting(t, s, "prompt-file")
	if m, ok := mountOf(hub, prompt); !ok {
		t.Errorf("--prompt-file %s is on no volume of the hub container", prompt)
	} else if v := r.volume(t, m.Name); v.ConfigMap == nil {
		t.Errorf("volume %q of --prompt-file is no ConfigMap", m.Name)
	} else {
		key := strings.TrimPrefix(prompt, path.Clean(m.MountPath)+"/")
		for _, it := range v.ConfigMap.Items {
			if it.Path == key {
				key = it.Key
			}
		}
		if r.configMapValue(t, v.ConfigMap.Name, key) == "" {
			t.Errorf("the prompt (ConfigMap %q key %q) is empty", v.ConfigMap.Name, key)
		}
	}

	// The API key: from a Secret, never a value in this file.
	fromSecret := 0
	for _, e := range hub.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			fromSecret++
		}
		if e.Value != "" && regexp.MustCompile(`(?i)KEY|TOKEN|SECRET|PASSWORD`).MatchString(e.Name) {
			t.Errorf("env %s has a value in %s: take it from a Secret", e.Name, jobFile)
		}
	}
	if fromSecret == 0 {
		t.Errorf("the hub container takes no variable from a Secret (the provider's API key)")
	}

	// Every container: the same image, not root.
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("the pod does not set runAsNonRoot: true")
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		if c.Image != hub.Image {
			t.Errorf("container %q runs image %q, the hub container %q", c.Name, c.Image, hub.Image)
		}
	}
	if got := r.job.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"]; got != hubContainer {
		t.Errorf("default-container annotation %q, want %q (kubectl logs job/… shows hub's stream)", got, hubContainer)
	}
}

// hubExitCodes is hub's exit codes with whether a retry can help, from
// hub's own table (events.Bin.ExitCode, events.Retryable): a bin is
// retryable when one of its reasons is. 2, hub's usage error, has no bin.
func hubExitCodes() map[int32]bool {
	codes := map[int32]bool{2: false}
	for _, b := range events.Bins() {
		retry := events.Retryable(b, "")
		for _, reason := range b.Reasons() {
			retry = retry || events.Retryable(b, reason)
		}
		code := int32(b.ExitCode())
		codes[code] = codes[code] || retry
	}
	return codes
}

func wantAction(retryable bool) batchv1.PodFailurePolicyAction {
	if retryable {
		return batchv1.PodFailurePolicyActionCount
	}
	return batchv1.PodFailurePolicyActionFailJob
}

// policyAction is what podFailurePolicy does with a pod whose hub container
// exited with code (and that has no DisruptionTarget condition), as the Job
// controller decides it: the first rule that matches; matched is false when
// none does.
func policyAction(p *batchv1.PodFailurePolicy, code int32) (action batchv1.PodFailurePolicyAction, rule int, matched bool) {
	for i, r := range p.Rules {
		req := r.OnExitCodes
		if req == nil {
			continue
		}
		if req.ContainerName != nil && *req.ContainerName != hubContainer {
			continue
		}
		in := slices.Contains(req.Values, code)
		if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) ||
			(req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
			return r.Action, i, true
		}
	}
	return "", -1, false
}

func TestPodFailurePolicyCoversHubExitCodes(t *testing.T) {
	r := loadRecipe(t)
	p := r.job.Spec.PodFailurePolicy
	if p == nil {
		t.Fatal("the Job has no podFailurePolicy")
	}
	validatePolicy(t, r, p)

	codes := hubExitCodes()
	for _, c := range []int32{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 130} {
		if _, ok := codes[c]; !ok {
			t.Errorf("exit code %d is not one of hub's (events.Bin.ExitCode): update this test, the policy and README.md", c)
		}
	}
	readme := readmeActions(t)
	for _, code := range slices.Sorted(maps.Keys(codes)) {
		want := wantAction(codes[code])
		got, _, ok := policyAction(p, code)
		if !ok {
			t.Errorf("exit code %d: no podFailurePolicy rule names it, want %s", code, want)
		} else if got != want {
			t.Errorf("exit code %d (retryable %v): podFailurePolicy does %s, want %s", code, codes[code], got, want)
		}
		if ra, ok := readme[code]; !ok {
			t.Errorf("exit code %d: not in %s's table", code, readmeFile)
		} else if ra != want {
			t.Errorf("exit code %d: %s's table says %s, want %s", code, readmeFile, ra, want)
		}
	}
	for code := range readme {
		if _, ok := codes[code]; !ok {
			t.Errorf("%s's table has exit code %d, which hub does not use", readmeFile, code)
		}
	}

	// An evicted or preempted pod (SIGTERM: hub exits 130) is not a failed
	// run: a DisruptionTarget rule that ignores it must come before the
	// rule that fails the Job on 130.
	_, rule130, _ := policyAction(p, int32(events.BinCancelled.ExitCode()))
	disruption := slices.IndexFunc(p.Rules, func(r batchv1.PodFailurePolicyRule) bool {
		return slices.ContainsFunc(r.OnPodConditions, func(c batchv1.PodFailurePolicyOnPodConditionsPattern) bool {
			return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
		})
	})
	if disruption < 0 || p.Rules[disruption].Action != batchv1.PodFailurePolicyActionIgnore || disruption > rule130 {
		t.Errorf("want a rule that ignores DisruptionTarget before the rule for exit code 130 (rule %d; DisruptionTarget rule %d)", rule130, disruption)
	}
}

// validatePolicy checks what the API server's validation of a Job checks
// of its podFailurePolicy (k8s.io/kubernetes pkg/apis/batch/validation).
func validatePolicy(t *testing.T, r recipe, p *batchv1.PodFailurePolicy) {
	t.Helper()
	if len(p.Rules) > 20 {
		t.Errorf("podFailurePolicy has %d rules, at most 20", len(p.Rules))
	}
	names := map[string]bool{}
	for _, c := range slices.Concat(r.pod().InitContainers, r.pod().Containers) {
		names[c.Name] = true
	}
	named := map[int32]int{} // exit code → the rule that names it
	for i, rule := range p.Rules {
		if req := rule.OnExitCodes; req != nil && req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
			for _, v := range req.Values {
				if j, dup := named[v]; dup {
					t.Errorf("rules %d and %d both name exit code %d: only the first applies", j, i, v)
				}
				named[v] = i
			}
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount:
		default:
			t.Errorf("rule %d: action %q", i, rule.Action)
		}
		if (rule.OnExitCodes == nil) == (len(rule.OnPodConditions) == 0) {
			t.Errorf("rule %d: exactly one of onExitCodes and onPodConditions", i)
		}
		if req := rule.OnExitCodes; req != nil {
			if req.ContainerName != nil && !names[*req.ContainerName] {
				t.Errorf("rule %d: containerName %q is no container of the pod", i, *req.ContainerName)
			}
			if req.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn && req.Operator != batchv1.PodFailurePolicyOnExitCodesOpNotIn {
				t.Errorf("rule %d: operator %q", i, req.Operator)
			}
			if n := len(req.Values); n == 0 || n > 255 {
				t.Errorf("rule %d: %d values, want 1 to 255", i, n)
			}
			for j, v := range req.Values {
				if v == 0 && req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
					t.Errorf("rule %d: 0 with operator In", i)
				}
				if j > 0 && v <= req.Values[j-1] {
					t.Errorf("rule %d: values must be in ascending order without repeats: %v", i, req.Values)
				}
			}
		}
	}
}

// readmeActions reads the table of README.md whose rows begin with an exit
// code: code → the podFailurePolicy action the row names (`Count`,
// `FailJob`, `Ignore`).
func readmeActions(t *testing.T) map[int32]batchv1.PodFailurePolicyAction {
	t.Helper()
	data, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\|\\s*(\\d+)\\s*\\|.*`(Count|FailJob|Ignore)`")
	actions := map[int32]batchv1.PodFailurePolicyAction{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(m[1])
		if _, dup := actions[int32(code)]; dup {
			t.Errorf("%s: exit code %d is in the table twice", readmeFile, code)
		}
		actions[int32(code)] = batchv1.PodFailurePolicyAction(m[2])
	}
	if len(actions) == 0 {
		t.Fatalf("%s: no table of exit codes and podFailurePolicy actions", readmeFile)
	}
	return actions
}

// dockerInstructions is the Dockerfile's instructions, continuation lines
// joined and comments dropped: [keyword, rest].
func dockerInstructions(t *testing.T) [][2]string {
	t.Helper()
	data, err := os.ReadFile(dockerFile)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	var cur strings.Builder
	for line := range strings.SplitSeq(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if s, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		kw, rest, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, [2]string{strings.ToUpper(kw), strings.TrimSpace(rest)})
		cur.Reset()
	}
	return out
}

// npmPins reads the npm project scripts/install-agents.sh installs the
// pins from (pinProject, its package-lock.json beside it): workspace
// (an agent or a tool, named after its binary) → "package@version", from
// the one dependency of each workspace's package.json. adapters/all
// TestInstallPins checks the project, its lock and the adapters agree.
func npmPins(t *testing.T) map[string]string {
	t.Helper()
	var root struct {
		Workspaces []string `json:"workspaces"`
	}
	readJSONFile(t, pinProject+"/package.json", &root)
	pins := map[string]string{}
	for _, ws := range root.Workspaces {
		var w struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		readJSONFile(t, pinProject+"/"+ws+"/package.json", &w)
		for pkg, version := range w.Dependencies {
			pins[ws] = pkg + "@" + version
		}
	}
	if len(pins) == 0 {
		t.Fatalf("%s: no workspace pins a package", pinProject)
	}
	return pins
}

func readJSONFile(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// copiedTo maps each source of the Dockerfile's COPY instructions that
// copy from the build context (not --from a stage) to where it lands in
// the image, as Docker copies: a directory's contents go into the
// destination (the directory itself is not copied); a file goes into the
// destination directory under its base name when the destination ends in
// / or there are several sources, else to the destination itself.
func copiedTo(copies []string) map[string]string {
	out := map[string]string{}
	for _, c := range copies {
		var fields []string
		from := false
		for _, f := range strings.Fields(c) {
			if strings.HasPrefix(f, "--") {
				from = from || strings.HasPrefix(f, "--from")
				continue
			}
			fields = append(fields, f)
		}
		if from || len(fields) < 2 {
			continue
		}
		dest, srcs := fields[len(fields)-1], fields[:len(fields)-1]
		for _, src := range srcs {
			src = path.Clean(src)
			if st, err := os.Stat(filepath.Join(repoRoot, src)); err == nil && st.IsDir() {
				out[src] = path.Clean(dest)
			} else if strings.HasSuffix(dest, "/") || len(srcs) > 1 {
				out[src] = path.Join(dest, path.Base(src))
			} else {
				out[src] = path.Clean(dest)
			}
		}
	}
	return out
}

func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile(installScript)
	if err != nil {
		t.Fatal(err)
	}
	script := string(raw)
	pins := npmPins(t)
	pinOf := map[string]string{} // npm package → pinned version
	for _, spec := range pins {
		i := strings.LastIndex(spec, "@")
		pinOf[spec[:i]] = spec[i+1:]
	}

	ins := dockerInstructions(t)
	var froms, users, runs, copies []string
	args := map[string]string{}
	for _, in := range ins {
		switch in[0] {
		case "FROM":
			froms = append(froms, in[1])
		case "USER":
			users = append(users, in[1])
		case "RUN":
			runs = append(runs, in[1])
		case "COPY":
			copies = append(copies, in[1])
		case "ARG":
			k, v, _ := strings.Cut(in[1], "=")
			args[k] = strings.Trim(v, `"`)
		}
		if in[0] == "ENV" || in[0] == "ARG" {
			if regexp.MustCompile(`(?i)(API_?KEY|TOKEN|SECRET|PASSWORD)\w*=\S`).MatchString(in[1]) {
				t.Errorf("%s: %s %s: no secret in the image", dockerFile, in[0], in[1])
			}
		}
	}

	// Multi-stage: Go 1.26 (hub's go.mod) builds, Node.js 20 runs.
	goMod, err := os.ReadFile(repoRoot + "/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	if len(froms) < 2 {
		t.Fatalf("%s: %d FROM, want a build stage and a runtime stage", dockerFile, len(froms))
	}
	if want := "golang:" + string(goVer[1]); !strings.HasPrefix(froms[0], want) {
		t.Errorf("%s: the build stage is FROM %s, want %s (hub's go.mod)", dockerFile, froms[0], want)
	}
	if last := froms[len(froms)-1]; !regexp.MustCompile(`^node:20\b`).MatchString(last) {
		t.Errorf("%s: the runtime stage is FROM %s, want node:20…", dockerFile, last)
	}

	// Not root: the user the Job's securityContext names.
	r := loadRecipe(t)
	if len(users) == 0 {
		t.Fatalf("%s: no USER: the image would run as root", dockerFile)
	}
	uid, _, _ := strings.Cut(users[len(users)-1], ":")
	if n, err := strconv.ParseInt(uid, 10, 64); err != nil || n == 0 {
		t.Errorf("%s: USER %s, want a numeric user that is not root (runAsNonRoot checks a number)", dockerFile, users[len(users)-1])
	} else if sc := r.pod().SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != n {
		t.Errorf("%s: USER %d, but the Job's pod runs as another user", dockerFile, n)
	}

	// The pinned CLIs, installed by scripts/install-agents.sh (so the
	// versions are the pins of tools/npm, and its lock's), for the agents
	// of ARG AGENTS.
	agents := strings.Fields(args["AGENTS"])
	if len(agents) == 0 {
		t.Fatalf("%s: ARG AGENTS has no default", dockerFile)
	}
	for _, a := range agents {
		if _, ok := pins[a]; !ok {
			t.Errorf("%s: AGENTS names %q, which %s does not pin", dockerFile, a, pinProject)
		}
	}
	hubArgs := hubCommand(t, r)
	if i := slices.Index(hubArgs, "--agent"); i >= 0 && i+1 < len(hubArgs) && !slices.Contains(agents, hubArgs[i+1]) {
		t.Errorf("%s runs --agent %s, which the image's AGENTS %v leaves out", jobFile, hubArgs[i+1], agents)
	}
	if !slices.ContainsFunc(runs, func(s string) bool {
		return regexp.MustCompile(`\bbash \S*scripts/install-agents\.sh \$\{?AGENTS\}?`).MatchString(s)
	}) {
		t.Errorf("%s: no RUN bash …/scripts/install-agents.sh $AGENTS", dockerFile)
	}
	// What the script reads must be copied with it, to where it looks: the
	// files it sources, and the npm project it installs from (package.json,
	// its workspaces and package-lock.json), under the directory above its
	// own scripts/.
	to := copiedTo(copies)
	scriptTo, ok := to["scripts/install-agents.sh"]
	if !ok {
		t.Fatalf("%s: scripts/install-agents.sh is not copied into the image", dockerFile)
	}
	imageRoot := path.Dir(path.Dir(scriptTo))
	project := strings.TrimPrefix(pinProject, repoRoot+"/")
	for _, f := range append(sourced(script), project) {
		if want := path.Join(imageRoot, f); to[f] != want {
			t.Errorf("%s: %s is copied to %q, want %s (install-agents.sh at %s reads it)", dockerFile, f, to[f], want, scriptTo)
		}
	}
	// An npm package@version written in the Dockerfile itself must be the pin.
	spec := regexp.MustCompile(`((?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*)@(\d+\.\d+\.\d+[\w.+-]*)`)
	for _, run := range runs {
		for _, m := range spec.FindAllStringSubmatch(run, -1) {
			if want, ok := pinOf[m[1]]; !ok {
				t.Errorf("%s installs %s, which %s does not pin", dockerFile, m[0], pinProject)
			} else if m[2] != want {
				t.Errorf("%s installs %s, %s pins %s", dockerFile, m[0], pinProject, want)
			}
		}
	}
}

// sourced lists the repository files install-agents.sh sources
// ("$root/scripts/step.sh" → scripts/step.sh).
func sourced(script string) []string {
	var files []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:source|\.) "\$root/([^"]+)"`).FindAllStringSubmatch(script, -1) {
		files = append(files, m[1])
	}
	return files
}
