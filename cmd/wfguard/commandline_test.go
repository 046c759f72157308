package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wfguard/wfguard/actions"
	"github.com/wfguard/wfguard/actions/v1alpha1"
	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/controllerconfig"
	"github.com/wfguard/wfguard/extstatus"
	"github.com/wfguard/wfguard/provenance"
	"github.com/wfguard/wfguard/sandbox/controlplane"
	"github.com/wfguard/wfguard/taskresult"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the commands' help now")

// withoutFlagEnv clears the environment variables flag defaults read, so help and defaults do not depend on
// the shell the tests run in.
func withoutFlagEnv(t *testing.T) {
	t.Helper()
	for _, key := range []string{"KUBECONFIG", "NAMESPACE", "LEADER_ELECTION_DISABLE", "MAX_WORKFLOW_SIZE", "WFGUARD_FAULT_RULES"} {
		t.Setenv(key, "")
	}
}

// seedDefault is --fault-seed's default in help: the start time in nanoseconds, so it differs on every run
// (and is the only default that long).
var seedDefault = regexp.MustCompile(`\(default [0-9]{16,}\)`)

func TestEachCommandsHelpIsUnchanged(t *testing.T) {
	withoutFlagEnv(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"controller-help.golden", []string{"controller", "-h"}},
		{"action-help.golden", []string{"action", "suspend", "wf", "-h"}},
		{"doctor-help.golden", []string{"doctor", "-h"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 0 {
				t.Errorf("exit code = %d, want 0", code)
			}
			if stdout.Len() > 0 {
				t.Errorf("help went to stdout, want stderr:\n%s", stdout.String())
			}
			got := stderr.Bytes()
			if tc.golden == "controller-help.golden" {
				got = seedDefault.ReplaceAll(got, []byte("(default SEED)"))
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("help differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

func TestControllerFlagsDefaultToArgosAndTheEnvironment(t *testing.T) {
	defaults := controllerFlags{
		workers: 32, cronWorkers: 8, qps: 20, burst: 30, kubeContentType: runtime.ContentTypeProtobuf,
		coalesceWindow: time.Second, passDeadline: controller.DefaultPassDeadline, maxWorkflowSize: extstatus.DefaultMaxWorkflowSize,
		configMap: controllerconfig.DefaultName, recordKeySecret: provenance.DefaultSecretName, memoizeTrust: "any",
		controllerNS: "argo", leaderElect: true, leaderElectionNS: "argo", metricsPort: 9090, healthPort: 6060,
		podStatusFinalizer: true, taskResultTimeout: taskresult.DefaultTimeout, orphanSweep: time.Minute, actionTTL: 24 * time.Hour,
		logFormat: "json", logLevel: "info", faultFlags: faultFlags{faultInjection: "disabled"},
	}
	fromEnv := defaults
	fromEnv.kubeconfig, fromEnv.controllerNS, fromEnv.leaderElectionNS, fromEnv.leaderElect, fromEnv.maxWorkflowSize = "/kc", "team", "team", false, 1000
	allowed := defaults
	allowed.faultFlags = faultFlags{faultInjection: "enabled", allowFaults: true, faultRules: "/rules", faultNamespaces: "a"}
	given := fromEnv
	given.kubeconfig, given.namespaced, given.managedNamespace, given.workers, given.leaderElectionID, given.metricsPort = "/other", true, "m", 4, "lease", 0
	for _, tc := range []struct {
		sentence string
		env      map[string]string
		args     []string
		want     controllerFlags
	}{
		{"no flags and no environment are argo's defaults", nil, nil, defaults},
		{"the environment sets the kubeconfig, namespaces, leader election and workflow size",
			map[string]string{"KUBECONFIG": "/kc", "NAMESPACE": "team", "LEADER_ELECTION_DISABLE": "true", "MAX_WORKFLOW_SIZE": "1000"}, nil, fromEnv},
		{"a workflow size that is not a number is the default", map[string]string{"MAX_WORKFLOW_SIZE": "big"}, nil, defaults},
		{"the deprecated --allow-fault-injection enables fault injection", nil,
			[]string{"--allow-fault-injection", "--fault-rules=/rules", "--fault-namespaces=a"}, allowed},
		{"flags win over the environment",
			map[string]string{"KUBECONFIG": "/kc", "NAMESPACE": "team", "LEADER_ELECTION_DISABLE": "true", "MAX_WORKFLOW_SIZE": "1000"},
			[]string{"--kubeconfig=/other", "--namespaced", "--managed-namespace=m", "--workflow-workers=4", "--leader-election-id=lease", "--metrics-port=0"}, given},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			withoutFlagEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			f, err := parseControllerFlags(tc.args, &bytes.Buffer{})
			if err != nil {
				t.Fatalf("parsing %v: %v", tc.args, err)
			}
			f.faultSeed = 0 // the start time
			if !reflect.DeepEqual(*f, tc.want) {
				t.Errorf("flags = %+v\nwant    %+v", *f, tc.want)
			}
		})
	}
}

func TestControllerFlagsNameTheFirstBadOne(t *testing.T) {
	withoutFlagEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"--workflow-workers=x"}, `invalid value "x" for flag -workflow-workers: parse error`},
		{[]string{"--configmap=", "extra"}, "--configmap must name a ConfigMap"},
		{[]string{"extra", "args"}, "unexpected arguments [extra args]"},
		{[]string{"--workflow-workers=0", "--cron-workflow-workers=-1", "extra"}, "unexpected arguments [extra]"},
		{[]string{"--workflow-workers=0", "--cron-workflow-workers=-1"}, "--workflow-workers must be at least 1, got 0"},
		{[]string{"--cron-workflow-workers=-1", "--fault-injection=maybe"}, "--cron-workflow-workers must not be negative, got -1"},
		{[]string{"--fault-injection=maybe", "--kube-api-content-type=x"}, `--fault-injection must be enabled or disabled, got "maybe"`},
		{[]string{"--fault-rules=/x"}, "fault rules given (--fault-rules, $WFGUARD_FAULT_RULES or --fault-rules-configmap) without --fault-injection=enabled: refusing to inject faults"},
		{[]string{"--kube-api-content-type=application/yaml", "--max-workflow-size=0"},
			`--kube-api-content-type must be application/vnd.kubernetes.protobuf or application/json, got "application/yaml"`},
		{[]string{"--max-workflow-size=0", "--status-coalesce-window=-1s"}, "--max-workflow-size must be positive, got 0"},
		{[]string{"--status-coalesce-window=-1s", "--pass-deadline=0"}, "--status-coalesce-window must not be negative, got -1s"},
		{[]string{"--pass-deadline=0", "--action-ttl=0"}, "--pass-deadline must be positive, got 0s"},
		{[]string{"--action-ttl=0", "--task-result-timeout=0"}, "--action-ttl must be positive, got 0s"},
		{[]string{"--task-result-timeout=0", "--log-format=xml"}, "--task-result-timeout must be positive, got 0s"},
		{[]string{"--log-format=xml", "--memoize-trust=x"}, `--log-format must be json or text, got "xml"`},
		{[]string{"--memoize-trust=trusted", "--record-key-secret="}, `--memoize-trust must be any or sealed, got "trusted"`},
		{[]string{"--memoize-trust=sealed", "--record-key-secret="}, "--memoize-trust=sealed needs the record key: --record-key-secret must not be empty"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseControllerFlags(tc.args, &bytes.Buffer{})
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v, want %s", err, tc.want)
			}
		})
	}
}

