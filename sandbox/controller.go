package sandbox

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/controller"
)

// Controller is a wfguard controller running in this process: the sandbox's, the bench's and the test
// harness's (test/harness) are all started here.
type Controller struct {
	*controller.Controller
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// StartController builds a controller with opts, exactly as given, on clients built from config
// (controller.NewClients, Kubernetes' own kinds in protobuf), and runs it until Stop or the end of ctx.
func StartController(ctx context.Context, config *rest.Config, opts controller.Options) (*Controller, error) {
	clients, err := controller.NewClients(config, "")
	if err != nil {
		return nil, err
	}
	ctrl, err := controller.New(clients, opts)
	if err != nil {
		return nil, err
	}
	c := &Controller{Controller: ctrl, done: make(chan struct{})}
	ctx, c.cancel = context.WithCancel(ctx)
	go func() {
		defer close(c.done)
		c.err = ctrl.Run(ctx)
	}()
	return c, nil
}

// Done is closed once Run has returned: after Stop, at the end of the context, or at a crash point
// (faultinject.ErrCrash).
func (c *Controller) Done() <-chan struct{} { return c.done }

// Err is what Run returned; call it once Done is closed.
func (c *Controller) Err() error {
	<-c.done
	return c.err
}

// Stop cancels Run, waits for it to return (the workers drained) and returns its error. It may be called
// more than once.
func (c *Controller) Stop() error {
	c.cancel()
	return c.Err()
}
