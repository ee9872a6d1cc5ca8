package handlers

import (
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/routing/frontdoor"
	"switchyard/routing/record"
)

// WriteOpenAIError writes {"error":{"message","type","code","param"}} (under
// /v1/messages, Anthropic's {"type":"error","error":{…}}). Like
// every data-plane answer it carries an X-Request-Id (a fresh one unless the
// response already has one), so even an unknown endpoint's 404 can be quoted.
func WriteOpenAIError(c echo.Context, status int, code, msg string) error {
	if h := c.Response().Header(); h.Get("X-Request-Id") == "" {
		h.Set("X-Request-Id", record.NewRequestID())
	}
	if strings.HasPrefix(c.Request().URL.Path, "/v1/messages") {
		// The Anthropic front door's callers read Anthropic's error shape.
		return c.JSONBlob(status, frontdoor.MessagesError(status, code, msg, nil))
	}
	return c.JSONBlob(status, frontdoor.ErrorJSON(status, code, msg, nil))
}
