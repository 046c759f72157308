package synchronization

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
)

// Kind is how a lock is backed, the middle part of its key (argo's lock name).
type Kind string

const (
	// KindMutex is an in-controller mutex: <namespace>/Mutex/<name>.
	KindMutex Kind = "Mutex"
	// KindConfigMap is a semaphore whose limit is a ConfigMap key's value: <namespace>/ConfigMap/<name>/<key>.
	KindConfigMap Kind = "ConfigMap"
	// KindDatabase is a lock kept in argo's synchronization database: <namespace>/Database/<name>.
	KindDatabase Kind = "Database"
)

// Lock is one lock a synchronization spec asks for.
type Lock struct {
	// Key is argo's lock name, also the key in status.synchronization.
	Key  string
	Kind Kind
	Type wfv1.SynchronizationType
	// Namespace, Name and ConfigKey locate the lock's backing (ConfigKey only for KindConfigMap).
	Namespace, Name, ConfigKey string
}

// Locks lists the locks of a synchronization spec in argo's order (legacy semaphore, legacy mutex,
// semaphores, mutexes), namespaced in namespace unless they name their own; the same lock twice is an error.
func Locks(s *wfv1.Synchronization, namespace string) ([]Lock, error) {
	if s == nil {
		return nil, nil
	}
	var sems []*wfv1.SemaphoreRef
	var mutexes []*wfv1.Mutex
	if s.Semaphore != nil {
		sems = append(sems, s.Semaphore)
	}
	if s.Mutex != nil {
		mutexes = append(mutexes, s.Mutex)
	}
	sems = append(sems, s.Semaphores...)
	mutexes = append(mutexes, s.Mutexes...)
	if duplicated(sems) || duplicated(mutexes) {
		return nil, errors.New("duplicate synchronization item found")
	}
	var out []Lock
	for _, sem := range sems {
		l, err := semaphoreLock(sem, namespace)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	for _, m := range mutexes {
		out = append(out, mutexLock(m, namespace))
	}
	return out, nil
}

func duplicated[T any](items []*T) bool {
	for i := range items {
		for j := i + 1; j < len(items); j++ {
			if reflect.DeepEqual(*items[i], *items[j]) {
				return true
			}
		}
	}
	return false
}

func semaphoreLock(sem *wfv1.SemaphoreRef, namespace string) (Lock, error) {
	if sem.Namespace != "" {
		namespace = sem.Namespace
	}
	l := Lock{Type: wfv1.SynchronizationTypeSemaphore, Namespace: namespace}
	switch {
	case sem.ConfigMapKeyRef != nil && sem.Database != nil:
		return Lock{}, errors.New("invalid semaphore with both ConfigMapKeyRef and Database")
	case sem.ConfigMapKeyRef != nil:
		l.Kind, l.Name, l.ConfigKey = KindConfigMap, sem.ConfigMapKeyRef.Name, sem.ConfigMapKeyRef.Key
	case sem.Database != nil:
		l.Kind, l.Name = KindDatabase, sem.Database.Key
	default:
		return Lock{}, errors.New("cannot get LockName for a Semaphore without a ConfigMapRef or Database")
	}
	if l.Name == "" || (l.Kind == KindConfigMap && l.ConfigKey == "") {
		return Lock{}, fmt.Errorf("invalid semaphore %s/%s: its name and key must be set", l.Name, l.ConfigKey)
	}
	l.Key = l.key()
	return l, nil
}

func mutexLock(m *wfv1.Mutex, namespace string) Lock {
	if m.Namespace != "" {
		namespace = m.Namespace
	}
	l := Lock{Kind: KindMutex, Type: wfv1.SynchronizationTypeMutex, Namespace: namespace, Name: m.Name}
	if m.Database {
		l.Kind = KindDatabase
	}
	l.Key = l.key()
	return l
}

func (l Lock) key() string {
	if l.Kind == KindConfigMap {
		return fmt.Sprintf("%s/%s/%s/%s", l.Namespace, l.Kind, l.Name, l.ConfigKey)
	}
	return fmt.Sprintf("%s/%s/%s", l.Namespace, l.Kind, l.Name)
}

// HolderKey is argo's holder key: <namespace>/<workflow> for the workflow's own locks, and
// <namespace>/<workflow>/<node ID> for a template's.
func HolderKey(wf *wfv1.Workflow, nodeID string) string {
	key := wf.Namespace + "/" + wf.Name
	if nodeID != "" {
		key += "/" + nodeID
	}
	return key
}

// WorkflowKey is the namespace/name of the workflow a holder key belongs to.
func WorkflowKey(holder string) string {
	parts := strings.SplitN(holder, "/", 3)
	if len(parts) < 2 {
		return holder
	}
	return parts[0] + "/" + parts[1]
}

// NodeID is the node a template holder key names; "" for a workflow's own key.
func NodeID(holder string) string {
	parts := strings.SplitN(holder, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}
