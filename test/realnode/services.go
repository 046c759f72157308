package realnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// forwarder stands in for kube-proxy for the one Service pods use: it accepts TCP on the `kubernetes`
// Service address (on the bridge) and copies bytes to the apiserver on loopback (TLS end to end).
type forwarder struct {
	listener net.Listener
	target   string
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

func startForwarder(target string) (*forwarder, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ServiceIP, strconv.Itoa(ServicePort)))
	if err != nil {
		return nil, fmt.Errorf("listening on the kubernetes Service address: %w", err)
	}
	f := &forwarder{listener: l, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.listener.Accept()
		if err != nil {
			return // closed by stop
		}
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *forwarder) track(c net.Conn, on bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false
	}
	if on {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *forwarder) serve(client net.Conn) {
	defer f.wg.Done()
	defer client.Close()
	upstream, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	defer upstream.Close()
	if !f.track(client, true) || !f.track(upstream, true) {
		return
	}
	defer f.track(client, false)
	defer f.track(upstream, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done
	client.Close()
	upstream.Close()
	<-done
}

// stop closes the listener and every open connection and waits for the copies to end.
func (f *forwarder) stop() {
	_ = f.listener.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}

// clusterServices are the two controllers a node needs that the test control plane does not run: a
// binder putting every unscheduled pod on this node (there is no scheduler), and the publisher of the
// kube-root-ca.crt ConfigMap that projected ServiceAccount volumes read.
type clusterServices struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startClusterServices(kube kubernetes.Interface, caPEM []byte, bindNamespace func(string) bool, report func(string)) *clusterServices {
	ctx, cancel := context.WithCancel(context.Background())
	s := &clusterServices{cancel: cancel}
	unscheduled := cache.NewFilteredListWatchFromClient(kube.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "").String()
		})
	_, binder := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: unscheduled, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && (bindNamespace == nil || bindNamespace(pod.Namespace)) {
				if err := bind(ctx, kube, pod); err != nil {
					report(err.Error())
				}
			}
		}},
	})
	namespaces := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "namespaces", metav1.NamespaceAll, fields.Everything())
	_, publisher := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: namespaces, ObjectType: &corev1.Namespace{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok {
				if err := publishRootCA(ctx, kube, ns.Name, caPEM); err != nil {
					report(err.Error())
				}
			}
		}},
	})
	for _, c := range []cache.Controller{binder, publisher} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.RunWithContext(ctx)
		}()
	}
	return s
}

func (s *clusterServices) stop() {
	s.cancel()
	s.wg.Wait()
}

func bind(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod) error {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return nil
	}
	err := kube.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: NodeName},
	}, metav1.CreateOptions{})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("realnode: binding pod %s/%s to %s: %w", pod.Namespace, pod.Name, NodeName, err)
}

func publishRootCA(ctx context.Context, kube kubernetes.Interface, namespace string, caPEM []byte) error {
	_, err := kube.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data:       map[string]string{"ca.crt": string(caPEM)},
	}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) || errors.Is(err, context.Canceled) {
		return nil
	}
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) { // namespace terminating or gone
		return nil
	}
	return fmt.Errorf("realnode: publishing kube-root-ca.crt in %s: %w", namespace, err)
}
