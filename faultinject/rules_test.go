package faultinject

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidRulesParseIntoTheirSiteStageAndTerms(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		text  string
		site  string
		stage string
		terms []Term
		match map[string]string
	}{
		{"an api rule walks counted terms", "a api verb=create resource=pods : 3*error(500)->off", SiteAPI, "",
			[]Term{{Count: 3, Action: Action{Kind: ActionError, Code: 500}}, {Action: Action{Kind: ActionOff}}},
			map[string]string{"verb": "create", "resource": "pods"}},
		{"a 429 carries its Retry-After", "a api : 10%error(429,2s)", SiteAPI, "",
			[]Term{{Percent: 10, Action: Action{Kind: ActionError, Code: 429, Delay: 2 * time.Second}}}, map[string]string{}},
		{"an informer delay is a watch fault", "s informer resource=workflowtaskresults : delay(30s)", SiteInformer, StageWatch,
			[]Term{{Action: Action{Kind: ActionDelay, Delay: 30 * time.Second}}}, map[string]string{"resource": "workflowtaskresults"}},
		{"drops and resets are watch faults", "d informer resource=pods namespace=a : 5*drop->reset->off", SiteInformer, StageWatch,
			[]Term{{Count: 5, Action: Action{Kind: ActionDrop}}, {Action: Action{Kind: ActionReset}}, {Action: Action{Kind: ActionOff}}},
			map[string]string{"resource": "pods", "namespace": "a"}},
		{"notify-delay is a handler fault", "n informer resource=workflows : 50%notify-delay(2s)", SiteInformer, StageNotify,
			[]Term{{Percent: 50, Action: Action{Kind: ActionNotifyDelay, Delay: 2 * time.Second}}}, map[string]string{"resource": "workflows"}},
		{"a point crashes once", "c point name=after-workflow-persist : 1*crash->off", SitePoint, "",
			[]Term{{Count: 1, Action: Action{Kind: ActionCrash}}, {Action: Action{Kind: ActionOff}}}, map[string]string{"name": "after-workflow-persist"}},
		{"a point fails without a status", "e point name=before-action-status : 2*error", SitePoint, "",
			[]Term{{Count: 2, Action: Action{Kind: ActionError}}}, map[string]string{"name": "before-action-status"}},
		{"a worker pause lasts its window", "p point name=worker : pause for=1m", SitePoint, "",
			[]Term{{Action: Action{Kind: ActionPause}}}, map[string]string{"name": "worker"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := ParseRules(strings.NewReader("# comment\n\n"+tc.text), now)
			if err != nil {
				t.Fatal(err)
			}
			r := rules[0]
			if r.Site != tc.site || r.Stage != tc.stage || r.Line != 3 || r.Text != tc.text {
				t.Errorf("site %q stage %q line %d text %q", r.Site, r.Stage, r.Line, r.Text)
			}
			if len(r.Terms) != len(tc.terms) {
				t.Fatalf("terms = %+v, want %+v", r.Terms, tc.terms)
			}
			for i := range r.Terms {
				if r.Terms[i] != tc.terms[i] {
					t.Errorf("term %d = %+v, want %+v", i, r.Terms[i], tc.terms[i])
				}
			}
			if len(r.Match) != len(tc.match) {
				t.Errorf("match = %v, want %v", r.Match, tc.match)
			}
			for k, v := range tc.match {
				if r.Match[k] != v {
					t.Errorf("match = %v, want %v", r.Match, tc.match)
				}
			}
		})
	}
}

