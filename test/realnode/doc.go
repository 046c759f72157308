// Package realnode brings a real Kubernetes node up on this machine (containerd, runc, a CNI bridge and a kubelet, against the test control plane) and takes it down again, leaving nothing behind.
package realnode