// logTime is the time of a text log line.
var logTime = regexp.MustCompile(`time=\S+ `)

// goldenHelp is a command's help as testdata holds it, with --fault-seed's default as SEED.
func goldenHelp(t *testing.T, name string) string {
	t.Helper()
	help, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(help)
}

func TestTheControllerSaysWhyItCannotStart(t *testing.T) {
	withoutFlagEnv(t)
	down := unreachableKubeconfig(t)
	help := goldenHelp(t, "controller-help.golden")
	for _, tc := range []struct {
		sentence string
		args     []string
		wantCode int
		want     string
	}{
		{"-h is not an error", []string{"-h"}, 0, help},
		{"an undefined flag is named after the usage", []string{"--nope"}, 2,
			"flag provided but not defined: -nope\n" + help + "wfguard controller: flag provided but not defined: -nope\n"},
		{"a bad flag value is named alone", []string{"--log-format=xml"}, 2,
			"wfguard controller: --log-format must be json or text, got \"xml\"\n"},
		{"a log level slog does not know is a usage error", []string{"--log-level=loud"}, 2,
			"wfguard controller: --log-level: slog: level string \"loud\": unknown name\n"},
		{"a kubeconfig that cannot be read stops the start", []string{"--log-format=text", "--kubeconfig=/nonexistent"}, 1,
			`level=ERROR msg="controller exited" err="loading the Kubernetes client config (set --kubeconfig outside a cluster): stat /nonexistent: no such file or directory"` + "\n"},
		{"--namespaced needs a namespace", []string{"--log-format=text", "--kubeconfig=" + down, "--namespaced"}, 1,
			`level=ERROR msg="controller exited" err="--namespaced needs --managed-namespace or $NAMESPACE"` + "\n"},
		{"--managed-namespace alone warns, and fault rules that cannot be read stop the start",
			[]string{"--log-format=text", "--kubeconfig=" + down, "--managed-namespace=m", "--fault-injection=enabled", "--fault-rules=/nonexistent", "--fault-namespaces=a"}, 1,
			`level=WARN msg="--managed-namespace has no effect without --namespaced" managedNamespace=m` + "\n" +
				`level=ERROR msg="controller exited" err="reading fault rules: open /nonexistent: no such file or directory"` + "\n"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"controller"}, tc.args...), &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			got := seedDefault.ReplaceAllString(logTime.ReplaceAllString(stderr.String(), ""), "(default SEED)")
			if stdout.Len() > 0 || got != tc.want {
				t.Errorf("stdout %q, stderr:\n%s\nwant stderr:\n%s", stdout.String(), got, tc.want)
			}
		})
	}
}

