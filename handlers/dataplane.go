package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// DataPlane serves the OpenAI-compatible API.
type DataPlane struct{}

// ChatCompletions serves POST /v1/chat/completions.
func (d *DataPlane) ChatCompletions(c echo.Context) error {
	return WriteOpenAIError(c, http.StatusServiceUnavailable, "no_available_model", "data plane not wired yet")
}

// Embeddings serves POST /v1/embeddings.
func (d *DataPlane) Embeddings(c echo.Context) error {
	return WriteOpenAIError(c, http.StatusServiceUnavailable, "no_available_model", "data plane not wired yet")
}

// Models serves GET /v1/models.
func (d *DataPlane) Models(c echo.Context) error {
	return WriteOpenAIError(c, http.StatusServiceUnavailable, "no_available_model", "data plane not wired yet")
}

// NotFound answers unknown /v1 paths in OpenAI's error shape.
func (d *DataPlane) NotFound(c echo.Context) error {
	return WriteOpenAIError(c, http.StatusNotFound, "not_found", "unknown endpoint "+c.Request().Method+" "+c.Request().URL.Path+"; Switchyard serves /v1/chat/completions, /v1/embeddings and /v1/models")
}
