package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestOnboardingSandboxToFirstAnswer is issue 8's acceptance: from an empty
// database a new operator logs in, completes the wizard with the sandbox
// provider, copies the caller key, and the official OpenAI Go SDK asks for
// "standard" and gets an answer. It counts the operator's interactions.
func TestOnboardingSandboxToFirstAnswer(t *testing.T) {
	s := startServer(t, "")
	began := time.Now()
	u := &ui{t: t, p: newPage(t), base: s.URL}
	u.login("admin", s.Admin)

	// The empty console leads to the wizard.
	if !strings.HasSuffix(u.p.URL(), "/onboarding") {
		t.Fatalf("an empty console should lead to onboarding, landed on %s", u.p.URL())
	}
	u.see(u.id("sandbox-badge"), "the sandbox is labelled")
	u.click(u.id("template-sandbox"), "choose the sandbox template")
	u.see(u.id("sandbox-notice"), "sandbox notice on the form")
	u.click(u.id("review"), "review")
	u.see(u.id("dryrun-ok"), "the dry-run of the plan passes")
	u.click(u.id("create-publish"), "create and publish")
	u.see(u.id("published-version"), "published")
	u.click(u.id("copy-caller-key"), "copy the caller key")
	copied, err := u.p.Evaluate(`() => navigator.clipboard.readText()`)
	u.must(err, "read the clipboard")
	key := strings.TrimSpace(copied.(string))
	if !strings.HasPrefix(key, "sy-") {
		t.Fatalf("clipboard holds %q", key)
	}
	interactions, elapsed := u.actions, time.Since(began)

	// The copied key works with the official SDK through the gateway.
	client := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "standard",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello from a new team")},
	})
	if err != nil {
		t.Fatalf("first routed answer: %v", err)
	}
	if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == "" {
		t.Fatalf("empty answer: %+v", resp)
	}
	if interactions > 15 {
		t.Fatalf("onboarding took %d interactions; the target is 15 or fewer", interactions)
	}
	t.Logf("empty install → first routed answer: %d operator interactions, %v in the browser (%v including the SDK call)",
		interactions, elapsed.Round(10*time.Millisecond), time.Since(began).Round(10*time.Millisecond))
}
