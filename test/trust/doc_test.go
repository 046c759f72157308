// Package trust tests the trust boundary (DESIGN.md invariant I9, issue #14 items 1, 2 and 9, issue #44
// items 4, 11(a) and 11(b)) on the real control plane with config/policy's admission policies, the hostile
// identities impersonated: a user who may only create pods (in another namespace, or in the workflow's), a
// workflow pod's executor ServiceAccount (also of a pod whose node ID collides with another's), and a user
// bound only to the action requester role. The controller watches every namespace (as an install does),
// limited to this test binary's own instance ID; some tests run it with only its ClusterRole.
package trust
