package fakevendor

// AWS Bedrock's Converse and Anthropic-native invoke wires, with requests
// that must carry a valid AWS Signature V4 (recomputed here with the AWS
// SDK's signer and compared):
//
//	POST /model/MODEL_ID/converse          a Converse answer (JSON)
//	POST /model/MODEL_ID/converse-stream   ConverseStream in the AWS binary
//	                                       event-stream encoding (the SDK's encoder)
//	POST /model/MODEL_ID/invoke            an Anthropic Messages body (with
//	                                       anthropic_version, without model and
//	                                       stream) → Anthropic's message (JSON)
//	POST /model/MODEL_ID/invoke-with-response-stream
//	                                       the same → chunk events whose bytes
//	                                       are base64 Anthropic stream events
//
// The secret of an access key id is Options.AWSSecrets[id], else
// "fake-secret-" + id. A wrong signature is 403 InvalidSignatureException, an
// access key id starting with "bad" 403 UnrecognizedClientException, a
// session token starting with "expired" 403 ExpiredTokenException. The
// request's key (counters, rules) is the access key id. Faults: Status 429
// is ThrottlingException, 503 ServiceUnavailableException, 400
// ValidationException, 403 AccessDeniedException (ErrorCode names another);
// ContentFilter ends with stopReason guardrail_intervened; ErrorAfterChunks
// sends an exception event (ErrorCode, default modelStreamErrorException)
// in the middle of the stream.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

func (s *Server) awsSecret(id string) string {
	if v, ok := s.opts.AWSSecrets[id]; ok {
		return v
	}
	return "fake-secret-" + id
}

