package adapter

// AWS Bedrock's plumbing: credentials from a key pool entry, SigV4 signing
// with the AWS SDK's signer, sending, and the classification of Bedrock's
// errors (the x-amzn-ErrorType header or the body's __type, and the same
// names as exception events inside a stream). The translation is
// bedrock_converse.go.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/tidwall/gjson"
)

// Bedrock speaks AWS Bedrock's Converse and ConverseStream APIs, for any
// model, and InvokeModel's Anthropic-native body for a Messages caller to
// a Claude model (bedrock_invoke.go): the upstream model is a model id or a cross-region inference
// profile id ("us.anthropic.claude-…"). A key is an AWS credential written
// "ACCESS_KEY_ID:SECRET_ACCESS_KEY" or
// "ACCESS_KEY_ID:SECRET_ACCESS_KEY:SESSION_TOKEN", or the word
// "default-chain" for the standard AWS credential chain (environment,
// shared config, an instance or task role). The provider's region is the
// one requests are signed for.
type Bedrock struct {
	chain *bedrockChain
}

var _ Adapter = Bedrock{}

// NewBedrock returns a Bedrock adapter with its own credential-chain cache.
func NewBedrock() Bedrock { return Bedrock{chain: &bedrockChain{}} }

// BedrockDefaultChain is the key secret that asks for the standard AWS
// credential chain.
const BedrockDefaultChain = "default-chain"

// bedrockService is SigV4's service name for Bedrock's runtime API.
const bedrockService = "bedrock"

// ParseBedrockSecret reads a static AWS credential from a key secret.
func ParseBedrockSecret(s string) (aws.Credentials, bool) {
	parts := strings.SplitN(strings.TrimSpace(s), ":", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return aws.Credentials{}, false
	}
	c := aws.Credentials{AccessKeyID: parts[0], SecretAccessKey: parts[1], Source: "switchyard key pool"}
	if len(parts) == 3 {
		c.SessionToken = parts[2]
	}
	return c, true
}

// bedrockChain loads the default credential chain once per region.
type bedrockChain struct {
	mu    sync.Mutex
	cache map[string]aws.CredentialsProvider
}

func (b *bedrockChain) provider(ctx context.Context, region string) (aws.CredentialsProvider, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.cache[region]; ok {
		return p, nil
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region))
	if err != nil {
		return nil, err
	}
	if b.cache == nil {
		b.cache = map[string]aws.CredentialsProvider{}
	}
	b.cache[region] = cfg.Credentials
	return cfg.Credentials, nil
}

// credentials returns the AWS credential of t's key.
func (b Bedrock) credentials(ctx context.Context, t Target) (aws.Credentials, *Error) {
	if strings.TrimSpace(t.APIKey) == BedrockDefaultChain {
		p, err := b.chain.provider(ctx, t.Region)
		if err == nil {
			var c aws.Credentials
			if c, err = p.Retrieve(ctx); err == nil {
				return c, nil
			}
		}
		return aws.Credentials{}, &Error{Class: ClassAuth, Code: "aws_credentials", Message: "the AWS default credential chain found no credentials"}
	}
	c, ok := ParseBedrockSecret(t.APIKey)
	if !ok {
		return aws.Credentials{}, &Error{Class: ClassAuth, Code: "aws_credentials", Message: "the key is not an AWS credential (ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN] or default-chain)"}
	}
	return c, nil
}

// bedrockURL is base + /model/{id}/{op}.
func bedrockURL(t Target, op string) string {
	return vendorBaseURL(t.BaseURL) + "/model/" + url.PathEscape(t.UpstreamModel) + "/" + op
}

// bedrockSend signs and sends one request and returns the response
// whatever its status.
func (b Bedrock) bedrockSend(ctx context.Context, t Target, method, u string, body []byte, accept string) (*http.Response, *Error) {
	if strings.TrimSpace(t.Region) == "" {
		return nil, &Error{Class: ClassBadRequest, Code: "no_region", Message: "the Bedrock provider has no region to sign for"}
	}
	creds, e := b.credentials(ctx, t)
	if e != nil {
		return nil, e
	}
	req, sent, err := newUpstreamRequest(ctx, method, u, body)
	if err != nil {
		return nil, &Error{Class: ClassBadRequest, Message: "cannot build upstream request", Err: err}
	}
	t.addHeaders(req.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hash, bedrockService, t.Region, time.Now().UTC()); err != nil {
		return nil, &Error{Class: ClassAuth, Code: "aws_signing", Message: "cannot sign the request"}
	}
	resp, err := sent.do(t.Client, req)
	if err != nil {
		return nil, ClassifyTransport(ctx, err)
	}
	return resp, nil
}

