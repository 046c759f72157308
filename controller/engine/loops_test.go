package engine

import (
	"strings"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func item(t *testing.T, s string) wfv1.Item {
	t.Helper()
	it, err := wfv1.ParseItem(s)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func TestLoopChildrenAreNamedAsArgoNamesThem(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		item     string
		index    int
		want     string
	}{
		{"a string item is its value", `"a"`, 0, "s(0:a)"},
		{"a number item is its digits", `5`, 1, "s(1:5)"},
		{"a map item is its sorted key:value pairs", `{"b":"x","a":1}`, 2, "s(2:a:1,b:x)"},
		{"a list item is its elements in brackets", `["a","b"]`, 3, "s(3:[a b])"},
		{"parentheses are dropped from the description", `"f(x)"`, 4, "s(4:fx)"},
	} {
		if got := loopChildName("s", tc.index, item(t, tc.item)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.sentence, got, tc.want)
		}
	}
}

func TestItemVariables(t *testing.T) {
	got, err := itemParams(0, item(t, `{"name":"jo","n":2}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"item": `{"n":2,"name":"jo"}`, "item.name": "jo", "item.n": "2"} {
		if got[k] != want {
			t.Errorf("a map item gives {{%s}} = %q, want %q", k, got[k], want)
		}
	}
}

func TestSequences(t *testing.T) {
	n := func(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
	s := func(v string) *intstr.IntOrString { x := intstr.FromString(v); return &x }
	for _, tc := range []struct {
		sentence string
		seq      wfv1.Sequence
		want     string
		err      string
	}{
		{"count counts from zero", wfv1.Sequence{Count: n(3)}, "0 1 2", ""},
		{"count starts at start", wfv1.Sequence{Start: n(5), Count: s("2")}, "5 6", ""},
		{"end below start counts down", wfv1.Sequence{Start: n(2), End: n(0)}, "2 1 0", ""},
		{"format formats each number", wfv1.Sequence{Start: n(1), Count: n(2), Format: "w%02d"}, "w01 w02", ""},
		{"a zero count is empty", wfv1.Sequence{Count: n(0)}, "", ""},
		{"a count that is not a number names the field and keeps argo's strconv error", wfv1.Sequence{Count: s("many")}, "",
			`withSequence.count: strconv.Atoi: parsing "many": invalid syntax`},
		{"neither end nor count is an error", wfv1.Sequence{Start: n(1)}, "", "withSequence needs end or count"},
		{"a count at the cap expands", wfv1.Sequence{Count: n(3), Start: n(MaxLoopItems - 3)}, "49997 49998 49999", ""},
		{"a count beyond the cap is an error, not an allocation", wfv1.Sequence{Count: s("1000000000000")}, "",
			"withSequence has 1000000000000 items, more than the limit of 50000 per loop; split the work into nested loops or child workflows"},
		{"a range beyond the cap is an error", wfv1.Sequence{Start: n(0), End: s("50000")}, "",
			"withSequence has 50001 items, more than the limit of 50000 per loop; split the work into nested loops or child workflows"},
		{"a range across the whole int64 line does not overflow", wfv1.Sequence{Start: s("9223372036854775807"), End: s("-9223372036854775807")}, "",
			"withSequence has 18446744073709551615 items, more than the limit of 50000 per loop; split the work into nested loops or child workflows"},
	} {
		items, err := sequence(&tc.seq)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err = %v, want %q", tc.sentence, err, tc.err)
			}
			continue
		}
		var got []string
		for _, it := range items {
			got = append(got, it.String())
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%s: got %v (%v), want %q", tc.sentence, got, err, tc.want)
		}
	}
}

func TestWithParamMustBeAJSONList(t *testing.T) {
	_, err := loop{param: `{"a": 1}`}.expand("")
	if err == nil || !strings.HasPrefix(err.Error(), `withParam value could not be parsed as a JSON list: {"a": 1}: `) {
		t.Errorf("a JSON object as withParam: err = %v, want the withParam parse error", err)
	}
	if items, err := (loop{param: "not json"}).expand("false"); err != nil || items != nil {
		t.Errorf("a bad withParam on a step that will not run is no error: %v %v", items, err)
	}
	items, err := loop{param: `["a", {"k": 1}]`}.expand("")
	if err != nil || len(items) != 2 {
		t.Errorf("a JSON list: %v %v", items, err)
	}
}

func TestEveryLoopIsCapped(t *testing.T) {
	many := make([]wfv1.Item, MaxLoopItems+1)
	for i := range many {
		many[i] = item(t, "1")
	}
	param := "[" + strings.TrimSuffix(strings.Repeat("1,", MaxLoopItems+1), ",") + "]"
	for _, tc := range []struct {
		sentence string
		loop     loop
		want     string
	}{
		{"withItems beyond the cap is an error", loop{items: many}, "withItems has 50001 items, more than the limit of 50000 per loop"},
		{"withParam beyond the cap is an error", loop{param: param}, "withParam has 50001 items, more than the limit of 50000 per loop"},
	} {
		items, err := tc.loop.expand("")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || items != nil {
			t.Errorf("%s: got %d items, err %v; want %q", tc.sentence, len(items), err, tc.want)
		}
	}
	if items, err := (loop{items: many[:MaxLoopItems]}).expand(""); err != nil || len(items) != MaxLoopItems {
		t.Errorf("withItems at the cap expands: got %d items, err %v", len(items), err)
	}
	long := "x" + strings.Repeat("y", 10000)
	if _, err := (loop{param: long}).expand(""); err == nil || len(err.Error()) > 512 {
		t.Errorf("a withParam that is not JSON is quoted in bounded length: %d bytes", len(err.Error()))
	}
}

func TestFanInAggregatesSucceededIterationsInOrder(t *testing.T) {
	out := func(name, phase, result string, params ...string) *wfv1.NodeStatus {
		n := &wfv1.NodeStatus{Name: name, Phase: wfv1.NodePhase(phase), Outputs: &wfv1.Outputs{}}
		if result != "" {
			n.Outputs.Result = &result
		}
		for i := 0; i < len(params); i += 2 {
			n.Outputs.Parameters = append(n.Outputs.Parameters, wfv1.Parameter{Name: params[i], Value: wfv1.AnyStringPtr(params[i+1])})
		}
		return n
	}
	sc := scope{}
	sc.addAggregate("steps.x", []*wfv1.NodeStatus{
		out("x(0:a)", "Succeeded", "1", "p", "a"),
		out("x(1:b)", "Failed", "", "p", "lost"),
		out("x(2:c)", "Succeeded", "hello", "p", "c"),
	})
	for k, want := range map[string]string{
		"steps.x.outputs.parameters.p": `["a","c"]`,
		"steps.x.outputs.parameters":   `[{"p":"a"},{"p":"c"}]`,
		"steps.x.outputs.result":       `[1,"hello"]`,
	} {
		if sc[k] != want {
			t.Errorf("%s = %s, want %s", k, sc[k], want)
		}
	}
	if got := aggregateValues([]string{`{"a":1}`, `[2]`}); got != `[{"a":1},[2]]` {
		t.Errorf("JSON object and list values are kept as JSON: %s", got)
	}
	if got := aggregateValues([]string{`{"a":1}`, `2`}); got != `["{\"a\":1}","2"]` {
		t.Errorf("one scalar makes all values strings: %s", got)
	}
}
