package fanouttest

import (
	"slices"

	k8stesting "k8s.io/client-go/testing"
)

// Names is the sorted names of the objects a fake clientset's actions of verb on resource were about
// (deletes, patches, gets): what a fan-out called, whatever the order its calls ran in.
func Names(actions []k8stesting.Action, verb, resource string) []string {
	var out []string
	for _, a := range actions {
		if named, ok := a.(interface{ GetName() string }); ok && a.Matches(verb, resource) {
			out = append(out, named.GetName())
		}
	}
	slices.Sort(out)
	return out
}
