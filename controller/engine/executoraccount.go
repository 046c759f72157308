package engine

import (
	"context"
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/secrets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wfguard/wfguard/controller/podspec"
)

// ServiceAccountSource reads a ServiceAccount. The engine asks only for the workflow's own namespace.
type ServiceAccountSource interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
}

// executorToken is one executor ServiceAccount's token Secret as found this pass, or why it was not.
type executorToken struct {
	secret string
	err    error
}

// executorTokenSecret is the Secret holding the token of the ServiceAccount the template's argoexec runs
// as (executor.serviceAccountName), found as argo finds it: the account, read in the workflow's namespace,
// names it in its secrets, else in its workflows.argoproj.io/service-account-token.name annotation, else
// it is <account>.service-account-token (the Secret an administrator creates on Kubernetes 1.24 and later,
// which creates none). The Secret itself is not read: the kubelet mounts it. "" when no account is named.
// An account that is missing or may not be read errors the node, with argo's message when missing; any
// other failure is an apiError, after which the pass is retried. Each account is read once a pass.
func (e *Engine) executorTokenSecret(ctx context.Context, p *Pass, tmpl *wfv1.Template) (string, error) {
	name := podspec.ExecutorServiceAccount(p.WF, tmpl)
	if name == "" {
		return "", nil
	}
	if found, ok := p.executorTokens[name]; ok {
		return found.secret, found.err
	}
	secret, err := e.readExecutorToken(ctx, p.WF.Namespace, name)
	if isAPIError(err) {
		return "", err
	}
	if p.executorTokens == nil {
		p.executorTokens = map[string]executorToken{}
	}
	p.executorTokens[name] = executorToken{secret, err}
	return secret, err
}

func (e *Engine) readExecutorToken(ctx context.Context, namespace, name string) (string, error) {
	if e.ServiceAccounts == nil {
		return "", fmt.Errorf("executor.serviceAccountName %s: no ServiceAccount source is configured", name)
	}
	sa, err := e.ServiceAccounts.ServiceAccount(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return "", err // argo's message: serviceaccounts "NAME" not found
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("reading the executor ServiceAccount %s/%s: %w", namespace, name, err) // RBAC: no retry helps
	case err != nil:
		return "", &apiError{fmt.Errorf("reading the executor ServiceAccount %s/%s: %w", namespace, name, err)}
	}
	return secrets.TokenNameForServiceAccount(sa), nil
}