// bedrockExceptions maps Bedrock's exception names to classes.
var bedrockExceptions = map[string]Class{
	"ThrottlingException":           ClassRateLimited,
	"ServiceQuotaExceededException": ClassRateLimited,
	"ServiceUnavailableException":   ClassServer,
	"ModelNotReadyException":        ClassServer,
	"InternalServerException":       ClassServer,
	"ModelErrorException":           ClassServer,
	"ModelStreamErrorException":     ClassServer,
	"ModelTimeoutException":         ClassTimeout,
	"ValidationException":           ClassBadRequest,
	"ResourceNotFoundException":     ClassBadRequest,
	"AccessDeniedException":         ClassAuth,
	"UnrecognizedClientException":   ClassAuth,
	"InvalidSignatureException":     ClassAuth,
	"ExpiredTokenException":         ClassAuth,
	"IncompleteSignatureException":  ClassAuth,
}

// bedrockExceptionName normalizes "throttlingException",
// "ThrottlingException:http://…" and "com.amazon…#ThrottlingException".
func bedrockExceptionName(s string) string {
	s, _, _ = strings.Cut(s, ":")
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// ClassifyBedrock turns a Bedrock failure (an HTTP answer, or a stream's
// exception event with status 0) into a classified error.
func ClassifyBedrock(status int, h http.Header, body []byte) *Error {
	name := bedrockExceptionName(h.Get("X-Amzn-Errortype"))
	if name == "" {
		name = bedrockExceptionName(gjson.GetBytes(body, "__type").String())
	}
	msg := gjson.GetBytes(body, "message").String()
	if msg == "" {
		msg = gjson.GetBytes(body, "Message").String()
	}
	if msg == "" {
		msg = vendorMessage(status, body)
	}
	class, ok := bedrockExceptions[name]
	if !ok {
		class = classifyStatus(status, classifyInfo{})
		if status == 0 {
			class = ClassServer
		}
	}
	e := &Error{Class: class, Status: status, Code: name, Message: msg}
	if class == ClassRateLimited {
		e.RetryAfter = ParseRetryAfter(h, time.Now())
	}
	return e
}

// bedrockFail reads and classifies a non-2xx answer.
func bedrockFail(resp *http.Response) *Error {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, vendorMaxErrorBody))
	return ClassifyBedrock(resp.StatusCode, resp.Header, raw)
}

// Embed: Bedrock's embedding models speak InvokeModel with per-model
// bodies, which this build does not translate.
func (Bedrock) Embed(context.Context, Target, *EmbedRequest) (*EmbedResult, error) {
	return nil, &Error{Class: ClassBadRequest, Code: "unsupported", Message: "embeddings on Bedrock are not supported by this build"}
}

// bedrockPost sends a signed JSON request to the model's operation
// (converse, invoke) and reads a successful answer whole; a failed one is
// classified from its exception.
func (b Bedrock) bedrockPost(ctx context.Context, t Target, op string, body []byte) (raw []byte, status int, err error) {
	resp, e := b.bedrockSend(ctx, t, http.MethodPost, bedrockURL(t, op), body, "application/json")
	if e != nil {
		return nil, 0, e
	}
	if resp.StatusCode/100 != 2 {
		return nil, 0, bedrockFail(resp)
	}
	raw, err = vendorReadBody(ctx, resp)
	return raw, resp.StatusCode, err
}

// ListModels makes the smallest signed Converse call (one token), which
// verifies the credential, the region and the model.
func (b Bedrock) ListModels(ctx context.Context, t Target) (*ModelList, error) {
	if t.UpstreamModel == "" {
		return nil, &Error{Class: ClassBadRequest, Code: "no_model", Message: "Bedrock lists no models to a runtime credential; verify with a model"}
	}
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"ping"}]}],"inferenceConfig":{"maxTokens":1}}`)
	if _, _, err := b.bedrockPost(ctx, t, "converse", body); err != nil {
		return nil, err
	}
	return &ModelList{Models: []string{t.UpstreamModel}}, nil
}
