package extstatus

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Types of every shape the estimate walks, so that its charges are pinned without argo's types, whose
// sizes change with argo.
type (
	walkInner    struct{ A string }
	walkEmbedded struct {
		E string `json:"e"`
	}
	walkBig  [20]int64 // over maxInlineElem: a map stores it apart
	walkSelf string    // decodes itself: its bytes and a generic decoding of them
	walkAll  struct {
		S    string               `json:"s"`
		B    []byte               `json:"b"`
		P    *string              `json:"p"`
		PI   *int                 `json:"pi"`
		PB   *bool                `json:"pb"`
		PA   *any                 `json:"pa"`
		A    any                  `json:"a"`
		L    []walkInner          `json:"l"`
		Arr  [2]int               `json:"arr"`
		M    map[string]walkInner `json:"m"`
		Big  map[string]walkBig   `json:"big"`
		PP   **walkInner          `json:"pp"`
		PL   *[]int               `json:"pl"`
		T    metav1.Time          `json:"t"`
		Self walkSelf             `json:"self"`
		Skip string               `json:"-"`
		*walkEmbedded
	}
)

func (s *walkSelf) UnmarshalJSON(b []byte) error { *s = walkSelf(b); return nil }

// Pins what the estimate charges and how far it reads, for every kind of value into every shape, and where
// it stops: input it cannot read, the depth limit, the charge limit. The charges are a 64-bit platform's,
// as are the allocation costs.
func TestTheEstimatesWalkChargesEachShapeAsBefore(t *testing.T) {
	all := shapeOf(reflect.TypeFor[walkAll]())
	// A typed decoding beside the generic one, as ParallelSteps makes.
	ownAndTyped := &shape{kind: kindOwnAny, size: 24, elem: shapeOf(reflect.TypeFor[[]walkInner]())}
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	for _, tc := range []struct {
		sentence string
		data     string
		into     *shape
		limit    int64
		wantOK   bool  // the walk read the value whole
		wantPos  int   // how far it read
		wantCost int64 // what it charged
	}{
		{"every field set", `{"s":"str","b":"AAEC","p":"ptr","pi":7,"pb":true,"pa":"x","a":1.5,"l":[{"A":"a"},{"A":"b"}],"arr":[1,2],` +
			`"m":{"k1":{"A":"v"},"k2":{}},"big":{"x":[1,2,3]},"pp":{"A":"deep"},"pl":[1,2,3],"t":"2026-01-01T00:00:00Z","self":{"k":[1,2]},"e":"emb"}`, all, 0, true, 240, 1207},
		{"an empty object", `{}`, all, 0, true, 2, 0},
		{"null", ` null `, all, 0, true, 5, 0},
		{"false into a pointer", `{"pb":false}`, all, 0, true, 12, 1},
		{"null fields", `{"p":null,"pi":null,"l":null,"m":null}`, all, 0, true, 38, 0},
		{"keys in another case, and escaped", `{"S":"x","\u0070":"y","Pi":1}`, all, 0, true, 29, 40},
		{"a field encoding/json does not know, and one it does not decode", `{"zz":[1,{"a":2},"s"],"Skip":"x"}`, all, 0, true, 33, 0},
		{"values of the wrong type", `{"s":{"a":1},"m":[1,2],"l":{"x":1},"arr":{"a":1},"pi":"7"}`, all, 0, true, 58, 8},
		{"an escaped value", `{"s":"a\"b\\c\u0041"}`, all, 0, true, 21, 16},
		{"generic values", `{"a":{"k":[1,"s",true,false,null,{"x":-1.5e3}],"":{}}}`, all, 0, true, 54, 536},
		{"a generic array", `[1,"two",[3],{"four":4}]`, anyShape, 0, true, 24, 316},
		{"whitespace everywhere", " {\n\t\"s\" :\r \"x\" , \"l\" : [ { } , { \"A\" : \"b\" } ] } ", all, 0, true, 48, 56},
		{"a type that decodes itself, with a typed decoding too", `[{"A":"a"},{"A":"b"}]`, ownAndTyped, 0, true, 21, 432},
		{"an empty input", ``, all, 0, false, 0, 0},
		{"an unterminated object", `{"s":"x"`, all, 0, false, 8, 8},
		{"an unterminated string", `{"s":"x`, all, 0, false, 7, 0},
		{"an escape at the very end", `{"s":"x\`, all, 0, false, 8, 0},
		{"a key without a colon", `{"s" "x"}`, all, 0, false, 5, 0},
		{"a key that is not a string", `{s:"x"}`, all, 0, false, 1, 0},
		{"an object without a comma", `{"s":"x" "p":"y"}`, all, 0, false, 9, 8},
		{"an array without a comma", `{"l":[{} {}]}`, all, 0, false, 9, 20},
		{"a bad literal", `{"pb":tru}`, all, 0, false, 6, 0},
		{"a bad literal in an unknown field", `{"zz":nul}`, all, 0, false, 6, 0},
		{"a bad number", `{"pi":x}`, all, 0, false, 6, 0},
		{"a bad value of a type that decodes itself", `{"self":{"k":}}`, all, 0, false, 13, 0},
		{"a bad value of a type that decodes itself, with a typed decoding too", `[{"A":"a"},{"A":}]`, ownAndTyped, 0, false, 16, 0},
		{"a bad escaped key", `{"\u00zz":1}`, all, 0, false, 9, 0},
		{"nesting past encoding/json's limit", deep, anyShape, 0, false, 10001, 440044},
		{"empty arrays", `{"l":[],"a":[]}`, all, 0, true, 15, 24},
		{"a type that decodes itself, past the limit with its bytes", `{"self":{"k":[1,2]}}`, all, 10, false, 8, 16},
		{"a type that decodes itself, past the limit in its typed decoding", `[{"A":"a"},{"A":"b"}]`, ownAndTyped, 360, false, 0, 376},
		{"a long array past the charge limit", "[" + strings.Repeat(`"xxxxxxxx",`, 1000) + `"x"]`, anyShape, 1000, false, 243, 1012},
	} {
		e := estimate{data: []byte(tc.data), limit: tc.limit}
		if tc.limit == 0 {
			e.limit = 1<<63 - 1
		}
		ok := e.value(tc.into, 0)
		if ok != tc.wantOK || e.pos != tc.wantPos || e.total != tc.wantCost {
			t.Errorf("%s: read whole %t, to %d, charged %d; want %t, %d, %d", tc.sentence, ok, e.pos, e.total, tc.wantOK, tc.wantPos, tc.wantCost)
		}
	}
}
