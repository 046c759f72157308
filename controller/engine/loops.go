package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/util/template"

	"github.com/wfguard/wfguard/internal/truncate"
)

// MaxLoopItems caps the iterations of one withItems / withParam / withSequence. A loop beyond it is an
// error on its node instead of an expansion that exhausts memory (a count of 10^12 allocates before any
// pod exists). Documented in docs/engine.md.
const MaxLoopItems = 50000

// loop is the withItems / withParam / withSequence of a step or task, after parameter substitution.
type loop struct {
	items []wfv1.Item
	param string
	seq   *wfv1.Sequence
}

func (l loop) set() bool { return len(l.items) > 0 || l.param != "" || l.seq != nil }

// expand returns the loop's items. A withParam that is not a JSON list, or a withSequence that is not
// numbers, is an error naming the field, unless the (already substituted) `when` says not to run.
func (l loop) expand(when string) ([]wfv1.Item, error) {
	var items []wfv1.Item
	var err error
	switch {
	case len(l.items) > MaxLoopItems:
		return nil, tooManyItems("withItems", uint64(len(l.items)))
	case len(l.items) > 0:
		return l.items, nil
	case l.param != "":
		if err = json.Unmarshal([]byte(l.param), &items); err != nil {
			err = fmt.Errorf("withParam value could not be parsed as a JSON list: %s: %v", truncate.String(strings.TrimSpace(l.param), 256), err)
		} else if len(items) > MaxLoopItems {
			return nil, tooManyItems("withParam", uint64(len(items)))
		}
	default:
		items, err = sequence(l.seq)
	}
	if err != nil {
		if run, whenErr := evalWhen(when); whenErr == nil && !run {
			return nil, nil
		}
		return nil, err
	}
	return items, nil
}

// tooManyItems is the error of a loop over more than MaxLoopItems iterations.
func tooManyItems(field string, n uint64) error {
	return fmt.Errorf("%s has %d items, more than the limit of %d per loop; split the work into nested loops or child workflows", field, n, MaxLoopItems)
}

// sequence lists withSequence's numbers, from start to end inclusive (or count numbers from start),
// descending when end < start, each formatted with format (default %d).
func sequence(seq *wfv1.Sequence) ([]wfv1.Item, error) {
	start, end, empty, err := sequenceBounds(seq)
	if err != nil || empty {
		return nil, err
	}
	format := "%d"
	if seq.Format != "" {
		format = seq.Format
	}
	step := 1
	if end < start {
		step = -1
	}
	// The distance in uint64 is exact for any start and end; end-start in int could overflow.
	span := uint64(end) - uint64(start)
	if end < start {
		span = uint64(start) - uint64(end)
	}
	if span >= MaxLoopItems {
		return nil, tooManyItems("withSequence", span+1)
	}
	var items []wfv1.Item
	for i := start; ; i += step {
		data, err := json.Marshal(fmt.Sprintf(format, i))
		if err != nil {
			return nil, fmt.Errorf("withSequence.format: %w", err)
		}
		items = append(items, wfv1.Item{Value: data})
		if i == end {
			return items, nil
		}
	}
}

// sequenceBounds reads withSequence's first and last number; a count of zero or less is empty.
func sequenceBounds(seq *wfv1.Sequence) (start, end int, empty bool, err error) {
	if seq.Start != nil {
		if start, err = sequenceNumber("start", seq.Start); err != nil {
			return 0, 0, false, err
		}
	}
	switch {
	case seq.End != nil:
		end, err = sequenceNumber("end", seq.End)
		return start, end, false, err
	case seq.Count != nil:
		count, err := sequenceNumber("count", seq.Count)
		if err != nil || count <= 0 {
			return 0, 0, true, err
		}
		if count > MaxLoopItems {
			return 0, 0, false, tooManyItems("withSequence", uint64(count))
		}
		return start, start + count - 1, false, nil
	}
	return 0, 0, false, fmt.Errorf("withSequence needs end or count")
}

func sequenceNumber(field string, v fmt.Stringer) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v.String()))
	if err != nil {
		// argo reports the bare strconv error; it is kept verbatim after the field's name.
		return 0, fmt.Errorf("withSequence.%s: %w", field, err)
	}
	return n, nil
}

// loopChildName is argo's name for iteration index of a loop over item: name(index:description), where
// a map is described by its sorted key:value pairs and parentheses are dropped from the description.
func loopChildName(name string, index int, item wfv1.Item) string {
	var desc string
	switch item.GetType() {
	case wfv1.Map:
		var pairs []string
		for k, v := range item.GetMapVal() {
			pairs = append(pairs, k+":"+v.String())
		}
		sort.Strings(pairs)
		desc = strings.Join(pairs, ",")
	case wfv1.List:
		var elems []string
		for _, v := range item.GetListVal() {
			elems = append(elems, v.String())
		}
		desc = "[" + strings.Join(elems, " ") + "]"
	default:
		desc = item.String()
	}
	desc = strings.NewReplacer("(", "", ")", "").Replace(desc)
	return fmt.Sprintf("%s(%d:%s)", name, index, desc)
}

