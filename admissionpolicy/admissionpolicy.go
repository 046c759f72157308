package admissionpolicy

import (
	"context"
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SettleTime is how long after a policy or its binding last changed admission is taken to enforce it: the
// API server loads policies from a watch and recompiles them about once a second, and object timestamps
// are whole seconds.
const SettleTime = 5 * time.Second

// Verdict is what the policy and its binding, as stored, say about admission.
type Verdict struct {
	// Policy is the policy's name (and its binding's).
	Policy string
	// NotInForce says why admission does not enforce the policy now ("" when it does).
	NotInForce string
	// Since is when the policy or its binding last changed (creation, or a write to either's spec): from
	// Since plus SettleTime, objects admitted went through it.
	Since time.Time
}

// Read reads the ValidatingAdmissionPolicy name and the ValidatingAdmissionPolicyBinding of the same name
// (as wfguard ships them) and judges them. A read the reader may not make says so in the verdict (an older
// ClusterRole would otherwise keep what waits on the verdict waiting for ever); only a read that failed for
// another reason is an error.
func Read(ctx context.Context, kube kubernetes.Interface, name string) (Verdict, error) {
	v := Verdict{Policy: name}
	api := kube.AdmissionregistrationV1()
	policy, err := api.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
	if v.NotInForce, err = unread("ValidatingAdmissionPolicy", name, err); v.NotInForce != "" || err != nil {
		return v, err
	}
	binding, err := api.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	if v.NotInForce, err = unread("ValidatingAdmissionPolicyBinding", name, err); v.NotInForce != "" || err != nil {
		return v, err
	}
	v.NotInForce = notInForce(policy, binding)
	v.Since = lastChanged(&policy.ObjectMeta, &binding.ObjectMeta)
	return v, nil
}

// unread turns the error of reading kind name into why the policy does not count, or an error to retry.
func unread(kind, name string, err error) (string, error) {
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the %s %s is not installed", kind, name), nil
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("the controller may not read the %s %s (apply config/rbac's controller ClusterRole)", kind, name), nil
	}
	return "", fmt.Errorf("reading the %s %s: %w", kind, name, err)
}

// notInForce says why admission would not deny by the policy through the binding everywhere ("" when it would).
func notInForce(policy *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string {
	switch {
	case policy.DeletionTimestamp != nil || binding.DeletionTimestamp != nil:
		return fmt.Sprintf("the ValidatingAdmissionPolicy %s or its binding is being deleted", policy.Name)
	case policy.Spec.FailurePolicy != nil && *policy.Spec.FailurePolicy != admissionregistrationv1.Fail:
		// An error in the check (e.g. the authorizer failing) would let the request through.
		return fmt.Sprintf("the ValidatingAdmissionPolicy %s has failurePolicy %s, not Fail", policy.Name, *policy.Spec.FailurePolicy)
	case binding.Spec.PolicyName != policy.Name:
		return fmt.Sprintf("the ValidatingAdmissionPolicyBinding %s binds policy %q, not %s", binding.Name, binding.Spec.PolicyName, policy.Name)
	case !slices.Contains(binding.Spec.ValidationActions, admissionregistrationv1.Deny):
		return fmt.Sprintf("the ValidatingAdmissionPolicyBinding %s has validationActions %v, without Deny", binding.Name, binding.Spec.ValidationActions)
	case !everywhere(binding.Spec.MatchResources):
		// The controller cannot tell which namespaces or objects a narrowed binding leaves out.
		return fmt.Sprintf("the ValidatingAdmissionPolicyBinding %s is narrowed by matchResources; only a binding for every namespace and object counts", binding.Name)
	}
	return ""
}

// everywhere reports whether a binding's matchResources leaves the policy's own match as it is.
func everywhere(m *admissionregistrationv1.MatchResources) bool {
	if m == nil {
		return true
	}
	all := func(s *metav1.LabelSelector) bool {
		return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
	}
	return all(m.NamespaceSelector) && all(m.ObjectSelector) && len(m.ResourceRules) == 0 && len(m.ExcludeResourceRules) == 0
}

// lastChanged is the latest creation or write to the main resource (not status) of any of objs: a field
// manager's entry takes the time of its last change to the fields it owns.
func lastChanged(objs ...*metav1.ObjectMeta) time.Time {
	var last time.Time
	for _, o := range objs {
		if t := o.CreationTimestamp.Time; t.After(last) {
			last = t
		}
		for _, f := range o.ManagedFields {
			if f.Subresource == "" && f.Time != nil && f.Time.After(last) {
				last = f.Time.Time
			}
		}
	}
	return last
}

// Admitted says why an object created at created may not have gone through the policy ("" when it did): the
// policy is not in force now, or it was not yet when the object was created.
func (v Verdict) Admitted(created time.Time) string {
	if v.NotInForce != "" {
		return v.NotInForce
	}
	if from := v.Since.Add(SettleTime); created.Before(from) {
		return fmt.Sprintf("it was created at %s, before the ValidatingAdmissionPolicy %s and its binding, last changed at %s, were surely in force (from %s)",
			created.UTC().Format(time.RFC3339), v.Policy, v.Since.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	return ""
}
