package controlplanetest

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// WaitAuthorized waits until config's identity (e.g. an impersonated user) may do each of attrs. The API
// server's authorizer learns of a new RoleBinding from its own informer, so a request made right after the
// create can still be refused.
func WaitAuthorized(ctx context.Context, config *rest.Config, attrs ...authorizationv1.ResourceAttributes) error {
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("building a client to check access: %w", err)
	}
	for _, a := range attrs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}
		var last string
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			last = got.Status.Reason
			return got.Status.Allowed, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for access to %s %s.%s: %w (last: %s)", a.Verb, a.Resource, a.Group, err, last)
		}
	}
	return nil
}
