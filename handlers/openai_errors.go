package handlers

import (
	"github.com/labstack/echo/v4"

	"switchyard/routing"
)

// WriteOpenAIError writes {"error":{"message","type","code","param"}}.
func WriteOpenAIError(c echo.Context, status int, code, msg string) error {
	return c.JSONBlob(status, routing.ErrorJSON(status, code, msg, nil))
}
