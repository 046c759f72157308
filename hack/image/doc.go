// Command image writes wfguard's container image (one layer: the static binary, a passwd entry for the
// nonroot user 65532, /tmp) as an image tarball, without a container daemon and without pulling a base image.
package main
