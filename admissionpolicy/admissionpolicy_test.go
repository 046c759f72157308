package admissionpolicy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestAPolicyIsInForceOnlyInstalledDenyingEverywhereAndSettled(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	edited := created.Add(time.Hour)
	policy := func(edit func(*admissionregistrationv1.ValidatingAdmissionPolicy)) *admissionregistrationv1.ValidatingAdmissionPolicy {
		fail := admissionregistrationv1.Fail
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(created)},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail}}
		if edit != nil {
			edit(p)
		}
		return p
	}
	binding := func(edit func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(created)},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
		if edit != nil {
			edit(b)
		}
		return b
	}
	managedAt := func(at time.Time, subresource string) []metav1.ManagedFieldsEntry {
		t := metav1.NewTime(at)
		return []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: &t, Subresource: subresource}}
	}
	for _, tc := range []struct {
		sentence string
		objects  []runtime.Object
		created  time.Time // of the object admitted
		want     string    // in the reason it did not go through the policy; "" when it did
	}{
		{"an object created once the shipped policy and binding settled went through it", []runtime.Object{policy(nil), binding(nil)},
			created.Add(SettleTime), ""},
		{"an object created while the policy was being loaded may not have", []runtime.Object{policy(nil), binding(nil)},
			created.Add(SettleTime - time.Second), "were surely in force"},
		{"an object created before the binding's last edit may not have", []runtime.Object{policy(nil),
			binding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
				b.ManagedFields = managedAt(edited, "")
			})},
			edited, "last changed at 2026-12-01T11:00:00Z"},
		{"a status write is not a change to what admission enforces", []runtime.Object{
			policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
				p.ManagedFields = managedAt(edited, "status")
			}), binding(nil)},
			created.Add(SettleTime), ""},
		{"no policy: nothing went through it", []runtime.Object{binding(nil)}, edited, "ValidatingAdmissionPolicy p is not installed"},
		{"no binding: nothing went through it", []runtime.Object{policy(nil)}, edited, "ValidatingAdmissionPolicyBinding p is not installed"},
		{"a policy that lets errors through is not in force", []runtime.Object{binding(nil), policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			ignore := admissionregistrationv1.Ignore
			p.Spec.FailurePolicy = &ignore
		})}, edited, "failurePolicy Ignore"},
		{"a binding of another policy does not count", []runtime.Object{policy(nil),
			binding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.PolicyName = "other" })}, edited, `binds policy "other"`},
		{"a binding that only warns does not count", []runtime.Object{policy(nil), binding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
		})}, edited, "without Deny"},
		{"a binding narrowed to some namespaces does not count", []runtime.Object{policy(nil), binding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
		})}, edited, "narrowed by matchResources"},
		{"a binding whose matchResources selects everything counts", []runtime.Object{policy(nil), binding(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}}
		})}, edited, ""},
		{"a policy being deleted is not in force", []runtime.Object{binding(nil), policy(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			now := metav1.NewTime(edited)
			p.DeletionTimestamp = &now
			p.Finalizers = []string{"x"}
		})}, edited, "being deleted"},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			v, err := Read(context.Background(), fake.NewClientset(tc.objects...), "p")
			if err != nil {
				t.Fatal(err)
			}
			got := v.Admitted(tc.created)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Admitted = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAPolicyTheReaderMayNotReadIsNotInForceAndOtherFailuresAreErrors(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		err      error
		want     string // in the verdict; "" when Read returns the error
	}{
		{"a forbidden read says the ClusterRole lacks it", apierrors.NewForbidden(schema.GroupResource{Resource: "validatingadmissionpolicies"}, "p", nil),
			"may not read the ValidatingAdmissionPolicy p"},
		{"a server error is an error, to retry", apierrors.NewInternalError(errors.New("etcd down")), ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			kube := fake.NewClientset()
			kube.PrependReactor("get", "validatingadmissionpolicies", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			v, err := Read(context.Background(), kube, "p")
			switch {
			case tc.want == "" && err == nil:
				t.Errorf("verdict %+v, want an error", v)
			case tc.want != "" && (err != nil || !strings.Contains(v.NotInForce, tc.want) || v.Admitted(time.Now()) == ""):
				t.Errorf("verdict %+v, error %v; want not in force: ...%q", v, err, tc.want)
			}
		})
	}
}
