package provenance

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// SecretKeyField is the data field of the key Secret that holds the key.
const SecretKeyField = "key"

// DefaultSecretName names the key Secret in the controller's namespace.
const DefaultSecretName = "wfguard-record-key"

// Load reads the key from Secret name, creating it with KeySize bytes from random when it does not exist.
// Every replica and every restart reads the same Secret, so records sealed by one are verified by the next;
// when two replicas create it at once, the one that loses reads the winner's.
func Load(ctx context.Context, secrets typedcorev1.SecretInterface, name string, random io.Reader) (*Key, error) {
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		generated := make([]byte, KeySize)
		if _, err := io.ReadFull(random, generated); err != nil {
			return nil, fmt.Errorf("generating the record key: %w", err)
		}
		secret, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "wfguard", "app.kubernetes.io/component": "controller"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{SecretKeyField: generated},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			secret, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record key Secret %s: %w", name, err)
	}
	key, err := NewKey(secret.Data[SecretKeyField])
	if err != nil {
		return nil, fmt.Errorf("the record key Secret %s/%s, field %q: %w: %w", secret.Namespace, name, SecretKeyField, ErrNoKey, err)
	}
	return key, nil
}