func TestBadRulesAreRefusedAtTheirExactPosition(t *testing.T) {
	cases := []struct {
		text      string
		line, col int
		want      string
	}{
		{"x api : explode", 1, 9, "unknown action"},
		{"x api : 0*error(500)", 1, 9, "count"},
		{"x api : 150%error(500)", 1, 9, "percent"},
		{"x api : error(200)", 1, 9, "HTTP status"},
		{"x api : error", 1, 9, "needs an HTTP status"},
		{"x api : delay(soon)", 1, 9, "positive duration"},
		{"x api : error(500", 1, 9, "unclosed"},
		{"x api : drop", 1, 9, "not available at site api"},
		{"x api : 2*error(500)->reset->boom", 1, 30, `unknown action "boom"`},
		{"x disk : error(500)", 1, 3, `unknown site "disk"`},
		{"x api color=red : error(500)", 1, 7, "match"},
		{"x informer : delay(1s)", 1, 3, "needs resource="},
		{"x informer resource=pods verb=get : drop", 1, 26, "match"},
		{"x informer resource=pods : delay(1s)->notify-delay(1s)", 1, 28, "either the watch"},
		{"x informer resource=pods : crash", 1, 28, "not available at site informer"},
		{"x point : crash", 1, 3, "needs name="},
		{"x point name=worker : error(500)", 1, 23, "takes no status"},
		{"x point name=worker : pause", 1, 23, "add for="},
		{"x point name=worker : reset", 1, 23, "not available at site point"},
		{"x api verb=get", 1, 1, "want `name site"},
		{"api : error(500)", 1, 1, "a name and a site"},
		{"x api :", 1, 8, "no terms"},
		{"x api : error(500) forever", 1, 20, "unknown option"},
		{"x api : error(500) for=-1m", 1, 20, "positive duration"},
		{"\n\n  x api : error(500) max=0", 3, 22, "max="},
		{"x api : error(500)\nx api : error(503)", 2, 1, "already used on line 1"},
	}
	for _, tc := range cases {
		_, err := ParseRules(strings.NewReader(tc.text), time.Now())
		var pe *PositionError
		if !errors.As(err, &pe) {
			t.Errorf("%q: err = %v, want a PositionError", tc.text, err)
			continue
		}
		if pe.Line != tc.line || pe.Col != tc.col || !strings.Contains(pe.Msg, tc.want) {
			t.Errorf("%q: got line %d col %d %q, want line %d col %d mentioning %q", tc.text, pe.Line, pe.Col, pe.Msg, tc.line, tc.col, tc.want)
		}
	}
}

