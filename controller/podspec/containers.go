package podspec

import (
	"fmt"
	"strconv"

	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// executorLogOptions are argo's defaults (controller log level info, text
// format, glog level 0); argoexec refuses to start without them.
var executorLogOptions = []string{"--loglevel", "info", "--log-format", "text", "--gloglevel", "0"}

// emissaryPath is where the init container copies the argoexec binary so that
// user images, which do not contain it, can run it as their entrypoint.
const emissaryPath = common.VarRunArgoPath + "/argoexec"

// addContainers adds init, wait and main (or a containerSet's containers). The order is significant: kubelet
// starts containers in list order and argo starts wait before main.
// A resource or data pod's main is argoexec, which reports its own outputs,
// so a resource pod has a wait container only to archive logs and a data pod
// none.
func (b *builder) addContainers(pod *corev1.Pod) error {
	pod.Spec.InitContainers = []corev1.Container{b.executorContainer(common.InitContainerName, "init")}
	switch {
	case isData(b.tmpl):
		main, err := b.dataMainContainer()
		if err != nil {
			return err
		}
		pod.Spec.Containers = []corev1.Container{main}
	case isResource(b.tmpl):
		if b.tmpl.SaveLogsAsArtifact() {
			pod.Spec.Containers = append(pod.Spec.Containers, b.executorContainer(common.WaitContainerName, "wait"))
		}
		pod.Spec.Containers = append(pod.Spec.Containers, b.resourceMainContainer())
	default:
		mains, err := b.mainContainers()
		if err != nil {
			return err
		}
		pod.Spec.Containers = append([]corev1.Container{b.executorContainer(common.WaitContainerName, "wait")}, mains...)
	}
	return nil
}

func (b *builder) executorContainer(name, subcommand string) corev1.Container {
	ctr := corev1.Container{
		Name:         name,
		Image:        b.executorImage,
		Command:      append([]string{"argoexec", subcommand}, executorLogOptions...),
		Env:          b.executorEnv(),
		VolumeMounts: b.executorTokenMounts(),
	}
	if cfg := b.in.Executor; cfg != nil {
		cfg = cfg.DeepCopy()
		ctr.ImagePullPolicy, ctr.Resources, ctr.SecurityContext, ctr.Args = cfg.ImagePullPolicy, cfg.Resources, cfg.SecurityContext, cfg.Args
		ctr.Env = append(ctr.Env, cfg.Env...)
	}
	// A configured securityContext replaces the locked-down one of resource pods, as in argo.
	if isResource(b.tmpl) && ctr.SecurityContext == nil {
		ctr.SecurityContext = resourceSecurityContext(name)
	}
	return ctr
}

// mainContainer is the user's container. For scripts, init stages the source
// at ExecutorScriptSourcePath and argo passes that path as the last argument,
// so "python" + args becomes "python ... /argo/staging/script".
func (b *builder) mainContainer() corev1.Container {
	var ctr corev1.Container
	if script := b.tmpl.Script; script != nil {
		ctr = *script.Container.DeepCopy()
		if script.Source != "" {
			ctr.Args = append(ctr.Args, common.ExecutorScriptSourcePath)
		}
	} else {
		ctr = *b.tmpl.Container.DeepCopy()
	}
	ctr.Name = common.MainContainerName
	return ctr
}

// addUserInitContainers appends the template's initContainers after init, so
// they run once argoexec is staged and inputs are in place. Mounts are
// mirrored from main only: a containerSet without one has nothing to mirror.
func (b *builder) addUserInitContainers(pod *corev1.Pod) {
	main := findContainer(pod.Spec.Containers, common.MainContainerName)
	for _, uc := range b.tmpl.InitContainers {
		ctr := *uc.Container.DeepCopy()
		if main != nil && uc.MirrorVolumeMounts != nil && *uc.MirrorVolumeMounts {
			ctr.VolumeMounts = append(ctr.VolumeMounts, main.VolumeMounts...)
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, ctr)
	}
}

// addSidecars appends the template's sidecars after main. They are wrapped by
// the emissary like main, which lets wait stop them once main exits.
func (b *builder) addSidecars(pod *corev1.Pod) {
	main := findContainer(pod.Spec.Containers, common.MainContainerName)
	for _, uc := range b.tmpl.Sidecars {
		ctr := *uc.Container.DeepCopy()
		if main != nil && uc.MirrorVolumeMounts != nil && *uc.MirrorVolumeMounts {
			ctr.VolumeMounts = append(ctr.VolumeMounts, main.VolumeMounts...)
		}
		pod.Spec.Containers = append(pod.Spec.Containers, ctr)
	}
}

// addEnv adds the variables every container needs. Only init containers get
// ARGO_TEMPLATE: init writes it to /var/run/argo/template for the others.
func (b *builder) addEnv(pod *corev1.Pod, templateJSON string) {
	shared := b.sharedEnv()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		c.Env = append(c.Env, envVar(common.EnvVarContainerName, c.Name), envVar(common.EnvVarTemplate, templateJSON))
		c.Env = append(c.Env, shared...)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Env = append(c.Env, envVar(common.EnvVarContainerName, c.Name))
		c.Env = append(c.Env, shared...)
	}
}

