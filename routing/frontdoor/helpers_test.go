package frontdoor

import (
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/e2e/fakevendor"
	"switchyard/routing/adapter"
)

// The vendors' captures live with the adapters (routing/adapter/testdata);
// the front doors' tests read the same files.
func vendorFixture(t *testing.T, vendor, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "adapter", "testdata", vendor, name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

var _ = flag.Bool("update", false, "rewrite the manual's field tables (static/manual)")

// updateManual reports go test -update: rewrite the manual's field tables.
func updateManual() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func fakeVendor(t *testing.T, f fakevendor.Fault) string {
	t.Helper()
	srv := httptest.NewServer(fakevendor.New(fakevendor.Options{ReplyChunks: 3, Dimension: 8, Fault: f}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func asError(t testing.TB, err error) *adapter.Error {
	t.Helper()
	var e *adapter.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v (%T) is not an *adapter.Error", err, err)
	}
	return e
}

// chatResult is what the OpenAI adapter makes of a vendor's chat.completion.
func chatResult(t *testing.T, chat []byte) *adapter.ChatResult {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(chat)
	}))
	defer srv.Close()
	r, err := ParseChatRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := adapter.OpenAI{}.Chat(t.Context(), adapter.Target{BaseURL: srv.URL, APIKey: "k", UpstreamModel: "m"}, r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// chunkUsage reads a chat chunk's usage object.
func chunkUsage(v gjson.Result) adapter.Usage {
	p, c := v.Get("prompt_tokens"), v.Get("completion_tokens")
	return adapter.Usage{Prompt: p.Int(), Completion: c.Int(), Known: p.Exists() && c.Exists()}
}
