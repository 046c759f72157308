package main

import (
	"context"
	"errors"

	"github.com/argoproj/argo-workflows/v3/pkg/client/clientset/versioned"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/cronworkflow"
)

// withCronWorkflows returns what the leader runs: the workflow controller's run and, unless
// --cron-workflow-workers=0, the CronWorkflow reconciler beside it with the same scope.
func withCronWorkflows(config *rest.Config, f *controllerFlags, opts controller.Options, argo versioned.Interface,
	observer cronworkflow.Observer, runController func(context.Context) error) (func(context.Context) error, error) {
	if f.cronWorkers == 0 {
		opts.Logger.Info("CronWorkflows are off (--cron-workflow-workers=0)")
		return runController, nil
	}
	cron, err := cronworkflow.New(config, cronworkflow.Options{
		Namespace: opts.Namespace, InstanceID: opts.InstanceID, Workers: f.cronWorkers,
		ValidateWorkflow: controller.ArgoValidator(argo), ResyncPeriod: opts.ResyncPeriod,
		Logger: opts.Logger, Registry: opts.Registry, Observer: observer, RecordKey: opts.RecordKey,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return runTogether(ctx, runController, cron.Run) }, nil
}

// runTogether runs each until ctx ends or one of them returns; then it stops the others and returns
// their errors once all have returned.
func runTogether(ctx context.Context, runs ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runs))
	for _, run := range runs {
		go func() {
			err := run(ctx)
			cancel()
			errs <- err
		}()
	}
	var all []error
	for range runs {
		if err := <-errs; err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}
