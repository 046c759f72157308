package podspec

import (
	"fmt"
	"path"
	"sort"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/common"
	corev1 "k8s.io/api/core/v1"
)

// Volume names argoexec and argo's tooling expect.
const (
	volumeVarRunArgo     = "var-run-argo"
	volumeTmpDirArgo     = "tmp-dir-argo"
	volumeInputArtifacts = "input-artifacts"
	volumeScriptStaging  = "argo-staging"
)

func emptyDirVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// baseVolumes are in every pod: var-run-argo carries the argoexec binary,
// the template and the emissary's exit codes between containers; tmp-dir-argo
// gives executor containers a writable /tmp under a read-only root.
func baseVolumes() []corev1.Volume {
	return []corev1.Volume{emptyDirVolume(volumeVarRunArgo), emptyDirVolume(volumeTmpDirArgo)}
}

func varRunArgoMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: volumeVarRunArgo, MountPath: common.VarRunArgoPath}
}

// addVolumeReferences adds the volumes that the template's containers mount
// but that are declared elsewhere (workflow spec.volumes or PVCs from
// volumeClaimTemplates), then the secret volumes artifact drivers read.
func (b *builder) addVolumeReferences(pod *corev1.Pod) error {
	mounts := append([]corev1.VolumeMount(nil), b.tmpl.GetVolumeMounts()...)
	for _, c := range b.tmpl.InitContainers {
		mounts = append(mounts, c.VolumeMounts...)
	}
	for _, c := range b.tmpl.Sidecars {
		mounts = append(mounts, c.VolumeMounts...)
	}
	for _, mnt := range mounts {
		if err := b.addReferencedVolume(pod, mnt.Name); err != nil {
			return err
		}
	}
	b.addArtifactSecretVolumes(pod)
	return nil
}

func (b *builder) addReferencedVolume(pod *corev1.Pod, name string) error {
	if findVolume(pod.Spec.Volumes, name) != nil {
		return nil
	}
	for _, candidates := range [][]corev1.Volume{b.tmpl.Volumes, b.wf.Spec.Volumes, b.wf.Status.PersistentVolumeClaims} {
		if vol := findVolume(candidates, name); vol != nil {
			pod.Spec.Volumes = append(pod.Spec.Volumes, *vol.DeepCopy())
			return nil
		}
	}
	return fmt.Errorf("template %s: volume %q is mounted but not declared in the template, spec.volumes or a volumeClaimTemplate", b.tmpl.Name, name)
}

func findVolume(volumes []corev1.Volume, name string) *corev1.Volume {
	for i := range volumes {
		if volumes[i].Name == name {
			return &volumes[i]
		}
	}
	return nil
}

// addArtifactSecretVolumes mounts every secret an artifact location refers to
// at /argo/secret/<secret>, where argoexec reads credentials from files.
// Volumes are sorted by secret name so the pod is the same on every build.
func (b *builder) addArtifactSecretVolumes(pod *corev1.Pod) {
	volumes := b.artifactSecretVolumes()
	if len(volumes) == 0 {
		return
	}
	var mounts []corev1.VolumeMount
	for _, vol := range volumes {
		pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		mounts = append(mounts, corev1.VolumeMount{Name: vol.Name, MountPath: common.SecretVolMountPath + "/" + vol.Name, ReadOnly: true})
	}
	readers := []*corev1.Container{
		findContainer(pod.Spec.Containers, common.WaitContainerName),
		findContainer(pod.Spec.InitContainers, common.InitContainerName),
	}
	if isData(b.tmpl) {
		readers = append(readers, findContainer(pod.Spec.Containers, common.MainContainerName)) // argoexec data reads the source
	}
	for _, c := range readers {
		if c != nil { // a resource or data pod may have no wait container
			c.VolumeMounts = append(c.VolumeMounts, mounts...)
		}
	}
}

// artifactSecretVolumes collects one secret volume per secret name with one
// item per distinct key, in the order argo visits locations.
func (b *builder) artifactSecretVolumes() []corev1.Volume {
	locations := []*wfv1.ArtifactLocation{b.tmpl.ArchiveLocation}
	for i := range b.tmpl.Outputs.Artifacts {
		locations = append(locations, &b.tmpl.Outputs.Artifacts[i].ArtifactLocation)
	}
	for i := range b.tmpl.Inputs.Artifacts {
		locations = append(locations, &b.tmpl.Inputs.Artifacts[i].ArtifactLocation)
	}
	if loc := dataSourceLocation(b.tmpl); loc != nil {
		locations = append(locations, loc)
	}

	byName := map[string]*corev1.Volume{}
	seenKeys := map[[2]string]bool{}
	for _, loc := range locations {
		for _, sel := range locationSecrets(loc) {
			if sel == nil || sel.Name == "" || sel.Key == "" || seenKeys[[2]string{sel.Name, sel.Key}] {
				continue
			}
			seenKeys[[2]string{sel.Name, sel.Key}] = true
			vol, ok := byName[sel.Name]
			if !ok {
				vol = &corev1.Volume{Name: sel.Name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sel.Name}}}
				byName[sel.Name] = vol
			}
			vol.Secret.Items = append(vol.Secret.Items, corev1.KeyToPath{Key: sel.Key, Path: sel.Key})
		}
	}

	volumes := make([]corev1.Volume, 0, len(byName))
	for _, vol := range byName {
		volumes = append(volumes, *vol)
	}
	sort.Slice(volumes, func(i, j int) bool { return volumes[i].Name < volumes[j].Name })
	return volumes
}

