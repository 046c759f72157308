// Command pause is the real node's sandbox image: it holds a pod's namespaces open and exits on SIGTERM or
// SIGINT, reaping any child the pid namespace hands it meanwhile.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
