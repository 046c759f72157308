package apierror

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Kinds of write the API server refuses for good.
const (
	TooLarge = "too large"
	Invalid  = "invalid"
)

// tooLargeMessages are size refusals that surface only as text: etcd's (over --max-request-bytes, a 500)
// and gRPC's ResourceExhausted (over the client's message limit).
var tooLargeMessages = []string{"request is too large", "resourceexhausted", "too large", "larger than max"}

// Refused tells a write the API server will never accept as it is (retrying the same object fails the same
// way) from a transient failure, and says why: TooLarge for a 413 (request body over the API server's limit)
// or a size refusal from etcd or gRPC, Invalid for a 422. Workflow persists and action status writes share
// it, so both give up on the same errors.
func Refused(err error) (kind string, refused bool) {
	if err == nil {
		return "", false
	}
	if apierrors.IsRequestEntityTooLargeError(err) {
		return TooLarge, true
	}
	if apierrors.IsInvalid(err) {
		return Invalid, true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range tooLargeMessages {
		if strings.Contains(msg, s) {
			return TooLarge, true
		}
	}
	return "", false
}
