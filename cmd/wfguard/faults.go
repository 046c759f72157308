package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/wfguard/wfguard/controller"
	"github.com/wfguard/wfguard/faultinject"
)

// exitFaultCrash is the exit code of a process killed by an injected crash (--allow-fault-crash): distinct
// from every other exit so a staging harness can tell a planned crash from a real one.
const exitFaultCrash = 86

// faultFlags are the staging guards of fault injection.
type faultFlags struct {
	faultInjection      string // enabled or disabled
	allowFaults         bool   // deprecated alias of --fault-injection=enabled
	faultRules          string
	faultRulesConfigMap string
	faultNamespaces     string
	allowFaultCrash     bool
	faultSeed           uint64
}

func registerFaultFlags(fs *flag.FlagSet, f *faultFlags) {
	fs.StringVar(&f.faultInjection, "fault-injection", "disabled", "enabled turns on fault injection (chaos testing; needs rules and --fault-namespaces); never in production")
	fs.BoolVar(&f.allowFaults, "allow-fault-injection", false, "deprecated: same as --fault-injection=enabled")
	fs.StringVar(&f.faultRules, "fault-rules", os.Getenv("WFGUARD_FAULT_RULES"), "file of fault-injection rules (needs --fault-injection=enabled)")
	fs.StringVar(&f.faultRulesConfigMap, "fault-rules-configmap", "", "NAMESPACE/NAME of a ConfigMap whose key \"rules\" holds fault rules, watched: a change replaces them, deleting it stops injection")
	fs.StringVar(&f.faultNamespaces, "fault-namespaces", "", "comma-separated namespaces whose objects API and informer faults may touch (required with --fault-injection=enabled)")
	fs.BoolVar(&f.allowFaultCrash, "allow-fault-crash", false, fmt.Sprintf("allow crash rules: the process exits with code %d at the crash point", exitFaultCrash))
	fs.Uint64Var(&f.faultSeed, "fault-seed", uint64(time.Now().UnixNano()), "seed for percentage fault terms (logged at start)")
}

// check refuses every flag combination that could inject faults without all the guards.
func (f *faultFlags) check() error {
	if f.allowFaults {
		f.faultInjection = "enabled"
	}
	if f.faultInjection != "enabled" && f.faultInjection != "disabled" {
		return fmt.Errorf("--fault-injection must be enabled or disabled, got %q", f.faultInjection)
	}
	given := f.faultRules != "" || f.faultRulesConfigMap != ""
	if f.faultInjection == "disabled" {
		switch {
		case given:
			return fmt.Errorf("fault rules given (--fault-rules, $WFGUARD_FAULT_RULES or --fault-rules-configmap) without --fault-injection=enabled: refusing to inject faults")
		case f.allowFaultCrash || f.faultNamespaces != "":
			return fmt.Errorf("--allow-fault-crash and --fault-namespaces need --fault-injection=enabled")
		}
		return nil
	}
	if !given {
		return fmt.Errorf("--fault-injection=enabled needs rules: --fault-rules FILE or --fault-rules-configmap NAMESPACE/NAME")
	}
	if f.faultRules != "" && f.faultRulesConfigMap != "" {
		return fmt.Errorf("--fault-rules and --fault-rules-configmap are exclusive: give one source of rules")
	}
	if f.faultRulesConfigMap != "" {
		if ns, name, ok := strings.Cut(f.faultRulesConfigMap, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--fault-rules-configmap must be NAMESPACE/NAME, got %q", f.faultRulesConfigMap)
		}
	}
	if len(f.namespaces()) == 0 {
		return fmt.Errorf("--fault-injection=enabled needs --fault-namespaces: the namespaces whose objects faults may touch")
	}
	for _, ns := range f.namespaces() {
		if ns == "" {
			return fmt.Errorf("--fault-namespaces %q has an empty name", f.faultNamespaces)
		}
	}
	return nil
}