func TestTheActionCommandLineIsCheckedBeforeAnyRequest(t *testing.T) {
	withoutFlagEnv(t)
	t.Setenv("KUBECONFIG", "/nonexistent") // a command line that passes its checks then fails on this
	help := strings.Replace(goldenHelp(t, "action-help.golden"), "path to a kubeconfig\n", "path to a kubeconfig (default \"/nonexistent\")\n", 1)
	unreadable := "wfguard action: loading the Kubernetes client config (set --kubeconfig outside a cluster): stat /nonexistent: no such file or directory\n"
	notApplicable := "wfguard action: --node-field-selector, --message and --output-parameter do not apply to "
	onlyRetry := "wfguard action: --restart-successful and -p apply only to retry\n"
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{nil, 2, actionUsage},
		{[]string{"suspend"}, 2, actionUsage},
		{[]string{"-h"}, 2, actionUsage},
		{[]string{"-n", "x", "wf"}, 2, actionUsage},
		{[]string{"frob", "wf"}, 2, "wfguard action: unknown action \"frob\"\n\n" + actionUsage},
		{[]string{"suspend", "wf", "-h"}, 0, help},
		{[]string{"suspend", "wf", "--nope"}, 2, "flag provided but not defined: -nope\n" + help},
		{[]string{"retry", "wf", "-p", "ab"}, 2, "invalid value \"ab\" for flag -p: want NAME=VALUE, got \"ab\"\n" + help},
		{[]string{"resume", "wf", "--output-parameter=ab"}, 2, "invalid value \"ab\" for flag -output-parameter: want NAME=VALUE, got \"ab\"\n" + help},
		{[]string{"suspend", "wf", "--timeout=x"}, 2, "invalid value \"x\" for flag -timeout: parse error\n" + help},
		{[]string{"suspend", "wf"}, 7, unreadable},
		{[]string{"suspend", "wf", "--kubeconfig=/other"}, 7, strings.ReplaceAll(unreadable, "/nonexistent", "/other")},
		{[]string{"suspend", "wf", "extra", "--message=x"}, 7, unreadable}, // flags after an extra argument are not parsed
		{[]string{"suspend", "wf", "--message=x"}, 2, notApplicable + "suspend\n"},
		{[]string{"suspend", "wf", "--node-field-selector=a"}, 2, notApplicable + "suspend\n"},
		{[]string{"suspend", "wf", "--output-parameter=a=b"}, 2, notApplicable + "suspend\n"},
		{[]string{"suspend", "wf", "--message=x", "--restart-successful"}, 2, notApplicable + "suspend\n"},
		{[]string{"suspend", "wf", "--restart-successful"}, 2, onlyRetry},
		{[]string{"suspend", "wf", "-p", "a=b"}, 2, onlyRetry},
		{[]string{"resume", "wf"}, 7, unreadable},
		{[]string{"resume", "wf", "--message=x"}, 2, notApplicable + "resume\n"},
		{[]string{"resume", "wf", "--message=x", "--node-field-selector=a"}, 7, unreadable},
		{[]string{"resume", "wf", "--output-parameter=a=b"}, 7, unreadable},
		{[]string{"resume", "wf", "--restart-successful"}, 2, onlyRetry},
		{[]string{"stop", "wf"}, 7, unreadable},
		{[]string{"stop", "wf", "--output-parameter=a=b"}, 2, notApplicable + "stop\n"},
		{[]string{"stop", "wf", "--output-parameter=a=b", "--message=m"}, 7, unreadable},
		{[]string{"stop", "wf", "-p", "a=1"}, 2, onlyRetry},
		{[]string{"terminate", "wf"}, 7, unreadable},
		{[]string{"terminate", "wf", "--message=m"}, 7, unreadable},
		{[]string{"terminate", "wf", "--node-field-selector=a"}, 2, notApplicable + "terminate\n"},
		{[]string{"terminate", "wf", "--message=m", "--node-field-selector=a"}, 2, notApplicable + "terminate\n"},
		{[]string{"terminate", "wf", "--message=m", "--output-parameter=a=b"}, 2, notApplicable + "terminate\n"},
		{[]string{"terminate", "wf", "--restart-successful"}, 2, onlyRetry},
		{[]string{"retry", "wf"}, 7, unreadable},
		{[]string{"retry", "wf", "--restart-successful", "--node-field-selector=a", "-p", "x=1"}, 7, unreadable},
		{[]string{"retry", "wf", "--message=m"}, 2, notApplicable + "retry\n"},
		{[]string{"retry", "wf", "--output-parameter=a=b"}, 2, notApplicable + "retry\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"action"}, tc.args...), &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			if stdout.Len() > 0 || stderr.String() != tc.want {
				t.Errorf("stdout %q, stderr:\n%s\nwant stderr:\n%s", stdout.String(), stderr.String(), tc.want)
			}
		})
	}
}