// itemParams are the {{item}} and {{item.field}} variables of one iteration.
func itemParams(index int, item wfv1.Item) (map[string]string, error) {
	out := map[string]string{}
	switch item.GetType() {
	case wfv1.String, wfv1.Number, wfv1.Bool:
		out["item"] = item.String()
	case wfv1.Map:
		m := item.GetMapVal()
		for k, v := range m {
			out["item."+k] = v.String()
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encoding withItems[%d]: %w", index, err)
		}
		out["item"] = string(data)
	case wfv1.List:
		data, err := json.Marshal(item.GetListVal())
		if err != nil {
			return nil, fmt.Errorf("encoding withItems[%d]: %w", index, err)
		}
		out["item"] = string(data)
	default:
		return nil, fmt.Errorf("withItems[%d] expected string, number, list, or map. received: %s", index, item.String())
	}
	return out, nil
}

// substituteItem returns a copy of v (a step or task without its loop fields) with the item's variables
// substituted, and expression tags left for the item evaluated against env (globals and scope) with it.
// Like argo, a reference that still cannot be resolved is an error ("failed to resolve {{item.x}}")
// unless the iteration will not run (when evaluates false already).
func substituteItem[T any](v *T, index int, item wfv1.Item, env map[string]string, when string) (*T, error) {
	params, err := itemParams(index, item)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	run, whenErr := evalWhen(when)
	allowUnresolved := whenErr == nil && !run
	replaced, err := template.Replace(string(data), mergeParams(env, params), allowUnresolved)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal([]byte(replaced), out); err != nil {
		return nil, fmt.Errorf("decoding after substituting withItems[%d]: %w", index, err)
	}
	return out, nil
}

// loopIndex reads the iteration index back from a loop child's name, given the loop's own name.
func loopIndex(loopName, childName string) (int, bool) {
	rest, ok := strings.CutPrefix(childName, loopName+"(")
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	return i, err == nil
}

// loopChildren are the iteration nodes of loop loopName inside boundary (not retries' attempts, not
// hooks, not skipped iterations), in iteration order.
func loopChildren(p *Pass, loopName, boundaryID string) []*wfv1.NodeStatus {
	type indexed struct {
		i int
		n *wfv1.NodeStatus
	}
	var found []indexed
	for id := range p.WF.Status.Nodes {
		n := p.nodeByID(id)
		if n.BoundaryID != boundaryID || n.Type == wfv1.NodeTypeSkipped {
			continue
		}
		if n.NodeFlag != nil && (n.NodeFlag.Retried || n.NodeFlag.Hooked) {
			continue
		}
		i, ok := loopIndex(loopName, n.Name)
		// An iteration's description has no parentheses: one closing one ends the name.
		if !ok || strings.Count(n.Name[len(loopName):], ")") != 1 || !strings.HasSuffix(n.Name, ")") {
			continue
		}
		found = append(found, indexed{i, n})
	}
	sort.Slice(found, func(a, b int) bool { return found[a].i < found[b].i })
	out := make([]*wfv1.NodeStatus, len(found))
	for i, f := range found {
		out[i] = f.n
	}
	return out
}

// addAggregate puts the fan-in of a loop's outputs in the scope under prefix, as argo does: outputs.result
// and outputs.parameters as JSON lists over the succeeded iterations, and outputs.parameters.NAME as the
// list of that parameter's values (JSON values kept when every value is a JSON list or object).
func (s scope) addAggregate(prefix string, children []*wfv1.NodeStatus) {
	results := []json.RawMessage{}
	params := []map[string]string{}
	values := map[string][]string{}
	for _, n := range children {
		if n.Outputs == nil || n.Phase != wfv1.NodeSucceeded {
			continue
		}
		if len(n.Outputs.Parameters) > 0 {
			m := map[string]string{}
			for _, p := range n.Outputs.Parameters {
				v := ""
				if p.Value != nil {
					v = p.Value.String()
				}
				m[p.Name] = v
				values[p.Name] = append(values[p.Name], v)
			}
			params = append(params, m)
		}
		if r := n.Outputs.Result; r != nil {
			if json.Valid([]byte(*r)) {
				results = append(results, json.RawMessage(*r))
			} else {
				// argo fails the fan-in on a result that is not JSON; a plain string is kept as one.
				data, _ := json.Marshal(*r)
				results = append(results, data)
			}
		}
	}
	if data, err := json.Marshal(results); err == nil {
		s[prefix+".outputs.result"] = string(data)
	}
	if data, err := json.Marshal(params); err == nil {
		s[prefix+".outputs.parameters"] = string(data)
	}
	for name, vs := range values {
		s[prefix+".outputs.parameters."+name] = aggregateValues(vs)
	}
}

func aggregateValues(vs []string) string {
	decoded := make([]any, 0, len(vs))
	for _, v := range vs {
		var x any
		if json.Unmarshal([]byte(v), &x) != nil {
			data, _ := json.Marshal(vs)
			return string(data)
		}
		switch x.(type) {
		case []any, map[string]any:
			decoded = append(decoded, x)
		default:
			data, _ := json.Marshal(vs)
			return string(data)
		}
	}
	data, _ := json.Marshal(decoded)
	return string(data)
}
