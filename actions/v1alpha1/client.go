package v1alpha1

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Client is a typed client for WorkflowActions.
// +kubebuilder:object:generate=false
type Client struct {
	rest rest.Interface
}

// NewForConfig builds a Client.
func NewForConfig(config *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		return nil, err
	}
	c := rest.CopyConfig(config)
	c.GroupVersion = &SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the WorkflowAction client: %w", err)
	}
	return &Client{rest: rc}, nil
}

// Namespace scopes the client.
func (c *Client) Namespace(ns string) *NamespacedClient { return &NamespacedClient{c: c, ns: ns} }

// NamespacedClient reads and writes WorkflowActions in one namespace ("" is all, for List and Watch).
// +kubebuilder:object:generate=false
type NamespacedClient struct {
	c  *Client
	ns string
}

func (n *NamespacedClient) req(r *rest.Request) *rest.Request {
	return r.NamespaceIfScoped(n.ns, n.ns != "").Resource(Resource)
}

// Create creates an action.
func (n *NamespacedClient) Create(ctx context.Context, a *WorkflowAction, opts metav1.CreateOptions) (*WorkflowAction, error) {
	out := &WorkflowAction{}
	err := n.req(n.c.rest.Post()).VersionedParams(&opts, metav1.ParameterCodec).Body(a).Do(ctx).Into(out)
	return out, err
}

// Get reads an action.
func (n *NamespacedClient) Get(ctx context.Context, name string, opts metav1.GetOptions) (*WorkflowAction, error) {
	out := &WorkflowAction{}
	err := n.req(n.c.rest.Get()).Name(name).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(out)
	return out, err
}

// List lists actions.
func (n *NamespacedClient) List(ctx context.Context, opts metav1.ListOptions) (*WorkflowActionList, error) {
	out := &WorkflowActionList{}
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	err := n.req(n.c.rest.Get()).VersionedParams(&opts, metav1.ParameterCodec).Timeout(timeout).Do(ctx).Into(out)
	return out, err
}

// Watch watches actions.
func (n *NamespacedClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return n.req(n.c.rest.Get()).VersionedParams(&opts, metav1.ParameterCodec).Timeout(timeout).Watch(ctx)
}

// UpdateStatus writes an action's status (the status subresource; optimistic concurrency applies).
func (n *NamespacedClient) UpdateStatus(ctx context.Context, a *WorkflowAction, opts metav1.UpdateOptions) (*WorkflowAction, error) {
	out := &WorkflowAction{}
	err := n.req(n.c.rest.Put()).Name(a.Name).SubResource("status").VersionedParams(&opts, metav1.ParameterCodec).Body(a).Do(ctx).Into(out)
	return out, err
}

// Delete deletes an action.
func (n *NamespacedClient) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return n.req(n.c.rest.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}