// locationSecrets lists the secret selectors of the one driver a location
// uses (argo only looks at the first driver set).
func locationSecrets(loc *wfv1.ArtifactLocation) []*corev1.SecretKeySelector {
	switch {
	case loc == nil:
		return nil
	case loc.S3 != nil:
		s3 := loc.S3
		secrets := []*corev1.SecretKeySelector{s3.AccessKeySecret, s3.SecretKeySecret, s3.SessionTokenSecret}
		if enc := s3.EncryptionOptions; enc != nil && enc.EnableEncryption {
			secrets = append(secrets, enc.ServerSideCustomerKeySecret)
		}
		return append(secrets, s3.CASecret)
	case loc.Git != nil:
		return []*corev1.SecretKeySelector{loc.Git.UsernameSecret, loc.Git.PasswordSecret, loc.Git.SSHPrivateKeySecret}
	case loc.Artifactory != nil:
		return []*corev1.SecretKeySelector{loc.Artifactory.UsernameSecret, loc.Artifactory.PasswordSecret}
	case loc.HDFS != nil:
		return []*corev1.SecretKeySelector{loc.HDFS.KrbCCacheSecret, loc.HDFS.KrbKeytabSecret}
	case loc.OSS != nil:
		return []*corev1.SecretKeySelector{loc.OSS.AccessKeySecret, loc.OSS.SecretKeySecret}
	case loc.GCS != nil:
		return []*corev1.SecretKeySelector{loc.GCS.ServiceAccountKeySecret}
	case loc.HTTP != nil && loc.HTTP.Auth != nil:
		auth := loc.HTTP.Auth
		return []*corev1.SecretKeySelector{
			auth.BasicAuth.UsernameSecret, auth.BasicAuth.PasswordSecret,
			auth.ClientCert.ClientCertSecret, auth.ClientCert.ClientKeySecret,
			auth.OAuth2.ClientIDSecret, auth.OAuth2.ClientSecretSecret, auth.OAuth2.TokenURLSecret,
		}
	case loc.Azure != nil:
		return []*corev1.SecretKeySelector{loc.Azure.AccountKeySecret}
	}
	return nil
}

// addInputArtifactVolumes shares an emptyDir between init, which downloads
// input artifacts into it, and main, which sees each artifact at its path.
// An artifact under one of main's own volume mounts is not bind-mounted
// (the outer volume would hide it); init writes it through /mainctrfs into
// the user's volume instead, so init also gets those volumes.
func (b *builder) addInputArtifactVolumes(pod *corev1.Pod) error {
	if len(b.tmpl.Inputs.Artifacts) == 0 {
		return nil
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, emptyDirVolume(volumeInputArtifacts))

	init := findContainer(pod.Spec.InitContainers, common.InitContainerName)
	init.VolumeMounts = append(init.VolumeMounts, corev1.VolumeMount{Name: volumeInputArtifacts, MountPath: common.ExecutorArtifactBaseDir})
	for _, mnt := range b.tmpl.GetVolumeMounts() {
		mnt.MountPath = path.Join(common.ExecutorMainFilesystemDir, mnt.MountPath)
		init.VolumeMounts = append(init.VolumeMounts, mnt)
	}

	main := findContainer(pod.Spec.Containers, common.MainContainerName)
	if main == nil {
		return nil // a containerSet without main: argo mounts input artifacts into main only
	}
	for _, art := range b.tmpl.Inputs.Artifacts {
		if err := art.CleanPath(); err != nil {
			return fmt.Errorf("template %s: input artifact %s: %w", b.tmpl.Name, art.Name, err)
		}
		if art.Optional && !art.HasLocationOrKey() {
			continue // nothing will be downloaded, so there is nothing to mount
		}
		if overlapsVolumeMount(b.tmpl.GetVolumeMounts(), art.Path) {
			continue
		}
		main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: volumeInputArtifacts, MountPath: art.Path, SubPath: art.Name})
	}
	return nil
}

func overlapsVolumeMount(mounts []corev1.VolumeMount, artifactPath string) bool {
	for _, mnt := range mounts {
		mountPath := strings.TrimRight(mnt.MountPath, "/")
		if artifactPath == mountPath || strings.HasPrefix(artifactPath, mountPath+"/") {
			return true
		}
	}
	return false
}

// addScriptStagingVolume shares the emptyDir in which init writes the script
// source and from which main runs it.
func addScriptStagingVolume(pod *corev1.Pod) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, emptyDirVolume(volumeScriptStaging))
	mount := corev1.VolumeMount{Name: volumeScriptStaging, MountPath: common.ExecutorStagingEmptyDir}
	for _, c := range []*corev1.Container{
		findContainer(pod.Spec.InitContainers, common.InitContainerName),
		findContainer(pod.Spec.Containers, common.MainContainerName),
	} {
		c.VolumeMounts = append(c.VolumeMounts, mount)
	}
}

// mirrorMainMountsIntoWait lets wait collect outputs that main wrote to a
// mounted volume: main's mounts appear in wait under /mainctrfs. They are
// writable because overlapping mounts cannot mix read-only and read-write.
// A resource or data pod's main is argoexec, which collects its outputs itself.
func mirrorMainMountsIntoWait(pod *corev1.Pod, tmpl *wfv1.Template) {
	main := findContainer(pod.Spec.Containers, common.MainContainerName)
	wait := findContainer(pod.Spec.Containers, common.WaitContainerName)
	if runsExecutorAsMain(tmpl) || main == nil || wait == nil {
		return
	}
	for _, mnt := range main.VolumeMounts {
		mnt.MountPath = path.Join(common.ExecutorMainFilesystemDir, mnt.MountPath)
		mnt.ReadOnly = false
		wait.VolumeMounts = append(wait.VolumeMounts, mnt)
	}
}

func mountVarRunArgoInInitContainers(pod *corev1.Pod) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		c.VolumeMounts = append(c.VolumeMounts, varRunArgoMount())
	}
}
