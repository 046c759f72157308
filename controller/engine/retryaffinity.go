package engine

import (
	"slices"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// hostnameLabel is the node label argo's retry anti-affinity keys on (argo reads RETRY_HOST_NAME_LABEL_KEY
// from its environment; wfguard keeps argo's default).
const hostnameLabel = "kubernetes.io/hostname"

// avoidFailedHosts records, for an attempt of a retry node whose strategy asks for
// retryStrategy.affinity.nodeAntiAffinity, that its pods must not run where an earlier attempt failed.
// Like argo, this reaches the attempt's own pod and, for a steps or DAG attempt, the pods directly in it.
func (p *Pass) avoidFailedHosts(attemptName string, retry *wfv1.NodeStatus, s *wfv1.RetryStrategy) {
	if s == nil || s.Affinity == nil || s.Affinity.NodeAntiAffinity == nil {
		return
	}
	if p.retryOfAttempt == nil {
		p.retryOfAttempt = map[string]string{}
	}
	p.retryOfAttempt[p.WF.NodeID(attemptName)] = retry.ID
}

// failedHostsFor lists the hosts pod node id (in boundary boundaryID) must avoid: those of the failed or
// errored pods under its retry node, in argo's order of discovery, without duplicates.
func (p *Pass) failedHostsFor(id, boundaryID string) []string {
	retryID, ok := p.retryOfAttempt[id]
	if !ok {
		retryID, ok = p.retryOfAttempt[boundaryID]
	}
	if !ok {
		return nil
	}
	var hosts []string
	visit := []string{retryID}
	for len(visit) > 0 {
		n := p.nodeByID(visit[len(visit)-1])
		visit = visit[:len(visit)-1]
		if n == nil {
			continue
		}
		if n.Type == wfv1.NodeTypePod && (n.Phase == wfv1.NodeFailed || n.Phase == wfv1.NodeError) &&
			n.HostNodeName != "" && !slices.Contains(hosts, n.HostNodeName) {
			hosts = append(hosts, n.HostNodeName)
		}
		visit = append(visit, n.Children...)
	}
	return hosts
}

// addHostAntiAffinity keeps pod off hosts: a required NotIn term on the hostname label, merged into the
// pod's own affinity the way argo merges it (into an existing NotIn on the label, else the first term).
func addHostAntiAffinity(pod *corev1.Pod, hosts []string) {
	if len(hosts) == 0 {
		return
	}
	notIn := corev1.NodeSelectorRequirement{Key: hostnameLabel, Operator: corev1.NodeSelectorOpNotIn, Values: hosts}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	} else {
		pod.Spec.Affinity = pod.Spec.Affinity.DeepCopy() // it may be the workflow's, shared with the cache
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	required := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil || len(required.NodeSelectorTerms) == 0 {
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{notIn}}}}
		return
	}
	terms := required.NodeSelectorTerms
	for i := range terms {
		if len(terms[i].MatchExpressions) == 0 {
			terms[i].MatchExpressions = []corev1.NodeSelectorRequirement{notIn}
			return
		}
		for j := range terms[i].MatchExpressions {
			if r := &terms[i].MatchExpressions[j]; r.Key == hostnameLabel && r.Operator == corev1.NodeSelectorOpNotIn {
				for _, h := range hosts {
					if !slices.Contains(r.Values, h) {
						r.Values = append(r.Values, h)
					}
				}
				return
			}
		}
	}
	terms[0].MatchExpressions = append(terms[0].MatchExpressions, notIn)
}
