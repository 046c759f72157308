package exprlimits

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	sprig "github.com/Masterminds/sprig/v3"
	"github.com/argoproj/argo-workflows/v3/util/expr/argoexpr"
	"github.com/argoproj/argo-workflows/v3/util/expr/env"
	"github.com/argoproj/argo-workflows/v3/util/template"
	"github.com/expr-lang/expr"
)

// evaluators are the ways the engine evaluates an expression, called exactly as it calls them: argument
// substitution (loops.go, scope.go: template.Replace over JSON), a boolean (hooks.go, retry.go:
// argoexpr.EvalBool over env.GetFuncMap), and a value (fromexpression.go, wfmetadata.go: expr.Compile and
// expr.Run over env.GetFuncMap).
var evaluators = []struct {
	name string
	eval func(expression string) (string, error)
}{
	{"template.Replace", func(expression string) (string, error) {
		out, err := template.Replace(strconv.Quote("{{="+expression+"}}"), map[string]string{"item": "1"}, false)
		if err != nil {
			return "", err
		}
		return strconv.Unquote(out)
	}},
	{"argoexpr.EvalBool", func(expression string) (string, error) {
		ok, err := argoexpr.EvalBool("len(string("+expression+")) >= 0", env.GetFuncMap(template.EnvMap(map[string]string{"item": "1"})))
		return strconv.FormatBool(ok), err
	}},
	{"expr.Run", func(expression string) (string, error) {
		vars := env.GetFuncMap(template.EnvMap(map[string]string{"item": "1"}))
		program, err := expr.Compile(expression, expr.Env(vars))
		if err != nil {
			return "", err
		}
		out, err := expr.Run(program, vars)
		return fmt.Sprint(out), err
	}},
}

// A denied function fails at once, naming itself and the docs, however the engine evaluates it: an argo
// upgrade that built the environment another way would fail here rather than run them again.
func TestDeniedFunctionsFailNamingThemselvesThroughArgosEntryPoints(t *testing.T) {
	calls := map[string]string{
		"genPrivateKey":            "sprig.genPrivateKey('rsa')",
		"genCA":                    "sprig.genCA('ca', 365)",
		"genCAWithKey":             "sprig.genCAWithKey('ca', 365, 'key')",
		"genSelfSignedCert":        "sprig.genSelfSignedCert('x', nil, nil, 365)",
		"genSelfSignedCertWithKey": "sprig.genSelfSignedCertWithKey('x', nil, nil, 365, 'key')",
		"genSignedCert":            "sprig.genSignedCert('x', nil, nil, 365, nil)",
		"genSignedCertWithKey":     "sprig.genSignedCertWithKey('x', nil, nil, 365, nil, 'key')",
		"derivePassword":           "sprig.derivePassword(1, 'long', 'p', 'u', 's')",
		"bcrypt":                   "sprig.bcrypt('secret')",
		"htpasswd":                 "sprig.htpasswd('user', 'secret')",
		"getHostByName":            "sprig.getHostByName('example.com')",
	}
	if len(calls) != len(denied) {
		t.Fatalf("the test calls %d functions, %d are denied", len(calls), len(denied))
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		for _, ev := range evaluators {
			t.Run(fmt.Sprintf("sprig.%s fails through %s", name, ev.name), func(t *testing.T) {
				out, err := ev.eval(calls[name] + " + item")
				want := fmt.Sprintf("sprig.%s is not available in wfguard's expressions", name)
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), Docs) {
					t.Fatalf("= %.40q, %v; want an error containing %q and the docs", out, err, want)
				}
			})
		}
	}
}

