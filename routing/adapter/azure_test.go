package adapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"switchyard/e2e/fakevendor"
)

// The Azure adapter against the fake vendor's Azure wire: deployment paths
// with api-version, the api-key header, Entra ID tokens (cached, refreshed
// before expiry, fetched anew when refused), the content filter and 429's
// retry-after-ms.

func azureFake(t *testing.T, opts fakevendor.Options) (*fakevendor.Server, string) {
	t.Helper()
	fv := fakevendor.New(opts)
	srv := httptest.NewServer(fv)
	t.Cleanup(srv.Close)
	return fv, srv.URL
}

func azureTarget(url, key string) Target {
	return Target{BaseURL: url + "/", APIKey: key, UpstreamModel: "gpt4o-prod", APIVersion: "2024-10-21"}
}

func TestAzureChatUsesDeploymentPathAndAPIKey(t *testing.T) {
	fv, url := azureFake(t, fakevendor.Options{ReplyChunks: 2})
	res, err := NewAzure().Chat(context.Background(), azureTarget(url, "azure-key-0001"), azureAsk())
	if err != nil {
		t.Fatal(err)
	}
	var c vtCompletion
	if err := json.Unmarshal(res.Body, &c); err != nil {
		t.Fatal(err)
	}
	if got := *c.Choices[0].Message.Content; got != "Hello from gpt4o-prod. Hello from gpt4o-prod." || !res.Usage.Known {
		t.Errorf("answer %q usage %+v", got, res.Usage)
	}
	last, _ := fv.LastRequest("gpt4o-prod")
	if last.Path != "/openai/deployments/gpt4o-prod/chat/completions" || last.RawQuery != "api-version=2024-10-21" {
		t.Errorf("upstream %s?%s", last.Path, last.RawQuery)
	}
	if last.Header.Get("Api-Key") != "azure-key-0001" || strings.Contains(last.Header.Get("Authorization"), "azure-key-0001") && last.Header.Get("Api-Key") == "" {
		t.Errorf("credential headers %v", last.Header)
	}
}

func TestAzureStreamAndEmbeddings(t *testing.T) {
	_, url := azureFake(t, fakevendor.Options{ReplyChunks: 3, Dimension: 4})
	a := NewAzure()
	s, err := a.ChatStream(context.Background(), azureTarget(url, "azure-key-0001"), azureAsk())
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := vendorCollect(t, s)
	if (err != nil && err != io.EOF) || len(chunks) < 3 || !s.Usage().Known {
		t.Fatalf("stream: %d chunks, err %v, usage %+v", len(chunks), err, s.Usage())
	}
	e, err := a.Embed(context.Background(), azureTarget(url, "azure-key-0001"), &EmbedRequest{Inputs: []string{"a", "b"}})
	if err != nil || len(e.Vectors) != 2 || len(e.Vectors[0]) != 4 {
		t.Fatalf("embed: %+v %v", e, err)
	}
}