func TestThePolicyRefusesRulesThatNeverExpireOrCrash(t *testing.T) {
	text := "ok api : error(500) for=1m\nbounded api : error(503) max=3\n# gap\nforever api verb=list : error(500)\n"
	rules, err := ParseRules(strings.NewReader(text), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	err = Policy{RequireExpiry: true}.Check(rules)
	var pe *PositionError
	if !errors.As(err, &pe) || pe.Line != 4 || !strings.Contains(pe.Msg, "rule forever never expires") {
		t.Errorf("err = %v, want line 4 refused for having no expiry", err)
	}
	if err := (Policy{}).Check(rules); err != nil {
		t.Errorf("without RequireExpiry (tests) the rules pass: %v", err)
	}
	crash, err := ParseRules(strings.NewReader("boom point name=after-workflow-persist : 1*delay(1s)->1*crash max=1"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := (Policy{RequireExpiry: true}).Check(crash); !errors.As(err, &pe) || pe.Line != 1 || pe.Col != 55 || !strings.Contains(pe.Msg, "--allow-fault-crash") {
		t.Errorf("err = %v, want the crash refused without the allow", err)
	}
	if err := (Policy{RequireExpiry: true, AllowCrash: true}).Check(crash); err != nil {
		t.Errorf("an allowed, bounded crash is refused: %v", err)
	}
}

func TestARuleStopsBeingActiveWhenItExpiresOrIsExhausted(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rules, err := ParseRules(strings.NewReader(
		"timed api verb=watch : error(500) for=1m\ncounted api verb=get : 2*error(500)\nparked api verb=list : 1*error(500)->off"), now)
	if err != nil {
		t.Fatal(err)
	}
	in := NewInjector(rules, 1, nil)
	for _, r := range rules {
		if !r.active(now) {
			t.Errorf("%s is inactive at load", r.Name)
		}
	}
	if rules[0].active(now.Add(time.Minute)) {
		t.Error("for=1m is still active a minute later")
	}
	for range 2 {
		in.decide(SiteAPI, "", map[string]string{"verb": "get"}, nil)
	}
	in.decide(SiteAPI, "", map[string]string{"verb": "list"}, nil)
	if rules[1].active(now) || rules[2].active(now) {
		t.Errorf("exhausted rules stay active: counted %v parked %v", rules[1].active(now), rules[2].active(now))
	}
}

// Pins each refusal word for word, with its position: TestBadRulesAreRefusedAtTheirExactPosition names the
// words that matter, this one that nothing else changed.
func TestEveryRefusalOfARuleReadsExactlyAsBefore(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"x api : explode", `fault rule line 1 col 9: term "explode": unknown action "explode" (want off, error, delay(d), reset, drop, notify-delay(d), pause or crash)`},
		{"x api : 0*error(500)", `fault rule line 1 col 9: term "0*error(500)": count "0" is not a positive integer`},
		{"x api : x*error(500)", `fault rule line 1 col 9: term "x*error(500)": count "x" is not a positive integer`},
		{"x api : 150%error(500)", `fault rule line 1 col 9: term "150%error(500)": percent "150" is not in (0, 100]`},
		{"x api : abc%error(500)", `fault rule line 1 col 9: term "abc%error(500)": percent "abc" is not in (0, 100]`},
		{"x api : error(200)", `fault rule line 1 col 9: term "error(200)": error needs an HTTP status 400-599`},
		{"x api : error(abc)", `fault rule line 1 col 9: term "error(abc)": error needs an HTTP status 400-599`},
		{"x api : error(429,soon)", `fault rule line 1 col 9: term "error(429,soon)": Retry-After "soon": time: invalid duration "soon"`},
		{"x api : error", `fault rule line 1 col 9: an api error needs an HTTP status: error(500)`},
		{"x api : delay(soon)", `fault rule line 1 col 9: term "delay(soon)": delay needs a positive duration, got "soon"`},
		{"x api : delay(-1s)", `fault rule line 1 col 9: term "delay(-1s)": delay needs a positive duration, got "-1s"`},
		{"x informer resource=pods : notify-delay()", `fault rule line 1 col 28: term "notify-delay()": notify-delay needs a positive duration, got ""`},
		{"x api : reset(1)", `fault rule line 1 col 9: term "reset(1)": reset takes no argument`},
		{"x api : error(500", `fault rule line 1 col 9: term "error(500": unclosed parenthesis`},
		{"x api : drop", `fault rule line 1 col 9: action drop is not available at site api (want off, error, delay, reset)`},
		{"x api : 2*error(500)->reset->boom", `fault rule line 1 col 30: term "boom": unknown action "boom" (want off, error, delay(d), reset, drop, notify-delay(d), pause or crash)`},
		{"x disk : error(500)", `fault rule line 1 col 3: unknown site "disk" (want api, informer or point)`},
		{"x api color=red : error(500)", `fault rule line 1 col 7: match "color=red": site api takes verb=, resource=, namespace=, name=`},
		{"x api verb= : error(500)", `fault rule line 1 col 7: match "verb=": site api takes verb=, resource=, namespace=, name=`},
		{"x informer : delay(1s)", `fault rule line 1 col 3: an informer rule needs resource= (workflows, pods, workflowtaskresults, workflowactions)`},
		{"x informer resource=pods verb=get : drop", `fault rule line 1 col 26: match "verb=get": site informer takes resource=, namespace=, name=`},
		{"x informer resource=pods : delay(1s)->notify-delay(1s)",
			`fault rule line 1 col 28: an informer rule faults either the watch (delay, drop, reset) or the handlers (notify-delay), not both: use two rules`},
		{"x point : crash",
			`fault rule line 1 col 3: a point rule needs name= (after-workflow-persist, before-action-status, before-finalizer-release, during-retry-cleanup or worker)`},
		{"x point name=worker : error(500)", `fault rule line 1 col 23: a point error takes no status: error`},
		{"x point name=worker : pause", `fault rule line 1 col 23: a pause holds until its rule ends: add for=DURATION`},
		{"x api verb=get", "fault rule line 1 col 1: want `name site match... : terms`, got \"x api verb=get\""},
		{"api : error(500)", `fault rule line 1 col 1: want a name and a site (api, informer or point) before the colon`},
		{"x api :", `fault rule line 1 col 8: no terms after the colon`},
		{"x api : error(500) forever", `fault rule line 1 col 20: unknown option "forever" (want max= or for=)`},
		{"x api : error(500) for=-1m", `fault rule line 1 col 20: for="-1m" is not a positive duration`},
		{"x api : error(500) for=soon", `fault rule line 1 col 20: for="soon" is not a positive duration`},
		{"\n\n  x api : error(500) max=0", `fault rule line 3 col 22: max="0" is not a positive integer`},
		{"x api : error(500) max=x", `fault rule line 1 col 20: max="x" is not a positive integer`},
		{"x api : error(500)\nx api : error(503)", `fault rule line 2 col 1: rule name "x" is already used on line 1`},
	} {
		_, err := ParseRules(strings.NewReader(tc.text), time.Now())
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.text, err, tc.want)
		}
	}
}

func TestARulesOptionsBoundItAndItsTermsKeepTheirColumns(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rules, err := ParseRules(strings.NewReader("p point name=worker :  1*delay(1s)->pause->off  max=3 for=90s"), now)
	if err != nil {
		t.Fatal(err)
	}
	r := rules[0]
	if r.Max != 3 || !r.Until.Equal(now.Add(90*time.Second)) {
		t.Errorf("max %d until %v, want 3 and %v", r.Max, r.Until, now.Add(90*time.Second))
	}
	if want := []int{24, 37, 44}; !slices.Equal(r.termCols, want) {
		t.Errorf("term columns %v, want %v", r.termCols, want)
	}
}
