package cronworkflow

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestRunFailsClearlyWithoutTheCRD(t *testing.T) {
	// An API server that serves no cronworkflows resource answers 404 to every request for it.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}`))
	}))
	defer server.Close()
	r, err := New(&rest.Config{Host: server.URL}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "the cronworkflows.argoproj.io CRD is not installed: kubectl apply -k config/crd") {
		t.Fatalf("Run = %v, want the missing CRD named", err)
	}
}
