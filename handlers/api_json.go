package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/audit"
	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
)

// apiError is an admin-API answer that has not been written yet; apiFail
// writes it.
type apiError struct {
	status int
	code   string
	msg    string
	fields config.FieldErrors
}

func (e *apiError) Error() string { return e.msg }

func invalidJSON(msg string) error {
	return &apiError{status: http.StatusBadRequest, code: "invalid_json", msg: msg}
}

func apiNotFound(what string, id int64) error {
	return &apiError{status: http.StatusNotFound, code: "not_found", msg: "there is no " + what + " " + strconv.FormatInt(id, 10)}
}

func apiInvalid(fields config.FieldErrors) error {
	return &apiError{status: http.StatusUnprocessableEntity, code: "validation_failed", msg: (&config.ValidationError{Fields: fields}).Error(), fields: fields}
}

// apiFail writes err as an admin-API error: 400/415 for unreadable bodies,
// 422 with fields for invalid input, 409 for a delete refused because other
// objects refer to the row, 404 for an unknown id. Anything else is returned
// for the server's error handler (a 500, logged).
func apiFail(c echo.Context, err error) error {
	var ae *apiError
	var ve *config.ValidationError
	var re *rows.ReferencedError
	switch {
	case errors.As(err, &ae):
		return httpx.JSONError(c, ae.status, ae.code, ae.msg, ae.fields)
	case errors.As(err, &ve):
		return httpx.JSONError(c, http.StatusUnprocessableEntity, "validation_failed", ve.Error(), ve.Fields)
	case errors.As(err, &re):
		return httpx.JSONError(c, http.StatusConflict, "referenced", re.Message, nil)
	case errors.Is(err, rows.ErrNotFound):
		return httpx.JSONError(c, http.StatusNotFound, "not_found", "not found (it may have just been deleted)", nil)
	}
	return err
}

// orNotFound names the unknown object when err is rows.ErrNotFound.
func orNotFound(err error, what string, id int64) error {
	if errors.Is(err, rows.ErrNotFound) {
		return apiNotFound(what, id)
	}
	return err
}

// apiID parses the numeric :id of a resource; anything else is unknown.
func apiID(c echo.Context, what string) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, &apiError{status: http.StatusNotFound, code: "not_found", msg: "there is no " + what + " " + strconv.Quote(c.Param("id"))}
	}
	return id, nil
}

// readJSON decodes the request body, a single JSON object in UTF-8, onto
// dst strictly (unknown fields, wrong types and trailing data are refused).
// dst holds the defaults (create) or the current values (update), so fields
// left out keep them.
func readJSON(c echo.Context, dst any) error {
	if ct := c.Request().Header.Get(echo.HeaderContentType); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || (mt != echo.MIMEApplicationJSON && !strings.HasSuffix(mt, "+json")) ||
			(params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
			return &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
				msg: "send the body as JSON with 'Content-Type: application/json' (got " + strconv.Quote(ct) + ")"}
		}
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err // over the body limit: the middleware's 413
	}
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return invalidJSON("the request body is empty; send a JSON object")
	case !utf8.Valid(body):
		return invalidJSON("the request body is not valid UTF-8")
	case trimmed[0] != '{':
		return invalidJSON("the request body must be a JSON object ({…})")
	}
	c.Request().Body = io.NopCloser(bytes.NewReader(body))
	if err := decodeJSON(c, dst); err != nil {
		return err
	}
	if !json.Valid(body) {
		return invalidJSON("unexpected data after the JSON object")
	}
	return nil
}

// readOnly reports (in f) a read-only field the body tried to change: sent
// is what the body held (nil or zero when it was left out), cur the stored
// value. Sending back what a GET returned is fine, so scripts can round-trip.
func readOnly(f config.FieldErrors, field string, sent, cur any, hint string) {
	if rv := reflect.ValueOf(sent); !rv.IsValid() || rv.IsZero() {
		return
	}
	if !sameJSON(sent, cur) {
		f.Add(field, hint)
	}
}

// sameJSON compares two values as JSON, treating null, [] and a missing
// member alike.
func sameJSON(a, b any) bool {
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out any
		_ = json.Unmarshal(raw, &out)
		return dropEmpty(out)
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func dropEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e = dropEmpty(e); e == nil {
				delete(x, k)
			} else {
				x[k] = e
			}
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
		for i := range x {
			x[i] = dropEmpty(x[i])
		}
	}
	return v
}

// checkID refuses a body id that differs from the resource's id (zero, or
// left out, is fine).
func checkID(f config.FieldErrors, sent, id int64) {
	if sent != 0 && sent != id {
		f.Add("id", "does not match the id in the URL; ids are assigned by the server")
	}
}

// apiList wraps a list as {"<name>": [...]}, never null.
func apiList[T any](c echo.Context, name string, xs []T) error {
	if xs == nil {
		xs = []T{}
	}
	return c.JSON(http.StatusOK, map[string][]T{name: xs})
}

// audit logs who changed what through the admin API; never bodies. The
// id also goes to the request's audit row (a create's path names none).
func (h *Handler) audit(c echo.Context, action string, id int64) {
	h.Log.Info("admin api: "+action, "id", id, "by", httpx.CurrentPrincipal(c).Name)
	audit.Set(c, audit.Object{ID: strconv.FormatInt(id, 10)})
}

// apiDelete answers DELETE on a resource by numeric id: 204, 404 for an
// unknown id, 409 when other objects still refer to it.
func (h *Handler) apiDelete(c echo.Context, what string, del func(context.Context, int64) error) error {
	id, err := apiID(c, what)
	if err != nil {
		return apiFail(c, err)
	}
	if err := del(c.Request().Context(), id); err != nil {
		return apiFail(c, orNotFound(err, what, id))
	}
	h.audit(c, what+" deleted", id)
	return c.NoContent(http.StatusNoContent)
}