func (f *faultFlags) namespaces() []string {
	if f.faultNamespaces == "" {
		return nil
	}
	out := strings.Split(f.faultNamespaces, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// faults is fault injection as the binary runs it: rules from a file or a watched ConfigMap, applied to the
// API client, every informer and the crash points, counted, logged loudly and announced on workflows.
type faults struct {
	injector *faultinject.Injector
	points   *faultinject.Points
	source   *faultinject.ConfigMapSource
	events   record.EventBroadcaster
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

// startFaults loads and checks the rules (bad ones are refused with their position), then wraps config's
// transport. The ConfigMap and the events use a client made before the wrap, so faults can always be
// switched off and are never reported through a faulted client. nil when fault injection is disabled.
func startFaults(ctx context.Context, f *faultFlags, config *rest.Config, registry prometheus.Registerer, log *slog.Logger,
	exit func(int)) (*faults, error) {
	if f.faultInjection != "enabled" {
		return nil, nil
	}
	plain, err := kubernetes.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return nil, fmt.Errorf("building the fault-injection client: %w", err)
	}
	policy := faultinject.Policy{RequireExpiry: true, AllowCrash: f.allowFaultCrash}
	var rules []*faultinject.Rule
	var source *faultinject.ConfigMapSource
	where := f.faultRules
	if f.faultRules != "" {
		if rules, err = rulesFromFile(f.faultRules, policy); err != nil {
			return nil, err
		}
	} else {
		ns, name, _ := strings.Cut(f.faultRulesConfigMap, "/")
		source = &faultinject.ConfigMapSource{Client: plain, Namespace: ns, Name: name, Policy: policy, Logger: log}
		if rules, err = source.Load(ctx); err != nil {
			return nil, err
		}
		where = "configmap " + f.faultRulesConfigMap
	}
	fl := &faults{injector: faultinject.NewInjector(rules, f.faultSeed, nil), points: faultinject.NewPoints(), source: source}
	if err := fl.injector.Register(registry); err != nil {
		return nil, err
	}
	fl.injector.LimitNamespaces(f.namespaces())
	fl.injector.ArmPoints(fl.points)
	fl.injector.OnCrash(func(inj faultinject.Injection) {
		log.Error("FAULT INJECTION: CRASHING THE PROCESS ON PURPOSE", "rule", inj.Rule, "at", inj.Key, "exitCode", exitFaultCrash)
		exit(exitFaultCrash)
	})
	fl.events = record.NewBroadcaster(record.WithContext(ctx))
	fl.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: plain.CoreV1().Events("")})
	recorder := fl.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "wfguard-controller"})
	fl.injector.OnWorkflow(func(inj faultinject.Injection) {
		ns, name, _ := strings.Cut(inj.Workflow, "/")
		recorder.Eventf(&corev1.ObjectReference{Kind: "Workflow", APIVersion: "argoproj.io/v1alpha1", Namespace: ns, Name: name},
			corev1.EventTypeWarning, faultinject.ReasonFaultInjected, "fault rule %s injected %s on %s (further injections of this rule on this workflow are not reported)",
			inj.Rule, inj.Action.Kind, inj.Key)
	})
	config.Wrap(fl.injector.WrapTransport)
	faultinject.LogRules(log, "FAULT INJECTION ENABLED", rules, "source", where, "seed", f.faultSeed,
		"namespaces", f.namespaces(), "allowCrash", f.allowFaultCrash)
	if source != nil {
		var runCtx context.Context
		runCtx, fl.cancel = context.WithCancel(ctx)
		fl.wg.Add(1)
		go func() {
			defer fl.wg.Done()
			if err := source.Run(runCtx, fl.injector); err != nil {
				log.Error("FAULT INJECTION STOPPED: cannot watch the rules ConfigMap", "err", err)
				fl.injector.SetRules(nil)
			}
		}()
	}
	return fl, nil
}

func rulesFromFile(path string, policy faultinject.Policy) ([]*faultinject.Rule, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading fault rules: %w", err)
	}
	defer file.Close()
	rules, err := faultinject.ParseRules(file, time.Now())
	if err == nil {
		err = policy.Check(rules)
	}
	if err != nil {
		return nil, fmt.Errorf("fault rules %s: %w", path, err)
	}
	return rules, nil
}

// apply sets the controller's fault seams; a nil *faults leaves them unset.
func (fl *faults) apply(o *controller.Options) {
	if fl == nil {
		return
	}
	o.WrapListWatch, o.WrapHandler, o.Points = fl.injector.WrapListWatch, fl.injector.WrapHandler, fl.points
}

// stop ends the ConfigMap watch, pending late notifications and the event broadcaster.
func (fl *faults) stop() {
	if fl == nil {
		return
	}
	if fl.cancel != nil {
		fl.cancel()
	}
	fl.wg.Wait()
	fl.injector.Close()
	fl.events.Shutdown()
}