// bedrockSigned checks r's SigV4 signature and returns its access key id,
// or the exception that refuses it.
func (s *Server) bedrockSigned(r *http.Request, body []byte) (string, string, string) {
	auth := r.Header.Get("Authorization")
	cred := between(auth, "Credential=", ",")
	signed := between(auth, "SignedHeaders=", ",")
	parts := strings.Split(cred, "/")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || len(parts) != 5 || signed == "" {
		return "", "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	id, region, service := parts[0], parts[2], parts[3]
	if strings.HasPrefix(id, "bad") {
		return id, "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	if strings.HasPrefix(r.Header.Get("X-Amz-Security-Token"), "expired") {
		return id, "ExpiredTokenException", "The security token included in the request is expired"
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || time.Since(at).Abs() > 15*time.Minute {
		return id, "InvalidSignatureException", "Signature expired or X-Amz-Date missing"
	}
	clone := r.Clone(context.Background())
	clone.Header = http.Header{}
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "x-amz-date" && h != "authorization" {
			clone.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: id, SecretAccessKey: s.awsSecret(id), SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, clone, hex.EncodeToString(sum[:]), service, region, at); err != nil ||
		between(clone.Header.Get("Authorization")+",", "Signature=", ",") != between(auth+",", "Signature=", ",") {
		return id, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
	}
	return id, "", ""
}

// between is the text of s after start up to end (or s's end).
func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return strings.TrimSpace(v)
}

// bedrockException writes Bedrock's error answer.
func bedrockException(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("X-Amzn-Errortype", name+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.Header().Set("X-Amzn-Requestid", "fake-bedrock-request")
	b, _ := json.Marshal(map[string]string{"message": msg})
	writeJSON(w, status, b)
}

var bedrockStatusException = map[int]string{
	http.StatusTooManyRequests: "ThrottlingException", http.StatusServiceUnavailable: "ServiceUnavailableException",
	http.StatusBadRequest: "ValidationException", http.StatusForbidden: "AccessDeniedException",
	http.StatusNotFound: "ResourceNotFoundException", http.StatusRequestTimeout: "ModelTimeoutException",
}

// converseIn is the part of a Converse request the fake reads.
type converseIn struct {
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Text       string `json:"text"`
			ToolResult *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"toolResult"`
		} `json:"content"`
	} `json:"messages"`
	System          []struct{ Text string } `json:"system"`
	InferenceConfig struct {
		MaxTokens int `json:"maxTokens"`
	} `json:"inferenceConfig"`
	ToolConfig struct {
		Tools []struct {
			ToolSpec struct{ Name string } `json:"toolSpec"`
		} `json:"tools"`
	} `json:"toolConfig"`
}

func (in *converseIn) intent() (intent, int) {
	var turns []turn
	n := 0
	for _, m := range in.Messages {
		t := turn{model: m.Role == "assistant"}
		var words []string
		for _, b := range m.Content {
			n += len(b.Text)
			if b.ToolResult != nil {
				var rs []string
				for _, c := range b.ToolResult.Content {
					rs = append(rs, c.Text)
				}
				t.results = append(t.results, strings.Join(rs, "\n"))
			} else if b.Text != "" {
				words = append(words, b.Text)
			}
		}
		if !t.model {
			t.text = userWords(words)
		}
		turns = append(turns, t)
	}
	for _, sys := range in.System {
		n += len(sys.Text)
	}
	var tools []offered
	for _, t := range in.ToolConfig.Tools {
		tools = append(tools, offered{name: t.ToolSpec.Name})
	}
	return decide(turns, tools), n
}

// routeBedrock serves /model/MODEL_ID/converse[-stream].
func (s *Server) routeBedrock(w http.ResponseWriter, r *http.Request, path string) {
	rest := strings.TrimPrefix(path, "/model/")
	i := strings.LastIndexByte(rest, '/')
	if r.Method != http.MethodPost || i <= 0 {
		bedrockException(w, http.StatusNotFound, "UnknownOperationException", "no route for "+path)
		return
	}
	model, op := rest[:i], rest[i+1:]
	switch op {
	case "converse", "converse-stream", "invoke", "invoke-with-response-stream":
	default:
		bedrockException(w, http.StatusNotFound, "UnknownOperationException", "no route for "+path)
		return
	}
	body, err := readBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		bedrockException(w, http.StatusBadRequest, "ValidationException", "could not read the body")
		return
	}
	key, exc, msg := s.bedrockSigned(r, body)
	c := &call{s: s, w: w, r: r, proto: protoOpenAI, model: model, key: key, body: body, seq: s.seq.Add(1)}
	c.ctrs = s.stats.begin(c.proto, model, key)
	s.stats.last.Store(model, &Request{Protocol: "bedrock", Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Key: key, Header: r.Header, Body: body})
	if exc != "" {
		c.record(http.StatusForbidden)
		bedrockException(w, http.StatusForbidden, exc, msg)
		return
	}
	f, ferr := s.faultFor(model, key, r.Header)
	c.fault = f
	if !sleep(r.Context(), f.Latency) {
		c.record(StatusClientGone)
		return
	}
	it, promptBytes, maxTokens, bad := bedrockIntent(op, body)
	switch {
	case ferr != nil || bad != "":
		if bad == "" {
			bad = "Malformed input request, please reformat your input and try again."
		}
		c.record(http.StatusBadRequest)
		bedrockException(w, http.StatusBadRequest, "ValidationException", bad)
		return
	case f.Status >= 400:
		name := bedrockStatusException[f.Status]
		if f.ErrorCode != "" {
			name = f.ErrorCode
		} else if name == "" {
			name = "InternalServerException"
		}
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", retryAfterSeconds(f.RetryAfter))
		}
		c.record(f.Status)
		bedrockException(w, f.Status, name, "injected "+name)
		return
	}
	rp := c.plan(model, promptBytes, maxTokens, it)
	switch op {
	case "converse-stream":
		s.converseStream(c, rp)
	case "converse":
		c.writeJSON(http.StatusOK, converseAnswer(c, rp))
	case "invoke-with-response-stream":
		s.invokeStream(c, rp)
	default:
		c.writeJSON(http.StatusOK, invokeAnswer(c, rp))
	}
}

// bedrockIntent reads a request of op (Converse's body, or the invoke
// path's Anthropic body); bad is the ValidationException's message when
// Bedrock would refuse it.
func bedrockIntent(op string, body []byte) (it intent, promptBytes, maxTokens int, bad string) {
	if op == "converse" || op == "converse-stream" {
		var in converseIn
		if json.Unmarshal(body, &in) != nil || len(in.Messages) == 0 {
			return it, 0, 0, "Malformed input request, please reformat your input and try again."
		}
		it, promptBytes = in.intent()
		return it, promptBytes, in.InferenceConfig.MaxTokens, ""
	}
	return invokeIntent(body)
}

func converseStop(rp reply) string {
	switch rp.finish {
	case finishTool:
		return "tool_use"
	case finishLength:
		return "max_tokens"
	case finishFilter:
		return "guardrail_intervened"
	}
	return "end_turn"
}

func converseUsageOf(rp reply, noUsage bool) map[string]any {
	if noUsage {
		return nil
	}
	return map[string]any{"inputTokens": rp.prompt - rp.cached, "outputTokens": rp.completion(), "totalTokens": rp.prompt + rp.completion(),
		"cacheReadInputTokens": rp.cached, "cacheWriteInputTokens": 0}
}

func converseAnswer(c *call, rp reply) []byte {
	var content []any
	if rp.tool != "" {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_" + c.requestID(), "name": rp.tool, "input": json.RawMessage(rp.toolArgs())}})
	} else if t := rp.fullText(); t != "" {
		content = append(content, map[string]any{"text": t})
	}
	b, _ := json.Marshal(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": converseStop(rp), "usage": converseUsageOf(rp, c.fault.NoUsage), "metrics": map[string]any{"latencyMs": 12},
	})
	return b
}

// converseStream writes the ConverseStream events.
func (s *Server) converseStream(c *call, rp reply) {
	w := c.w
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Requestid", "fake-bedrock-request")
	c.writeHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	var buf bytes.Buffer
	send := func(headers eventstream.Headers, payload any) bool {
		b, _ := json.Marshal(payload)
		buf.Reset()
		if err := enc.Encode(&buf, eventstream.Message{Headers: headers, Payload: b}); err != nil {
			return false
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return true
	}
	event := func(name string, payload any) bool {
		return send(eventstream.Headers{
			{Name: ":event-type", Value: eventstream.StringValue(name)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
		}, payload)
	}
	if !sleep(c.r.Context(), c.fault.FirstChunkDelay) || !event("messageStart", map[string]any{"role": "assistant"}) {
		return
	}
	if !s.converseContent(c, rp, event, send) {
		return
	}
	if !event("messageStop", map[string]any{"stopReason": converseStop(rp)}) {
		return
	}
	meta := map[string]any{"metrics": map[string]any{"latencyMs": 12}}
	if u := converseUsageOf(rp, c.fault.NoUsage); u != nil {
		meta["usage"] = u
	}
	event("metadata", meta)
}

// converseContent sends the content blocks, or the exception event that
// breaks them off; it reports whether the stream goes on.
func (s *Server) converseContent(c *call, rp reply, event func(string, any) bool, send func(eventstream.Headers, any) bool) bool {
	if rp.tool != "" {
		return event("contentBlockStart", map[string]any{"contentBlockIndex": 0, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_" + c.requestID(), "name": rp.tool}}}) &&
			event("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"toolUse": map[string]any{"input": rp.toolArgs()}}}) &&
			event("contentBlockStop", map[string]any{"contentBlockIndex": 0})
	}
	for i := range rp.chunks {
		if c.fault.ErrorAfterChunks > 0 && i == c.fault.ErrorAfterChunks {
			name := c.fault.ErrorCode
			if name == "" {
				name = "modelStreamErrorException"
			}
			send(eventstream.Headers{
				{Name: ":exception-type", Value: eventstream.StringValue(name)},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
				{Name: ":message-type", Value: eventstream.StringValue("exception")},
			}, map[string]string{"message": "injected " + name + " after " + strconv.Itoa(i) + " chunks"})
			return false
		}
		if i > 0 && !sleep(c.r.Context(), c.fault.InterChunkDelay) {
			return false
		}
		if !event("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": rp.text(i)}}) {
			return false
		}
	}
	return event("contentBlockStop", map[string]any{"contentBlockIndex": 0})
}
