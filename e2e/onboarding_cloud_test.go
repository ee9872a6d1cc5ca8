package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestOnboardingAzureAndBedrock onboards an Azure OpenAI provider (an
// api-key and Entra ID client credentials) and an AWS Bedrock provider
// (an access key, signed for the region the operator typed) through the
// console's wizard against the fake vendor, sees their settings on the
// provider list, and gets an answer through each: a chat completion from
// the Azure deployment and a Messages answer from Claude on Bedrock.
func TestOnboardingAzureAndBedrock(t *testing.T) {
	s := startServer(t, "")
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	// Azure OpenAI: the template pre-fills the api-version.
	u.goto_("/onboarding")
	u.click(u.id("template-azure-openai"), "choose the Azure OpenAI template")
	if v, err := u.id("api-version").InputValue(); err != nil || v != "2024-10-21" {
		t.Fatalf("api-version pre-filled with %q (%v)", v, err)
	}
	u.fill(u.id("base-url"), s.FakeURL, "the resource endpoint")
	u.fill(u.id("auth-url"), s.FakeURL, "the Entra authority")
	u.fill(u.id("key-input-0"), "azure-key-e2e-0001", "an api-key")
	u.fill(u.id("key-input-1"), "entra:tenant-e2e:client-e2e:client-secret-e2e-01", "Entra client credentials")
	u.click(u.id("verify-keys"), "verify the keys")
	for _, i := range []string{"0", "1"} {
		u.see(u.id("verify-result-"+i), "verdict "+i)
		if got := u.text(u.id("verify-result-"+i), "verdict"); !strings.HasPrefix(got, "reachable") {
			t.Fatalf("Azure key %s verified as %q", i, got)
		}
	}
	u.click(u.id("review"), "review")
	if got := u.text(u.id("review-api-version"), "api-version"); got != "2024-10-21" {
		t.Fatalf("review shows api-version %q", got)
	}
	u.see(u.id("dryrun-ok"), "the dry-run of the Azure plan passes")
	u.click(u.id("create-publish"), "create and publish")
	u.see(u.id("published-version"), "published")
	key := strings.TrimSpace(u.text(u.id("caller-key"), "the caller key"))

	client := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "standard",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello azure")}})
	if err != nil {
		t.Fatalf("answer through Azure: %v", err)
	}
	if !strings.Contains(resp.Choices[0].Message.Content, "gpt-4.1") {
		t.Fatalf("not the Azure deployment's answer: %q", resp.Choices[0].Message.Content)
	}

	// AWS Bedrock: the operator signs for another region than the template's.
	u.goto_("/onboarding")
	u.click(u.id("template-aws-bedrock"), "choose the AWS Bedrock template")
	if v, err := u.id("region").InputValue(); err != nil || v != "us-east-1" {
		t.Fatalf("region pre-filled with %q (%v)", v, err)
	}
	u.fill(u.id("base-url"), s.FakeURL, "the runtime endpoint")
	u.fill(u.id("region"), "eu-west-1", "the region")
	u.fill(u.id("key-input-0"), "AKIAE2EONBOARD1:fake-secret-AKIAE2EONBOARD1", "an AWS access key")
	u.click(u.id("verify-keys"), "verify the key")
	u.see(u.id("verify-result-0"), "verdict")
	if got := u.text(u.id("verify-result-0"), "verdict"); !strings.HasPrefix(got, "reachable") {
		t.Fatalf("AWS key verified as %q", got)
	}
	u.click(u.id("review"), "review")
	if got := u.text(u.id("review-region"), "region"); got != "eu-west-1" {
		t.Fatalf("review shows region %q", got)
	}
	u.see(u.id("dryrun-ok"), "the dry-run of the Bedrock plan passes")
	u.click(u.id("create-publish"), "create and publish")
	u.see(u.id("published-version"), "published")

	// The provider list shows each cloud provider's settings.
	u.goto_("/providers")
	for provider, want := range map[string]string{
		"azure-openai": "api-version 2024-10-21 · Entra authority " + s.FakeURL + " · auth api-key and Entra ID client credentials",
		"aws-bedrock":  "region eu-west-1 · auth AWS access keys",
	} {
		loc := u.id("provider-" + provider).GetByTestId("provider-cloud")
		u.see(loc, provider+"'s settings")
		if got := u.text(loc, provider+"'s settings"); got != want {
			t.Errorf("%s shows %q, want %q", provider, got, want)
		}
	}

	// Claude on Bedrock answers a Messages caller by the invoke path, signed
	// for eu-west-1 (the fake vendor checks the signature).
	var answer struct {
		Type    string `json:"type"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":100,"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hello bedrock"}]}`))
		req.Header.Set("x-api-key", key)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("content-type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &answer); err != nil {
				t.Fatalf("answer %s: %v", body, err)
			}
			break
		}
		if time.Now().After(deadline) { // the published version reaches the data plane within the reload interval
			t.Fatalf("answer through Bedrock: %d %s", res.StatusCode, body)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if answer.Type != "message" || len(answer.Content) == 0 || !strings.Contains(answer.Content[0].Text, "anthropic.claude-sonnet-4-5") || answer.Usage.OutputTokens == 0 {
		t.Fatalf("not Claude on Bedrock's answer: %+v", answer)
	}
	res, err := http.Get(s.FakeURL + "/_fake/last?model=" + url.QueryEscape("global.anthropic.claude-sonnet-4-5-20250929-v1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var last struct {
		Path   string      `json:"path"`
		Header http.Header `json:"header"`
		Body   []byte      `json:"body"`
	}
	if err := json.NewDecoder(res.Body).Decode(&last); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(last.Path, "/invoke") || !strings.Contains(last.Header.Get("Authorization"), "/eu-west-1/bedrock/aws4_request") ||
		!strings.Contains(string(last.Body), `"cache_control":{"type":"ephemeral"}`) {
		t.Fatalf("Bedrock got %s signed %q with %s", last.Path, last.Header.Get("Authorization"), last.Body)
	}
}
