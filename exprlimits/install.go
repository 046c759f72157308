package exprlimits

import (
	"fmt"

	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"
)

// Docs is where a refused call points its author.
const Docs = `wfguard's docs/engine.md, "Expression functions"`

// Importing the package is what installs the limits: every package that evaluates expressions (the engine,
// podspec, custommetrics, cronworkflow) imports it for this, so none can evaluate one before it ran.
//
// Why mutate argo's and expr-lang's package state: template.Replace, argoexpr.EvalBool and argo's own
// helpers (ProcessArgs, validation) build each expression's environment with env.GetFuncMap, which puts
// argo's one process-wide sprig map under "sprig", and expr-lang compiles builtins from its one
// builtin.Builtins table; no argument or option of theirs reaches either. Replacing entries of both once,
// before any expression runs, is the only way every expression the controller evaluates, its own and
// argo's, gets the bounded functions. TestTheLimitsHoldThroughArgosEntryPoints pins that they do.
func init() {
	sprig, ok := env.GetFuncMap(nil)["sprig"].(map[string]any)
	if !ok {
		// Loud at start rather than silently unbounded after an argo upgrade.
		panic(fmt.Sprintf("exprlimits: argo's expression environment holds %T under \"sprig\", not sprig's function map: the expression limits cannot be installed",
			env.GetFuncMap(nil)["sprig"]))
	}
	for name, why := range denied {
		sprig[name] = deny(name, why)
	}
	for name, fn := range cappedSprig {
		sprig[name] = fn
	}
	capBuiltins()
}

// capBuiltins replaces expr-lang's repeat and replace, whose results can be far larger than what the
// expression wrote: repeat checks its count (at most 1e6) but not the length of the string it repeats, and
// only after allocating; replace has no bound at all.
func capBuiltins() {
	repeat := builtin.Builtins[builtin.Index["repeat"]]
	checkedRepeat := repeat.Safe
	repeat.Safe = func(args ...any) (any, uint, error) {
		if len(args) == 2 {
			s, isString := args[0].(string)
			n, isNumber := asInt(args[1])
			if isString && isNumber && repeatedOver(len(s), n) {
				return nil, 0, overLimit("repeat", MaxStringBytes, "bytes")
			}
		}
		return checkedRepeat(args...)
	}
	replace := builtin.Builtins[builtin.Index["replace"]]
	unchecked := replace.Func
	replace.Func = func(args ...any) (any, error) {
		if len(args) == 3 || len(args) == 4 {
			s, ok1 := args[0].(string)
			old, ok2 := args[1].(string)
			replacement, ok3 := args[2].(string)
			n := -1 // replace(s, old, new, n) replaces at most n
			if len(args) == 4 {
				n, _ = asInt(args[3])
			}
			if ok1 && ok2 && ok3 && replacedLength(s, old, replacement, n) > MaxStringBytes {
				return nil, overLimit("replace", MaxStringBytes, "bytes")
			}
		}
		return unchecked(args...)
	}
}

// asInt is a number argument as expr-lang's builtins convert it (runtime.ToInt), false for a value that
// is not a number, which the builtin refuses itself.
func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return runtime.ToInt(n), true
	}
	return 0, false
}
