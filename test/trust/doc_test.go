// Package trust tests the trust boundary (DESIGN.md invariant I9, issue #14 items 1, 2 and 9) on the real
// control plane, with the hostile identities impersonated: a user who may only create pods in another
// namespace, and a workflow pod's executor ServiceAccount. The controller watches every namespace (as an
// install does), limited to this test binary's own instance ID.
package trust
