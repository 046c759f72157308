package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/wfguard/wfguard/internal/apierror"
)

func TestAWorkflowUpdateSendsItsBodyOnceAndReadsOnlyTheAnswersIdentity(t *testing.T) {
	status := func(code int, reason metav1.StatusReason, message string) string {
		data, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: int32(code), Reason: reason, Message: message})
		return string(data)
	}
	stored := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","metadata":{"name":"wf","namespace":"ns","uid":"u-1","resourceVersion":"42"}}`
	for _, tc := range []struct {
		sentence string
		code     int
		answer   string
		check    func(t *testing.T, w storedWrite, err error)
	}{
		{"a stored write gives its uid and resourceVersion and keeps the answer as it came", 200, stored, func(t *testing.T, w storedWrite, err error) {
			if err != nil || w.uid != "u-1" || w.resourceVersion != "42" || w.key != "ns/wf" || string(w.object) != stored {
				t.Errorf("got %+v, %v", w, err)
			}
		}},
		{"a conflict is a conflict", 409, status(409, metav1.StatusReasonConflict, "the object has been modified"), func(t *testing.T, _ storedWrite, err error) {
			if !apierrors.IsConflict(err) {
				t.Errorf("err = %v, want a conflict", err)
			}
		}},
		{"an invalid object is refused for good, with the API server's message", 422, status(422, metav1.StatusReasonInvalid, "status.phase: Unsupported value"), func(t *testing.T, _ storedWrite, err error) {
			if kind, refused := apierror.Refused(err); !refused || kind != apierror.Invalid || !apierrors.IsInvalid(err) {
				t.Errorf("err = %v: refused %t as %q, want invalid", err, refused, kind)
			}
		}},
		{"etcd's size limit is refused for good as too large", 500, status(500, metav1.StatusReasonInternalError, "etcdserver: request is too large"), func(t *testing.T, _ storedWrite, err error) {
			if kind, refused := apierror.Refused(err); !refused || kind != apierror.TooLarge {
				t.Errorf("err = %v: refused %t as %q, want too large", err, refused, kind)
			}
		}},
		{"an answer that does not decode is an error, not an empty write", 200, `{"metadata":`, func(t *testing.T, w storedWrite, err error) {
			if err == nil || w.resourceVersion != "" {
				t.Errorf("got %+v, %v; want an error", w, err)
			}
		}},
		{"an answer without a resourceVersion is an error", 200, `{"metadata":{"uid":"u-1"}}`, func(t *testing.T, _ storedWrite, err error) {
			if err == nil {
				t.Error("want an error")
			}
		}},
	} {
		t.Run(tc.sentence, func(t *testing.T) {
			body := []byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Workflow","metadata":{"name":"wf","namespace":"ns","resourceVersion":"41"}}`)
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ := io.ReadAll(r.Body)
				if r.Method != http.MethodPut || r.URL.Path != "/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/wf" ||
					r.URL.Query().Get("fieldManager") != updateOptions.FieldManager || string(got) != string(body) ||
					r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Accept") != "application/json" {
					t.Errorf("request %s %s, Content-Type %q, Accept %q, body %q", r.Method, r.URL, r.Header.Get("Content-Type"), r.Header.Get("Accept"), got)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				_, _ = io.WriteString(w, tc.answer)
			}))
			defer server.Close()
			client, err := dynamicRESTClient(&rest.Config{Host: server.URL})
			if err != nil {
				t.Fatal(err)
			}
			c := &Controller{workflowsREST: client}
			u := &unstructured.Unstructured{}
			u.SetNamespace("ns")
			u.SetName("wf")
			w, err := c.putWorkflow(t.Context(), u, body)
			tc.check(t, w, err)
		})
	}
}
