package handlers

import (
	"github.com/labstack/echo/v4"
)

// OpenAIError is OpenAI's error object.
type OpenAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Param   *string `json:"param"`
}

// errorType maps our codes onto OpenAI's error types.
func errorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// WriteOpenAIError writes {"error":{"message","type","code","param"}}.
func WriteOpenAIError(c echo.Context, status int, code, msg string) error {
	return writeOpenAIErrorParam(c, status, code, msg, nil)
}

func writeOpenAIErrorParam(c echo.Context, status int, code, msg string, param *string) error {
	return c.JSON(status, map[string]OpenAIError{"error": {Message: msg, Type: errorType(status), Code: code, Param: param}})
}