// Functions that allocate by a count, or by a product of their arguments, refuse past their limit and
// work as before up to it.
func TestCappedFunctionsRefusePastTheirLimitAndWorkUpToIt(t *testing.T) {
	for _, tc := range []struct {
		sentence   string
		expression string
		want       string // the result's length, or its text; "" with wantErr
		wantErr    string
	}{
		{"sprig.repeat up to 1 MiB repeats", "len(sprig.repeat(1048576, 'x'))", "1048576", ""},
		{"sprig.repeat past 1 MiB is refused before it allocates", "sprig.repeat(1000000000000, 'x')", "", "sprig.repeat would return more than 1048576 bytes"},
		{"sprig.repeat of a long string past 1 MiB is refused", "sprig.repeat(2, sprig.repeat(600000, 'x'))", "", "sprig.repeat would return more than 1048576 bytes"},
		{"expr-lang's repeat of a long string past 1 MiB is refused", "repeat(repeat('x', 1000), 999999)", "", "repeat would return more than 1048576 bytes"},
		{"expr-lang's repeat under the limit repeats", "len(repeat(repeat('x', 2), 400000))", "800000", ""},
		{"expr-lang's replace past 1 MiB is refused", "replace(repeat('x', 2000), '', repeat('y', 1000))", "", "replace would return more than 1048576 bytes"},
		{"expr-lang's replace of at most n counts only n", "len(replace(repeat('x', 2000), 'x', repeat('y', 1000), 2))", "3998", ""},
		{"expr-lang's replace under the limit replaces", "replace('a-b-c', '-', '+')", "a+b+c", ""},
		{"sprig.replace past 1 MiB is refused", "sprig.replace('', sprig.repeat(1000, 'y'), sprig.repeat(2000, 'x'))", "", "sprig.replace would return more than 1048576 bytes"},
		{"sprig.replace under the limit replaces", "sprig.replace('-', '+', 'a-b-c')", "a+b+c", ""},
		{"sprig.indent past 1 MiB is refused", "sprig.indent(1000000000, 'x')", "", "sprig.indent would return more than 1048576 bytes"},
		{"sprig.indent of many lines past 1 MiB is refused", "sprig.indent(1000, sprig.repeat(2000, '\\n'))", "", "sprig.indent would return more than 1048576 bytes"},
		{"sprig.indent under the limit indents", "sprig.indent(2, 'a\\nb')", "  a\n  b", ""},
		{"sprig.nindent past 1 MiB is refused", "sprig.nindent(1048576, 'x')", "", "sprig.nindent would return more than 1048576 bytes"},
		{"sprig.nindent under the limit indents", "sprig.nindent(1, 'a')", "\n a", ""},
		{"sprig.until up to 50,000 items counts", "len(sprig.until(50000))", "50000", ""},
		{"sprig.until past 50,000 items is refused", "sprig.until(1000000000000)", "", "sprig.until would return more than 50000 items"},
		{"sprig.until counts down as sprig's does", "toJson(sprig.until(-3))", "[0,-1,-2]", ""},
		{"sprig.untilStep past 50,000 items is refused", "sprig.untilStep(0, 1000000000, 2)", "", "sprig.untilStep would return more than 50000 items"},
		{"sprig.untilStep that wraps past the largest int ends", "toJson(sprig.untilStep(0, 9223372036854775807, 4611686018427387904))",
			"[0,4611686018427387904]", ""},
		{"sprig.untilStep away from its stop is empty, as sprig's", "toJson(sprig.untilStep(0, 10, -1))", "[]", ""},
		{"sprig.seq past 50,000 numbers is refused", "sprig.seq(1000000000)", "", "sprig.seq would return more than 50000 items"},
		{"sprig.seq under the limit counts", "sprig.seq(2, 5)", "2 3 4 5", ""},
		{"sprig.randAlphaNum up to 4,096 characters generates", "len(sprig.randAlphaNum(4096))", "4096", ""},
		{"sprig.randAlphaNum past 4,096 characters is refused", "sprig.randAlphaNum(1000000)", "", "sprig.randAlphaNum would return more than 4096 characters"},
		{"sprig.randAlpha past 4,096 characters is refused", "sprig.randAlpha(4097)", "", "sprig.randAlpha would return more than 4096 characters"},
		{"sprig.randAscii past 4,096 characters is refused", "sprig.randAscii(4097)", "", "sprig.randAscii would return more than 4096 characters"},
		{"sprig.randNumeric past 4,096 characters is refused", "sprig.randNumeric(4097)", "", "sprig.randNumeric would return more than 4096 characters"},
		{"sprig.randNumeric under the limit generates", "len(sprig.randNumeric(8))", "8", ""},
		{"sprig.randBytes past 4,096 bytes is refused", "sprig.randBytes(1000000000)", "", "sprig.randBytes would return more than 4096 bytes"},
		{"sprig.randBytes up to 4,096 bytes generates them in base64", "len(sprig.randBytes(4096))", "5464", ""},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			out, err := evaluators[0].eval(tc.expression)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), Docs) {
					t.Fatalf("= %.40q, %v; want an error containing %q and the docs", out, err, tc.wantErr)
				}
				return
			}
			if err != nil || out != tc.want {
				t.Fatalf("= %q, %v; want %q", out, err, tc.want)
			}
		})
	}
}

// The list functions sprig's own code runs (until, untilStep, seq) give sprig's results wherever sprig's
// end: the wrappers are bounds, not new semantics.
func TestBoundedListFunctionsAgreeWithSprigs(t *testing.T) {
	theirs := sprig.GenericFuncMap()
	for _, params := range [][]int{{5}, {-3}, {0}, {1}, {2, 6}, {6, 2}, {3, 3}, {0, 2, 10}, {10, -3, 0}, {10, 3, 0}, {0, 0, 5}, {5, -1, 5}, {}, {1, 2, 3, 4}} {
		t.Run(fmt.Sprintf("seq%v is sprig's", params), func(t *testing.T) {
			got, err := seq(params...)
			if want := theirs["seq"].(func(...int) string)(params...); err != nil || got != want {
				t.Fatalf("= %q, %v; sprig's is %q", got, err, want)
			}
		})
	}
	for _, p := range [][3]int{{0, 5, 1}, {5, 0, -2}, {0, 10, 3}, {0, 10, 0}, {10, 0, 1}, {-4, 4, 4}} {
		t.Run(fmt.Sprintf("untilStep%v is sprig's", p), func(t *testing.T) {
			got, err := boundedSteps("untilStep", p[0], p[1], p[2])
			if want := theirs["untilStep"].(func(int, int, int) []int)(p[0], p[1], p[2]); err != nil || !slices.Equal(got, want) || got == nil {
				t.Fatalf("= %v, %v; sprig's is %v", got, err, want)
			}
		})
	}
}
