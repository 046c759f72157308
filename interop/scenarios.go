package interop

import wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"

var (
	approveRunning = NodeIs("approve", wfv1.NodeRunning)
	gateRunning    = NodeIs("gate", wfv1.NodeRunning)
)

// Scenarios are the features of argo's CLI (and of argo-server's API, which argo's UI calls) the suite
// runs, one scenario each.
var Scenarios = []Scenario{
	{Name: "submit", Files: map[string]string{"wf": twoSteps}, Steps: []Step{
		submit("submit {file:wf}"),
		run("wait {wf}"),
		run("watch {wf}"),
		run("get {wf}"),
		run("list --prefix {p}"),
		snapshot(Completed),
	}},
	{Name: "submit-wait", Files: map[string]string{"wf": twoSteps}, Steps: []Step{
		submit("submit --wait {file:wf}"),
		snapshot(Completed),
	}},
	{Name: "submit-watch", Files: map[string]string{"wf": twoSteps}, Steps: []Step{
		submit("submit --watch {file:wf}"),
		snapshot(Completed),
	}},
	{Name: "template", Files: map[string]string{"tmpl": template}, Steps: []Step{
		run("template create {file:tmpl}"),
		run("template list"),
		run("template get {p}-tmpl"),
		{Args: args("template get -o json {p}-tmpl"), JSON: true},
		submit("submit --from workflowtemplate/{p}-tmpl -p who=you"),
		snapshot(Completed),
		run("get {wf}"),
	}},
	{Name: "cron", Files: map[string]string{"cron": cron}, Steps: []Step{
		run("cron create {file:cron}"),
		run("cron list"),
		run("cron get {p}-cron"),
		run("cron suspend {p}-cron"),
		{Args: args("cron get -o json {p}-cron"), JSON: true},
		run("cron resume {p}-cron"),
		{Args: args("cron get -o json {p}-cron"), JSON: true},
		submit("submit --from cronworkflow/{p}-cron"),
		snapshot(Completed),
	}},
	{Name: "suspend-resume", Files: map[string]string{"wf": gated}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(gateRunning, "suspend {wf}"),
		snapshot(nil),
		run("resume --node-field-selector displayName=gate {wf}"),
		snapshot(NodeIs("gate", wfv1.NodeSucceeded)),
		run("resume {wf}"),
		snapshot(Completed),
		run("get {wf}"),
	}},
	{Name: "node-set", Files: map[string]string{"wf": approval}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(approveRunning, "node set {wf} --output-parameter answer=yes --message approved --node-field-selector displayName=approve"),
		snapshot(nil),
		run("resume {wf}"),
		snapshot(Completed),
		run("get {wf}"),
	}},
	{Name: "node-set-phase", Files: map[string]string{"wf": approval}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(approveRunning, "node set {wf} --phase Failed --message rejected --node-field-selector displayName=approve"),
		snapshot(Completed),
		run("resume {wf}"),
		run("get {wf}"),
	}},
	{Name: "stop", Files: map[string]string{"wf": approval}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(approveRunning, "stop {wf}"),
		snapshot(Completed),
		run("get {wf}"),
	}},
	{Name: "stop-selector", Files: map[string]string{"wf": approval}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		{Args: []string{"stop", "{wf}", "--node-field-selector", "displayName=approve", "--message", "not today"}, Wait: approveRunning},
		snapshot(Completed),
		run("get {wf}"),
	}},
	{Name: "terminate", Files: map[string]string{"wf": approval}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(approveRunning, "terminate {wf}"),
		snapshot(Completed),
		run("get {wf}"),
	}},
	{Name: "retry", Files: map[string]string{"wf": failing}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(Completed, "retry {wf}"),
		snapshot(Completed),
	}},
	{Name: "retry-p", Files: map[string]string{"wf": failing}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(Completed, "retry {wf} -p code=0"),
		snapshot(Completed),
		run("get {wf}"),
	}},
	{Name: "retry-restart-successful", Files: map[string]string{"wf": failing}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(Completed, "retry {wf} --restart-successful --node-field-selector displayName=a -p code=0"),
		snapshot(Completed),
	}},
	{Name: "retry-selector", Files: map[string]string{"wf": failing}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(Completed, "retry {wf} --node-field-selector templateName=fail -p code=0"),
		snapshot(Completed),
	}},
	{Name: "resubmit", Files: map[string]string{"wf": twoSteps}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		{Args: args("resubmit {wf}"), Wait: Completed, Save: true},
		snapshot(Completed),
		run("list --prefix {p}"),
	}},
	{Name: "resubmit-memoized", Files: map[string]string{"wf": failing}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		{Args: args("resubmit --memoized {wf}"), Wait: Completed, Save: true},
		snapshot(Completed),
	}},
	{Name: "resubmit-p", Files: map[string]string{"wf": failing}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		{Args: args("resubmit {wf} -p code=0"), Wait: Completed, Save: true},
		snapshot(Completed),
	}},
	{Name: "delete", Files: map[string]string{"wf": twoSteps}, Steps: []Step{
		submit("submit -o name {file:wf}"),
		after(Completed, "delete {wf}"),
		run("get {wf}"),
		run("list --prefix {p}"),
	}},
}