func TestAzureEntraTokensAreCachedAndRefreshedBeforeExpiry(t *testing.T) {
	fv, url := azureFake(t, fakevendor.Options{ReplyChunks: 1, EntraTokenTTL: 2 * time.Second})
	a := NewAzure()
	a.tokens.RefreshBefore = time.Second
	tg := azureTarget(url, "entra:tenant-1:client-1:s3cret-value-xyz")
	tg.AuthURL = url
	ask := azureAsk()
	for i := range 3 {
		if _, err := a.Chat(context.Background(), tg, ask); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := fv.EntraTokensIssued(); n != 1 {
		t.Fatalf("3 calls within a token's life fetched %d tokens, want 1", n)
	}
	time.Sleep(1100 * time.Millisecond) // inside RefreshBefore of the 2 s token
	if _, err := a.Chat(context.Background(), tg, ask); err != nil {
		t.Fatalf("call after refresh window: %v", err)
	}
	if n := fv.EntraTokensIssued(); n != 2 {
		t.Fatalf("tokens issued %d, want a refresh before expiry", n)
	}
	if last, _ := fv.LastRequest("gpt4o-prod"); last.Key != "entra:client-1" {
		t.Errorf("fake saw key %q", last.Key)
	}
}

func TestAzureEntraExpiredTokenIsFetchedAnew(t *testing.T) {
	fv, url := azureFake(t, fakevendor.Options{ReplyChunks: 1, EntraTokenTTL: time.Second})
	a := NewAzure()
	a.tokens.RefreshBefore = time.Nanosecond // keep the token to its very end
	tg := azureTarget(url, "entra:tenant-1:client-1:s3cret-value-xyz")
	tg.AuthURL = url
	ask := azureAsk()
	if _, err := a.Chat(context.Background(), tg, ask); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the fake now refuses the token as expired
	if _, err := a.Chat(context.Background(), tg, ask); err != nil {
		t.Fatalf("an expired token failed the call: %v", err)
	}
	if n := fv.EntraTokensIssued(); n < 2 {
		t.Fatalf("tokens issued %d, want a new one", n)
	}
}

func TestAzureFailuresAreClassified(t *testing.T) {
	ask := azureAsk()
	t.Run("refused client secret quarantines without leaking it", func(t *testing.T) {
		_, url := azureFake(t, fakevendor.Options{})
		tg := azureTarget(url, "entra:tenant-1:client-1:bad-secret-value-xyz")
		tg.AuthURL = url
		_, err := NewAzure().Chat(context.Background(), tg, ask)
		e := openaiAsError(t, err)
		if e.Class != ClassAuth || strings.Contains(e.Error(), "bad-secret-value-xyz") {
			t.Errorf("got %v", e)
		}
	})
	t.Run("429 honours retry-after-ms", func(t *testing.T) {
		_, url := azureFake(t, fakevendor.Options{})
		tg := azureTarget(url, "azure-key-0001")
		tg.Header = http.Header{fakevendor.HeaderStatus: {"429"}, fakevendor.HeaderRetryAfter: {"1500ms"}}
		_, err := NewAzure().Chat(context.Background(), tg, ask)
		e := openaiAsError(t, err)
		if e.Class != ClassRateLimited || e.RetryAfter != 1500*time.Millisecond {
			t.Errorf("got %v retry after %v", e, e.RetryAfter)
		}
	})
	t.Run("content filter finish", func(t *testing.T) {
		_, url := azureFake(t, fakevendor.Options{Fault: fakevendor.Fault{ContentFilter: true}})
		_, err := NewAzure().Chat(context.Background(), azureTarget(url, "azure-key-0001"), ask)
		if e := openaiAsError(t, err); e.Class != ClassContentFilter {
			t.Errorf("got %v", e)
		}
	})
	t.Run("prompt filtered 400", func(t *testing.T) {
		_, url := azureFake(t, fakevendor.Options{Fault: fakevendor.Fault{Status: 400, ErrorCode: "content_filter"}})
		_, err := NewAzure().Chat(context.Background(), azureTarget(url, "azure-key-0001"), ask)
		if e := openaiAsError(t, err); e.Class != ClassContentFilter {
			t.Errorf("got %v", e)
		}
	})
	t.Run("missing api-version", func(t *testing.T) {
		_, url := azureFake(t, fakevendor.Options{})
		tg := azureTarget(url, "azure-key-0001")
		tg.APIVersion = ""
		_, err := NewAzure().Chat(context.Background(), tg, ask)
		if e := openaiAsError(t, err); e.Status != 404 {
			t.Errorf("got %v", e)
		}
	})
}

func azureAsk() *ChatRequest {
	return &ChatRequest{Body: []byte(`{"model":"fast","messages":[{"role":"user","content":"hi"}]}`),
		Messages: []Message{{Role: "user", Content: vtText("hi")}}}
}