func TestTheActionCommandRequestsWhatItsFlagsSay(t *testing.T) {
	ns, err := controlplane.CreateNamespace(t.Context(), cp.Config(), "idle") // no controller watches it
	if err != nil {
		t.Fatal(err)
	}
	client, err := v1alpha1.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		sentence string
		args     []string
		want     v1alpha1.WorkflowActionSpec
	}{
		{"suspend takes no parameters", []string{"suspend"}, v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionSuspend}},
		{"resume alone resumes the workflow", []string{"resume"}, v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume}},
		{"resume sets the selected nodes' outputs",
			[]string{"resume", "--node-field-selector=displayName=a", "--output-parameter=x=1", "--output-parameter=y=2"},
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume,
				Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: "displayName=a", OutputParameters: map[string]string{"x": "1", "y": "2"}}}},
		{"resume with a selector ignores a message", []string{"resume", "--node-field-selector=s", "--message=m"},
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionResume, Resume: &v1alpha1.ResumeParameters{NodeFieldSelector: "s"}}},
		{"stop says why", []string{"stop", "--message=why"},
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionStop, Stop: &v1alpha1.StopParameters{Message: "why"}}},
		{"stop with a selector ignores outputs", []string{"stop", "--node-field-selector=s", "--output-parameter=x=1"},
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionStop, Stop: &v1alpha1.StopParameters{NodeFieldSelector: "s"}}},
		{"stop pinned to a UID names it", []string{"stop", "--uid=u-1"},
			v1alpha1.WorkflowActionSpec{WorkflowRef: v1alpha1.WorkflowRef{UID: "u-1"}, Action: v1alpha1.ActionStop}},
		{"terminate alone takes no parameters", []string{"terminate"}, v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionTerminate}},
		{"terminate says why", []string{"terminate", "--message=why"},
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionTerminate, Terminate: &v1alpha1.TerminateParameters{Message: "why"}}},
		{"retry alone takes no parameters", []string{"retry"}, v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionRetry}},
		{"retry restarts the selected succeeded nodes with overrides",
			[]string{"retry", "--restart-successful", "--node-field-selector=s", "-p", "a=1", "-p", "b=2"},
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionRetry,
				Retry: &v1alpha1.RetryParameters{RestartSuccessful: true, NodeFieldSelector: "s", Parameters: []string{"a=1", "b=2"}}}},
		{"retry overrides a parameter", []string{"retry", "-p", "a=1"},
			v1alpha1.WorkflowActionSpec{Action: v1alpha1.ActionRetry, Retry: &v1alpha1.RetryParameters{Parameters: []string{"a=1"}}}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			workflow := fmt.Sprintf("wf-%d", i)
			args := append([]string{"action", tc.args[0], workflow, "-n", ns, "--kubeconfig=" + cp.Kubeconfig, "--timeout=1ns"}, tc.args[1:]...)
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != int(actions.DeadlineExceeded) || !strings.Contains(stderr.String(), "no outcome within 1ns") {
				t.Fatalf("exit code = %d, want %d (no controller answers); stdout %q, stderr:\n%s", code, actions.DeadlineExceeded, stdout.String(), stderr.String())
			}
			list, err := client.Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: common.LabelKeyWorkflow + "=" + workflow})
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("the actions on %s: %v, %v; want one", workflow, list, err)
			}
			want := tc.want
			want.WorkflowRef.Name = workflow
			if got := list.Items[0].Spec; !reflect.DeepEqual(got, want) {
				t.Errorf("spec = %+v\nwant   %+v", got, want)
			}
		})
	}
}

