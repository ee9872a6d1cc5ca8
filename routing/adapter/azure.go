package adapter

import (
	"context"
	"errors"
	"net/url"
)

// Azure speaks Azure OpenAI: OpenAI's own wire (the OpenAI adapter's
// translation, streams and error classification, content_filter and
// retry-after-ms included) under Azure's addressing and credentials:
//
//	{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…
//	{endpoint}/openai/deployments/{deployment}/embeddings?api-version=…
//	{endpoint}/openai/responses?api-version=…   (model: the deployment name)
//
// A deployment's upstream model is its Azure deployment name. A key is
// either an API key, sent in the api-key header, or Entra ID client
// credentials written "entra:TENANT_ID:CLIENT_ID:CLIENT_SECRET", exchanged
// for bearer tokens that are cached per credential and refreshed before
// they expire (entra.go).
type Azure struct {
	tokens *EntraTokens
}

var _ Adapter = Azure{}

// NewAzure returns an Azure adapter with its own Entra token cache.
func NewAzure() Azure { return Azure{tokens: NewEntraTokens()} }

// azureEndpoint is the resource endpoint without a trailing slash or the
// "/openai" operators paste with it.
func azureEndpoint(base string) string { return vendorBaseURL(base, "/openai") }

func azureQuery(t Target) string { return "?api-version=" + url.QueryEscape(t.APIVersion) }

// deployment addresses the deployment's own paths (chat, embeddings).
func (a Azure) deployment(t Target) Target {
	t.BaseURL = azureEndpoint(t.BaseURL) + "/openai/deployments/" + url.PathEscape(t.UpstreamModel) + azureQuery(t)
	return t
}

// resource addresses the resource's paths (responses, models).
func (a Azure) resource(t Target) Target {
	t.BaseURL = azureEndpoint(t.BaseURL) + "/openai" + azureQuery(t)
	return t
}

// authed sets the credential of t: the api-key header, or a bearer token
// from Entra ID. fresh skips the cached token.
func (a Azure) authed(ctx context.Context, t Target, fresh bool) (Target, *Error) {
	cred, ok := ParseEntraSecret(t.APIKey)
	if !ok {
		t.keyHeader = "api-key"
		return t, nil
	}
	tok, e := a.tokens.Token(ctx, t, cred, fresh)
	if e != nil {
		return t, e
	}
	t.Bearer = []string{"Bearer " + tok}
	return t, nil
}

// call runs one OpenAI-wire call with t's credential. An Entra token the
// service refuses (expired or revoked early) is fetched anew and the call
// made once more, so a token's end never fails a request.
func (a Azure) call(ctx context.Context, t Target, fn func(Target) error) error {
	at, e := a.authed(ctx, t, false)
	if e != nil {
		return e
	}
	err := fn(at)
	if _, entra := ParseEntraSecret(t.APIKey); !entra || ClassOf(err) != ClassAuth || ctx.Err() != nil {
		return azureScrub(err, t.APIKey)
	}
	if at, e = a.authed(ctx, t, true); e != nil {
		return e
	}
	return azureScrub(fn(at), t.APIKey)
}

// azureScrub keeps an Entra client secret out of an error message.
func azureScrub(err error, secret string) error {
	var ue *Error
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	if c, ok := ParseEntraSecret(secret); ok {
		scrubKey(ue, c.Secret)
	}
	return err
}

// Chat sends a completion, or a Responses caller's body natively when the
// deployment declares the Responses API.
func (a Azure) Chat(ctx context.Context, t Target, r *ChatRequest) (res *ChatResult, err error) {
	err = a.call(ctx, t, func(at Target) error {
		var e error
		if nativeResponses(r, at) != nil {
			res, e = OpenAI{}.Chat(ctx, a.resource(at), r)
		} else {
			res, e = OpenAI{}.Chat(ctx, a.deployment(at), r)
		}
		return e
	})
	return res, err
}

// ChatStream opens a streamed completion (or a native Responses stream).
func (a Azure) ChatStream(ctx context.Context, t Target, r *ChatRequest) (s Stream, err error) {
	err = a.call(ctx, t, func(at Target) error {
		var e error
		if nativeResponses(r, at) != nil {
			s, e = OpenAI{}.ChatStream(ctx, a.resource(at), r)
		} else {
			s, e = OpenAI{}.ChatStream(ctx, a.deployment(at), r)
		}
		return e
	})
	return s, err
}

// Embed sends one batch to the deployment's embeddings path.
func (a Azure) Embed(ctx context.Context, t Target, r *EmbedRequest) (res *EmbedResult, err error) {
	err = a.call(ctx, t, func(at Target) error {
		var e error
		res, e = OpenAI{}.Embed(ctx, a.deployment(at), r)
		return e
	})
	return res, err
}

// ListModels lists the resource's models, which verifies the credential.
func (a Azure) ListModels(ctx context.Context, t Target) (l *ModelList, err error) {
	err = a.call(ctx, t, func(at Target) error {
		var e error
		l, e = OpenAI{}.ListModels(ctx, a.resource(at))
		return e
	})
	return l, err
}