// finishContainers runs after podSpecPatch, as in argo, so a patch may supply
// a command or image and still get wrapped and mounted correctly.
func (b *builder) finishContainers(pod *corev1.Pod) error {
	for i := range pod.Spec.InitContainers {
		if err := b.requireImage(&pod.Spec.InitContainers[i]); err != nil {
			return err
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if err := b.requireImage(c); err != nil {
			return err
		}
		if c.Name != common.WaitContainerName {
			if err := b.wrapInEmissary(c); err != nil {
				return err
			}
		}
		// argo gives every container running the executor image its own
		// slice of tmp-dir-argo, keyed by the container's index.
		if c.Image == b.executorImage {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volumeTmpDirArgo, MountPath: "/tmp", SubPath: strconv.Itoa(i)})
		}
		c.VolumeMounts = append(c.VolumeMounts, varRunArgoMount())
		if grace := pod.Spec.TerminationGracePeriodSeconds; grace != nil {
			c.Env = append(c.Env, envVar(common.EnvVarTerminationGracePeriodSeconds, strconv.FormatInt(*grace, 10)))
		}
	}
	return nil
}

func (b *builder) requireImage(c *corev1.Container) error {
	if c.Image == "" {
		return fmt.Errorf("template %s: %s has no image", b.tmpl.Name, describeContainer(c))
	}
	return nil
}

// wrapInEmissary makes argoexec the container's entrypoint. Argo looks up the
// image's ENTRYPOINT when no command is given; that needs registry access
// wfguard does not have, so the command is required.
func (b *builder) wrapInEmissary(c *corev1.Container) error {
	if len(c.Command) == 0 {
		return &EntrypointError{Image: c.Image, Template: b.templateLabel(), Container: describeContainer(c)}
	}
	prefix := append(append([]string{emissaryPath, "emissary"}, executorLogOptions...), "--")
	c.Command = append(prefix, c.Command...)
	return nil
}

// templateLabel names the template in errors; an inline template has no name of its own.
func (b *builder) templateLabel() string {
	if b.tmpl.Name == "" {
		return "inline template"
	}
	return "template " + b.tmpl.Name
}

// EntrypointError is a container with no command, whose image's entrypoint wfguard cannot look up. Its
// message starts as argo's does when its look-up fails, so the node errors with argo's words.
type EntrypointError struct {
	Image, Template, Container string
}

func (e *EntrypointError) Error() string {
	return fmt.Sprintf("failed to look-up entrypoint/cmd for image %q, you must either explicitly specify the command, "+
		"or list the image's command in the index: https://argo-workflows.readthedocs.io/en/latest/workflow-executors/#emissary-emissary: "+
		"wfguard does not look up image entrypoints (%s, %s)", e.Image, e.Template, e.Container)
}

func describeContainer(c *corev1.Container) string {
	if c.Name == common.MainContainerName {
		return "container"
	}
	return "container " + c.Name
}

func findContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}