func TestTheDoctorCommandLineIsCheckedBeforeAnyRequest(t *testing.T) {
	withoutFlagEnv(t)
	help := goldenHelp(t, "doctor-help.golden")
	unreadable := "wfguard doctor: loading the Kubernetes client config (set --kubeconfig outside a cluster): stat /nonexistent: no such file or directory\n"
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"-h"}, 0, help},
		{[]string{"--nope"}, 2, "flag provided but not defined: -nope\n" + help},
		{[]string{"--min-age=x"}, 2, "invalid value \"x\" for flag -min-age: parse error\n" + help},
		{[]string{"extra", "-A", "-n", "x"}, 2, "wfguard doctor: unexpected argument \"extra\"\n"},
		{[]string{"-A", "-n", "x", "--yes"}, 2, "wfguard doctor: -n and -A exclude each other\n"},
		{[]string{"--yes", "-o", "yaml"}, 2, "wfguard doctor: --yes only applies with --fix\n"},
		{[]string{"-o", "yaml"}, 2, "wfguard doctor: -o must be json or empty, got \"yaml\"\n"},
		{[]string{"--kubeconfig=/nonexistent"}, 1, unreadable},
		{[]string{"--kubeconfig=/nonexistent", "-A", "--fix", "--yes", "-o", "json"}, 1, unreadable},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"doctor"}, tc.args...), &stdout, &stderr); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			if stdout.Len() > 0 || stderr.String() != tc.want {
				t.Errorf("stdout %q, stderr:\n%s\nwant stderr:\n%s", stdout.String(), stderr.String(), tc.want)
			}
		})
	}
}
