package handlers

import (
	"github.com/labstack/echo/v4"

	"switchyard/routing"
	"switchyard/routing/record"
)

// WriteOpenAIError writes {"error":{"message","type","code","param"}}. Like
// every data-plane answer it carries an X-Request-Id (a fresh one unless the
// response already has one), so even an unknown endpoint's 404 can be quoted.
func WriteOpenAIError(c echo.Context, status int, code, msg string) error {
	if h := c.Response().Header(); h.Get("X-Request-Id") == "" {
		h.Set("X-Request-Id", record.NewRequestID())
	}
	return c.JSONBlob(status, routing.ErrorJSON(status, code, msg, nil))
}
