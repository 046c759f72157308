package realnode

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// TearDownOnSignal runs teardown and exits with 128+signal when the process gets SIGINT or SIGTERM (Ctrl-C
// on `go test`), so an interrupted run leaves nothing on the host. The returned func stops listening.
func TearDownOnSignal(teardown func()) (stop func()) {
	signals := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case s := <-signals:
			fmt.Fprintf(os.Stderr, "realnode: %v: tearing the node down before exiting\n", s)
			teardown()
			code := 128 + int(s.(syscall.Signal))
			os.Exit(code)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
		<-finished
	}
}
