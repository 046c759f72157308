package faultinject

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiServer answers every request with an empty object of the right shape.
func apiServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "leases") {
			_, _ = w.Write([]byte(`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"l"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func clientFor(t *testing.T, s *httptest.Server, in *Injector) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: s.URL, WrapTransport: in.WrapTransport, QPS: 1000, Burst: 1000})
}

func mustRules(t *testing.T, text string) []*Rule {
	t.Helper()
	rules, err := ParseRules(strings.NewReader(text), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func TestTermsAreWalkedInOrderThenTurnOff(t *testing.T) {
	in := NewInjector(mustRules(t, "three-500s api verb=create resource=pods : 3*error(500)->off"), 1, nil)
	kube := clientFor(t, apiServer(t), in)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	for i := range 3 {
		_, err := kube.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "injected fault: 500") {
			t.Fatalf("call %d: err = %v, want an injected 500 with a Status body", i, err)
		}
	}
	if _, err := kube.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the fourth call should pass (term off): %v", err)
	}
	if _, err := kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("a get does not match verb=create: %v", err)
	}
	j := in.Journal()
	if len(j) != 3 || j[0].Rule != "three-500s" || j[0].Key != "create pods ns/" || j[0].Action.Code != 500 {
		t.Errorf("journal = %+v, want three create-pods 500s", j)
	}
}

func TestEachFaultKindLooksLikeTheRealThing(t *testing.T) {
	s := apiServer(t)
	cases := []struct {
		name  string
		rule  string
		check func(t *testing.T, err error)
	}{
		{"409 is a Conflict", "c api resource=pods : error(409)", func(t *testing.T, err error) {
			if !apierrors.IsConflict(err) {
				t.Errorf("err = %v, want Conflict", err)
			}
		}},
		{"429 without Retry-After is TooManyRequests", "c api resource=pods : error(429)", func(t *testing.T, err error) {
			if !apierrors.IsTooManyRequests(err) {
				t.Errorf("err = %v, want TooManyRequests", err)
			}
		}},
		{"503 is ServiceUnavailable", "c api resource=pods : error(503)", func(t *testing.T, err error) {
			if !apierrors.IsServiceUnavailable(err) {
				t.Errorf("err = %v, want ServiceUnavailable", err)
			}
		}},
		{"reset is a connection error", "c api resource=pods : reset", func(t *testing.T, err error) {
			if err == nil || !errors.Is(err, errReset) && !strings.Contains(err.Error(), "connection reset") {
				t.Errorf("err = %v, want a connection reset", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := NewInjector(mustRules(t, tc.rule), 1, nil)
			// A create, because client-go retries a GET whose connection was reset (for ten seconds).
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			_, err := clientFor(t, s, in).CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{})
			tc.check(t, err)
		})
	}
}

func TestA429WithRetryAfterCarriesTheHeader(t *testing.T) {
	in := NewInjector(mustRules(t, "r api resource=pods : error(429,2s)"), 1, nil)
	rt := in.WrapTransport(http.DefaultTransport)
	req, _ := http.NewRequest(http.MethodGet, apiServer(t).URL+"/api/v1/namespaces/ns/pods/p", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("status %d Retry-After %q, want 429 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestLeasesAreExemptUnlessARuleNamesThem(t *testing.T) {
	s := apiServer(t)
	all := NewInjector(mustRules(t, "everything api : error(500)"), 1, nil)
	if _, err := clientFor(t, s, all).CoordinationV1().Leases("ns").Get(context.Background(), "l", metav1.GetOptions{}); err != nil {
		t.Errorf("a catch-all rule broke leader election: %v", err)
	}
	named := NewInjector(mustRules(t, "leases api resource=leases : error(500)"), 1, nil)
	if _, err := clientFor(t, s, named).CoordinationV1().Leases("ns").Get(context.Background(), "l", metav1.GetOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("a rule naming leases did not apply: %v", err)
	}
}

func TestPercentagesFollowTheSeed(t *testing.T) {
	draw := func(seed uint64) []bool {
		in := NewInjector(mustRules(t, "half api : 50%error(500)"), seed, nil)
		var out []bool
		for range 40 {
			_, _, ok := in.decide(SiteAPI, "", map[string]string{"verb": "get", "resource": "pods"}, nil)
			out = append(out, ok)
		}
		return out
	}
	a, b := draw(42), draw(42)
	fired := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("the same seed fired differently at call %d", i)
		}
		if a[i] {
			fired++
		}
	}
	if fired == 0 || fired == 40 {
		t.Errorf("50%% fired %d of 40 times", fired)
	}
}

func TestMaxAndExpiryBoundARule(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rules, err := ParseRules(strings.NewReader("bounded api : error(500) max=2\nbrief api verb=list : error(503) for=1m"), now)
	if err != nil {
		t.Fatal(err)
	}
	in := NewInjector(rules, 1, nil)
	fired := 0
	for range 5 {
		if _, _, ok := in.decide(SiteAPI, "", map[string]string{"verb": "get"}, nil); ok {
			fired++
		}
	}
	if fired != 2 {
		t.Errorf("max=2 fired %d times", fired)
	}
	if rules[1].Until != now.Add(time.Minute) {
		t.Errorf("for=1m ends at %v", rules[1].Until)
	}
}
