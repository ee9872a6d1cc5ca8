package fakevendor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signedInvoke posts body to the invoke path op of model, signed with the
// AWS SDK's signer for secret.
func signedInvoke(t *testing.T, base, model, op, id, secret, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/model/"+url.PathEscape(model)+"/"+op, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}, req,
		hex.EncodeToString(sum[:]), "bedrock", "us-west-2", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

const invokeModel = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

func TestBedrockInvokeWire(t *testing.T) {
	s, base := start(t, Options{ReplyChunks: 2})
	good := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":32,"system":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`

	t.Run("answers Anthropic's message and records the body", func(t *testing.T) {
		resp, b := signedInvoke(t, base, invokeModel, "invoke", "AKIAWIRE0001", "fake-secret-AKIAWIRE0001", good)
		var m anthropicMessage
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &m) != nil || m.Type != "message" || m.Usage == nil || m.Usage.OutputTokens != 2 ||
			!strings.HasPrefix(m.ID, "msg_bdrk_") || !strings.Contains(*m.Content[0].Text, invokeModel) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if last, _ := s.LastRequest(invokeModel); string(last.Body) != good || last.Key != "AKIAWIRE0001" {
			t.Fatalf("recorded %s for %s", last.Body, last.Key)
		}
	})

	t.Run("streams chunk events of Anthropic events", func(t *testing.T) {
		resp, b := signedInvoke(t, base, invokeModel, "invoke-with-response-stream", "AKIAWIRE0001", "fake-secret-AKIAWIRE0001", good)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		dec := eventstream.NewDecoder()
		rd := bytes.NewReader(b)
		var types []string
		for {
			msg, err := dec.Decode(rd, nil)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if v := msg.Headers.Get(":event-type"); v == nil || v.String() != "chunk" {
				t.Fatalf("event type %v", v)
			}
			var c struct{ Bytes string }
			_ = json.Unmarshal(msg.Payload, &c)
			ev, err := base64.StdEncoding.DecodeString(c.Bytes)
			var e struct {
				Type    string          `json:"type"`
				Metrics json.RawMessage `json:"amazon-bedrock-invocationMetrics"`
			}
			if err != nil || json.Unmarshal(ev, &e) != nil {
				t.Fatalf("chunk %s", msg.Payload)
			}
			if e.Type == "message_stop" && len(e.Metrics) == 0 {
				t.Errorf("message_stop without Bedrock's invocation metrics: %s", ev)
			}
			types = append(types, e.Type)
		}
		want := "message_start content_block_start ping content_block_delta content_block_delta content_block_stop message_delta message_stop"
		if got := strings.Join(types, " "); got != want {
			t.Fatalf("events %s", got)
		}
	})

	for name, tc := range map[string]struct {
		body, secret string
		status       int
		exception    string
	}{
		"model in the body":        {strings.Replace(good, `{`, `{"model":"claude",`, 1), "fake-secret-AKIAWIRE0001", 400, "ValidationException"},
		"stream in the body":       {strings.Replace(good, `{`, `{"stream":true,`, 1), "fake-secret-AKIAWIRE0001", 400, "ValidationException"},
		"no anthropic_version":     {strings.Replace(good, `"anthropic_version":"bedrock-2023-05-31",`, ``, 1), "fake-secret-AKIAWIRE0001", 400, "ValidationException"},
		"Anthropic's own version":  {strings.Replace(good, `bedrock-2023-05-31`, `2023-06-01`, 1), "fake-secret-AKIAWIRE0001", 400, "ValidationException"},
		"no max_tokens":            {strings.Replace(good, `"max_tokens":32,`, ``, 1), "fake-secret-AKIAWIRE0001", 400, "ValidationException"},
		"a wrong secret's signing": {good, "not-the-secret", 403, "InvalidSignatureException"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, b := signedInvoke(t, base, invokeModel, "invoke", "AKIAWIRE0001", tc.secret, tc.body)
			if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), tc.exception+":") {
				t.Fatalf("%d %s %s", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), b)
			}
		})
	}
}
