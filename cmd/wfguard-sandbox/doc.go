// Command wfguard-sandbox is wfguard's playground: an embedded control plane (etcd + kube-apiserver), the
// controller in process and the simulated node. It is a binary of its own so that the controller binary
// (cmd/wfguard), and with it the image, carries neither the control plane nor the simulated node.
package main
