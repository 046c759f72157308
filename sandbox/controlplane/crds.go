package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates (or updates) every CustomResourceDefinition in the YAML files of dir and waits until
// each is Established, so callers can create custom resources right away.
func InstallCRDs(ctx context.Context, config *rest.Config, dir string, timeout time.Duration) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("installing CRDs: no *.yaml files in %s (%v)", dir, err)
	}
	sort.Strings(files)
	// kustomization.yaml lists the CRDs for `kubectl apply -k`; it is not one.
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	var names []string
	for _, file := range files {
		crds, err := readCRDs(file)
		if err != nil {
			return err
		}
		for _, crd := range crds {
			if err := applyCRD(ctx, client, crd); err != nil {
				return fmt.Errorf("installing CRD %s from %s: %w", crd.GetName(), file, err)
			}
			names = append(names, crd.GetName())
		}
	}
	for _, name := range names {
		if err := waitEstablished(ctx, client, name, timeout); err != nil {
			return err
		}
	}
	return nil
}

func readCRDs(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading CRD file: %w", err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("parsing CRD file %s: %w", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("parsing CRD file %s: found kind %q, want CustomResourceDefinition", file, obj.GetKind())
		}
		out = append(out, obj)
	}
}

func applyCRD(ctx context.Context, client dynamic.Interface, crd *unstructured.Unstructured) error {
	_, err := client.Resource(crdResource).Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := client.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	crd.SetResourceVersion(existing.GetResourceVersion())
	_, err = client.Resource(crdResource).Update(ctx, crd, metav1.UpdateOptions{})
	return err
}

func waitEstablished(ctx context.Context, client dynamic.Interface, name string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crd, err := client.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		var msgs []string
		for _, c := range conditions {
			cond, _ := c.(map[string]any)
			if cond["type"] == "Established" && cond["status"] == "True" {
				return true, nil
			}
			if cond["type"] == "NamesAccepted" && cond["status"] == "False" {
				return false, fmt.Errorf("CRD %s names not accepted: %v", name, cond["message"])
			}
			msgs = append(msgs, fmt.Sprintf("%v=%v %v", cond["type"], cond["status"], cond["message"]))
		}
		last = strings.Join(msgs, "; ")
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established (last: %s): %w", name, last, err)
	}
	return nil
}

// CreateNamespace creates a namespace named after prefix (with a random suffix) and its default
// ServiceAccount, which the ServiceAccount admission plugin requires before any pod can be created.
func CreateNamespace(ctx context.Context, config *rest.Config, prefix string) (string, error) {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return "", fmt.Errorf("creating namespace: %w", err)
	}
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating namespace %s-*: %w", prefix, err)
	}
	_, err = client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating the default ServiceAccount in %s: %w", ns.Name, err)
	}
	return ns.Name, nil
}

// CreateNamedNamespace creates namespace name (if missing) with its default ServiceAccount.
func CreateNamedNamespace(ctx context.Context, config *rest.Config, name string) error {
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	_, err = client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default ServiceAccount in %s: %w", name, err)
	}
	return nil
}
