package podspec

import (
	"errors"
	"fmt"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

const (
	// LabelWorkflowUID lets wfguard match pods to a workflow by identity, so a
	// deleted workflow's pods never attach to a new workflow of the same name.
	LabelWorkflowUID = "wfguard.io/workflow-uid"
	// AnnotationStatusFinalizerManaged marks pods whose status finalizer wfguard
	// added itself ("true"), so it only ever releases finalizers it owns.
	AnnotationStatusFinalizerManaged = "wfguard.io/status-finalizer"
	// DefaultExecutorImage is the argoexec image whose pod contract this package
	// implements.
	DefaultExecutorImage = "quay.io/argoproj/argoexec:v3.7.9"
	// TemplateOffloadLimit is the largest ARGO_TEMPLATE value (in bytes) argo
	// passes inline; larger templates would have to go through a ConfigMap.
	TemplateOffloadLimit = 131072
)

// Input is everything needed to build one step pod. Build only reads it: the
// workflow usually comes from an informer cache and must not be mutated.
type Input struct {
	Workflow      *wfv1.Workflow // name, namespace, UID; spec.serviceAccountName, podMetadata, nodeSelector, tolerations, affinity, imagePullSecrets, securityContext, priorityClassName, schedulerName, hostNetwork, dnsPolicy, dnsConfig, automountServiceAccountToken, volumes
	NodeName      string
	NodeID        string
	Template      *wfv1.Template // already resolved and substituted; container, containerSet, script, resource or data template
	ExecutorImage string         // "" = DefaultExecutorImage
	// Executor is the controller ConfigMap's executor: its imagePullPolicy, resources, securityContext,
	// args and env go into the init and wait containers (its image comes through ExecutorImage). nil: none.
	Executor *corev1.Container
	// MainContainer is the controller ConfigMap's mainContainer: merged under every main container, the
	// template's own fields winning. nil: none.
	MainContainer       *corev1.Container
	InstanceID          string // "" = none (then no instance-id label / env)
	IncludeScriptOutput bool
	Deadline            time.Time // zero = none; becomes ARGO_DEADLINE (zero time formats as 0001-01-01T00:00:00Z) and activeDeadlineSeconds relative to Now
	Now                 time.Time // injected clock for activeDeadlineSeconds
	StatusFinalizer     bool      // add workflows.argoproj.io/status finalizer + AnnotationStatusFinalizerManaged="true"
	OnExit              bool      // label workflows.argoproj.io/on-exit=true
	PodGCStrategy       string    // "" = none; else annotation workflows.argoproj.io/pod-gc-strategy "<strategy>/<delay>" provided verbatim
	// ExecutorTokenSecret is the Secret of the pod's namespace holding the token of the executor's
	// ServiceAccount (ExecutorServiceAccount), which the caller found as argo does; it is mounted where
	// argoexec reads its credentials, in the containers that run argoexec only. Required when the
	// template or workflow names an executor ServiceAccount, ignored otherwise.
	ExecutorTokenSecret string
	// Globals are the {{workflow.*}} variables podSpecPatch is substituted with ({{pod.name}} is added
	// here); the template's own patch was already substituted with them and its inputs.
	Globals map[string]string
}

// Build returns the pod for one container, containerSet, script, resource or data node. Every error is a
// problem with the input (or a feature wfguard does not support yet), so
// retrying with the same input fails the same way.
func Build(in Input) (*corev1.Pod, error) {
	pod, err := build(in)
	if err != nil && in.NodeName == "" {
		return nil, fmt.Errorf("building pod: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("building pod for node %s: %w", in.NodeName, err)
	}
	return pod, nil
}

// build follows the order in which argo v3.7 assembles a pod, because that
// order decides the order of volume mounts and env vars, and golden files
// compare pods field by field.
func build(in Input) (*corev1.Pod, error) {
	if err := validateInput(in); err != nil {
		return nil, err
	}
	b := newBuilder(in)
	if err := withOwnedManifest(b.wf, b.tmpl); err != nil {
		return nil, err
	}

	templateJSON, err := executorTemplateJSON(b.tmpl)
	if err != nil {
		return nil, err
	}
	deadlineSeconds, err := activeDeadlineSeconds(in, b.tmpl)
	if err != nil {
		return nil, err
	}

	pod := b.skeleton(deadlineSeconds)
	if err := b.addContainers(pod); err != nil {
		return nil, err
	}
	b.addScheduling(pod)
	if err := b.addVolumeReferences(pod); err != nil {
		return nil, err
	}
	if err := b.addInputArtifactVolumes(pod); err != nil {
		return nil, err
	}
	if b.tmpl.Script != nil {
		addScriptStagingVolume(pod)
	}
	b.addUserInitContainers(pod)
	b.addSidecars(pod)
	mirrorMainMountsIntoWait(pod, b.tmpl)
	mountVarRunArgoInInitContainers(pod)
	b.addEnv(pod, templateJSON)
	if pod, err = substitutePodName(pod); err != nil {
		return nil, err
	}

	if err := b.applyPodSpecPatches(pod); err != nil {
		return nil, err
	}
	if err := b.finishContainers(pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// validateInput rejects input that would panic later or produce a pod the
// API server or argoexec cannot run.
func validateInput(in Input) error {
	if in.Workflow == nil {
		return errors.New("workflow is nil")
	}
	if in.Template == nil {
		return errors.New("template is nil")
	}
	if in.Workflow.Name == "" {
		return errors.New("workflow has no name")
	}
	if in.Workflow.UID == "" {
		return fmt.Errorf("workflow %s has no UID; the pod's owner reference needs one", in.Workflow.Name)
	}
	if in.NodeName == "" {
		return errors.New("node name is empty")
	}
	if in.NodeID == "" {
		return errors.New("node ID is empty; argoexec needs it in ARGO_NODE_ID")
	}
	if !in.Deadline.IsZero() && in.Now.IsZero() {
		return errors.New("deadline is set but Now is zero; activeDeadlineSeconds cannot be computed")
	}
	if err := validateTemplateType(in.Template); err != nil {
		return err
	}
	return validateExecutorServiceAccount(in)
}

func validateTemplateType(tmpl *wfv1.Template) error {
	switch tmpl.GetType() {
	case wfv1.TemplateTypeContainer, wfv1.TemplateTypeScript, wfv1.TemplateTypeData:
		return nil
	case wfv1.TemplateTypeContainerSet:
		return validateContainerSet(tmpl)
	case wfv1.TemplateTypeResource:
		if tmpl.Resource.Action == "" {
			return fmt.Errorf("template %s: resource.action is empty; argoexec needs one (get, create, apply, delete, replace or patch)", tmpl.Name)
		}
		return nil
	case wfv1.TemplateTypeUnknown:
		return fmt.Errorf("template %s has neither a container nor a script", tmpl.Name)
	default:
		return fmt.Errorf("template %s is a %s template; only container, script, resource and data templates (and containerSets) run in pods built here", tmpl.Name, tmpl.GetType())
	}
}

// validateExecutorServiceAccount checks what argo checks when it sets up the pod's accounts:
// automountServiceAccountToken=false leaves argoexec no credentials unless an executor ServiceAccount
// gives it some (argo's message). An executor ServiceAccount needs its token Secret, which the caller
// looks up: this package reads nothing.
func validateExecutorServiceAccount(in Input) error {
	sa := ExecutorServiceAccount(in.Workflow, in.Template)
	if sa != "" && in.ExecutorTokenSecret == "" {
		return fmt.Errorf("template %s: executor.serviceAccountName %s: the Secret holding its token was not given", in.Template.Name, sa)
	}
	if automount := automountServiceAccountToken(in.Workflow, in.Template); sa == "" && automount != nil && !*automount {
		return errors.New("executor.serviceAccountName must not be empty if automountServiceAccountToken is false")
	}
	return nil
}

// ExecutorServiceAccount is the ServiceAccount argoexec runs as, as argo picks it: the template's
// executor.serviceAccountName, else the workflow's; "" when neither names one (argoexec then uses the
// pod's own token).
func ExecutorServiceAccount(wf *wfv1.Workflow, tmpl *wfv1.Template) string {
	if tmpl.Executor != nil && tmpl.Executor.ServiceAccountName != "" {
		return tmpl.Executor.ServiceAccountName
	}
	if wf.Spec.Executor != nil {
		return wf.Spec.Executor.ServiceAccountName
	}
	return ""
}

func automountServiceAccountToken(wf *wfv1.Workflow, tmpl *wfv1.Template) *bool {
	if tmpl.AutomountServiceAccountToken != nil {
		return tmpl.AutomountServiceAccountToken
	}
	return wf.Spec.AutomountServiceAccountToken
}

// builder holds private copies of the workflow spec and template, so the pod
// never aliases slices or maps owned by the caller.
type builder struct {
	in            Input
	wf            *wfv1.Workflow
	tmpl          *wfv1.Template
	executorImage string
}

func newBuilder(in Input) *builder {
	image := in.ExecutorImage
	if image == "" {
		image = DefaultExecutorImage
	}
	return &builder{
		in:            in,
		wf:            in.Workflow.DeepCopy(),
		tmpl:          in.Template.DeepCopy(),
		executorImage: image,
	}
}
