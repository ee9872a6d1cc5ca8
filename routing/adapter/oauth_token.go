package adapter

import (
	"context"

	"golang.org/x/oauth2"
)

// fetchToken asks src for a token (from its cache, or over the network) and
// gives up when ctx ends first: a token endpoint that hangs must not hold a
// caller past its deadline. failed classifies src's error.
func fetchToken(ctx context.Context, src oauth2.TokenSource, failed func(error) *Error) (string, *Error) {
	type got struct {
		tok *oauth2.Token
		err error
	}
	ch := make(chan got, 1)
	go func() { tok, err := src.Token(); ch <- got{tok, err} }()
	select {
	case <-ctx.Done():
		return "", ClassifyTransport(ctx, ctx.Err())
	case g := <-ch:
		if g.err != nil {
			return "", failed(g.err)
		}
		return g.tok.AccessToken, nil
	}
}
