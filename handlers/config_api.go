package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/routing/config/textdiff"
	"switchyard/store/rows"
)

// APIConfigDraft returns the draft's canonical text (YAML), or the snapshot
// as JSON with ?format=json.
func (h *Handler) APIConfigDraft(c echo.Context) error {
	snap, rev, err := h.Versions.Draft(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("X-Draft-Revision", strconv.FormatInt(rev, 10))
	if c.QueryParam("format") == "json" {
		return c.JSON(http.StatusOK, snap)
	}
	text, err := config.Encode(snap)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/yaml; charset=utf-8", text)
}

// APIConfigImport replaces the draft with the posted snapshot text (YAML or
// JSON). With ?preview=true it changes nothing and returns the diff and the
// dry-run of the imported configuration.
func (h *Handler) APIConfigImport(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxImport+1))
	if err != nil {
		return httpx.JSONError(c, http.StatusBadRequest, "unreadable_body", err.Error(), nil)
	}
	if len(body) > maxImport {
		return httpx.JSONError(c, http.StatusRequestEntityTooLarge, "too_large", "the snapshot is larger than 5 MB", nil)
	}
	prev, err := h.previewImport(c, string(body))
	if err != nil {
		return err
	}
	if prev.Error != "" {
		return httpx.JSONError(c, http.StatusBadRequest, "invalid_snapshot", prev.Error, nil)
	}
	if len(prev.Fields) > 0 {
		return httpx.JSONError(c, http.StatusUnprocessableEntity, "validation_failed", "the snapshot has invalid or unresolved fields", prev.Fields)
	}
	out := map[string]any{
		"diff":     textdiff.Unified(textdiff.FoldContext(prev.Lines, 3)),
		"inserted": prev.Ins, "deleted": prev.Del,
		"dry_run": prev.Result,
		"applied": false,
	}
	if c.QueryParam("preview") == "true" {
		return c.JSON(http.StatusOK, out)
	}
	notes, err := h.Versions.ReplaceDraft(c.Request().Context(), prev.Snapshot)
	if err != nil {
		if fe, ok := fieldErrors(err); ok {
			return httpx.JSONError(c, http.StatusUnprocessableEntity, "validation_failed", "the snapshot does not fit this installation", fe)
		}
		return err
	}
	h.Log.Info("draft replaced by import", "by", httpx.CurrentPrincipal(c).Name)
	out["applied"], out["notes"] = true, notes
	return c.JSON(http.StatusOK, out)
}

// APIDryRun runs the checks on the draft and replays the last day's
// traffic against it. "blocking" is true when a publish without
// acknowledgements would be refused; "acknowledge" lists what a publish
// must acknowledge (besides fixing every error); "carried" lists the
// findings acknowledged on the live version and unchanged, which a publish
// carries over without asking.
func (h *Handler) APIDryRun(c echo.Context) error {
	ctx := c.Request().Context()
	snap, rev, err := h.Versions.Draft(ctx)
	if err != nil {
		return err
	}
	r, im, problem, truncated := h.draftCheck(ctx, snap)
	standing := h.liveStanding(ctx)
	acks, carried := []string{}, []carriedAck{}
	for _, f := range r.NeedAck() {
		if f.Ack == nil || slices.Contains(acks, f.Ack.String()) || slices.ContainsFunc(carried, func(a carriedAck) bool { return a.Ack == *f.Ack }) {
			continue
		}
		if s, ok := config.FindStanding(standing, *f.Ack); ok {
			carried = append(carried, carriedAck{Ack: s.Ack, Version: s.Version, By: s.Author})
		} else {
			acks = append(acks, f.Ack.String())
		}
	}
	impact := map[string]any{"available": im != nil}
	if im != nil {
		impact["replay"], impact["truncated"] = im, truncated
	} else {
		impact["problem"] = problem
	}
	blocking := len(r.Unacknowledged(config.StandingKeys(standing))) > 0
	return c.JSON(http.StatusOK, map[string]any{"draft_revision": rev, "blocking": blocking, "errors": len(r.Errors()),
		"acknowledge": acks, "carried": carried, "findings": r.Findings, "checks": r.Checks, "impact": impact})
}

// carriedAck is an acknowledgement of the live version a publish carries
// over: the ack, and the version and author it was given on.
type carriedAck struct {
	Ack     config.Ack `json:"ack"`
	Version int64      `json:"version"`
	By      string     `json:"by"`
}

// liveStanding is the acknowledgements in force on the live version.
func (h *Handler) liveStanding(ctx context.Context) []config.Standing {
	n, err := h.Versions.LatestVersionNumber(ctx)
	if err != nil || n == 0 {
		return nil
	}
	v, err := h.Versions.Version(ctx, n)
	if err != nil {
		return nil
	}
	return v.Standing()
}

type publishBody struct {
	Message          string `json:"message"`
	ExpectedRevision *int64 `json:"expected_revision,omitempty"`
	// Acknowledge names the findings accepted: "group/tier" (or
	// "group/logic-model"), each as the dry-run's "acknowledge" lists it.
	Acknowledge []config.Ack `json:"acknowledge,omitempty"`
}

// decodeJSON decodes a strict JSON body onto dst. Its error is an unwritten
// 400 invalid_json answer (send it with apiFail) naming the problem in
// JSON terms rather than Go types.
func decodeJSON(c echo.Context, dst any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return invalidJSON("the request body is empty; send a JSON object")
		case errors.As(err, &te) && te.Field != "":
			return invalidJSON(fmt.Sprintf("field %q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value))
		case errors.Is(err, config.ErrMoney):
			return invalidJSON(err.Error() + " (amounts are decimals with at most 6 decimal places, such as 2.5)")
		case errors.As(err, &se):
			return invalidJSON(fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err))
		}
		return invalidJSON("malformed JSON body: " + strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return invalidJSON("unexpected data after the JSON object")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "another type"
}

// APIPublish publishes the draft.
func (h *Handler) APIPublish(c echo.Context) error {
	var b publishBody
	if err := readJSON(c, &b); err != nil {
		return apiFail(c, err)
	}
	ctx := c.Request().Context()
	out, err := h.Versions.Publish(ctx, rows.PublishInput{Author: httpx.CurrentPrincipal(c).Name, Message: strings.TrimSpace(b.Message), ExpectedRevision: b.ExpectedRevision,
		Check: h.publishCheck(ctx), Acknowledge: b.Acknowledge})
	if err != nil {
		return h.apiPublishError(c, err)
	}
	h.Log.Info("configuration published", "version", out.Version.Number, "author", out.Version.Author)
	auditPublished(c, out.Version.Number, b.Acknowledge)
	return c.JSON(http.StatusCreated, versionJSON(out.Version, out.Notes))
}

func (h *Handler) apiPublishError(c echo.Context, err error) error {
	var cf *rows.ChecksFailedError
	switch {
	case errors.As(err, &cf):
		code := "dry_run_failed"
		if len(cf.Result.Errors()) == 0 {
			code = "acknowledgement_required" // only unacknowledged findings block
		}
		return c.JSON(http.StatusUnprocessableEntity, map[string]any{"error": httpx.APIError{
			Message: cf.Error(), Type: "invalid_request_error", Code: code, Details: cf.Blocking}})
	case errors.Is(err, rows.ErrDraftChanged):
		return httpx.JSONError(c, http.StatusConflict, "draft_changed", err.Error(), nil)
	case errors.Is(err, rows.ErrNothingToPublish):
		return httpx.JSONError(c, http.StatusConflict, "nothing_to_publish", err.Error(), nil)
	case errors.Is(err, rows.ErrNotFound):
		return httpx.JSONError(c, http.StatusNotFound, "not_found", err.Error(), nil)
	}
	if fe, ok := fieldErrors(err); ok {
		return httpx.JSONError(c, http.StatusUnprocessableEntity, "validation_failed", "invalid publish request", fe)
	}
	return err
}

func versionJSON(v rows.Version, notes []rows.ReplaceNote) map[string]any {
	m := map[string]any{
		"number": v.Number, "author": v.Author, "created_at": v.CreatedAt, "message": v.Message,
		"rollback_of": v.RollbackOf, "checks": v.CheckResults(),
	}
	if v.Snapshot != "" {
		m["snapshot"] = v.Snapshot
	}
	if len(notes) > 0 {
		m["notes"] = notes
	}
	return m
}

// APIVersions lists versions, newest first.
func (h *Handler) APIVersions(c echo.Context) error {
	vs, err := h.Versions.Versions(c.Request().Context(), 1000)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(vs))
	for _, v := range vs {
		out = append(out, versionJSON(v, nil))
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": out})
}

// APIVersion returns one version with its snapshot.
func (h *Handler) APIVersion(c echo.Context) error {
	n, err := strconv.ParseInt(c.Param("n"), 10, 64)
	if err != nil {
		return httpx.JSONError(c, http.StatusNotFound, "not_found", "no version "+c.Param("n"), nil)
	}
	v, err := h.Versions.Version(c.Request().Context(), n)
	if err != nil {
		if errors.Is(err, rows.ErrNotFound) {
			return httpx.JSONError(c, http.StatusNotFound, "not_found", "no version "+c.Param("n"), nil)
		}
		return err
	}
	return c.JSON(http.StatusOK, versionJSON(v, nil))
}

// APIVersionsDiff returns the unified diff between two versions ("draft" allowed).
func (h *Handler) APIVersionsDiff(c echo.Context) error {
	a, err := h.textOf(c, c.Param("a"))
	if err != nil {
		return apiHTTPError(c, err)
	}
	b, err := h.textOf(c, c.Param("b"))
	if err != nil {
		return apiHTTPError(c, err)
	}
	lines := textdiff.Lines(a, b)
	ins, del := textdiff.Changed(lines)
	return c.JSON(http.StatusOK, map[string]any{"from": c.Param("a"), "to": c.Param("b"), "inserted": ins, "deleted": del,
		"diff": textdiff.Unified(textdiff.FoldContext(lines, 3))})
}

// APIRollback publishes an older version's content as a new version.
func (h *Handler) APIRollback(c echo.Context) error {
	n, err := strconv.ParseInt(c.Param("n"), 10, 64)
	if err != nil || n <= 0 {
		return httpx.JSONError(c, http.StatusNotFound, "not_found", "no version "+c.Param("n"), nil)
	}
	var b publishBody
	if err := readJSON(c, &b); err != nil {
		return apiFail(c, err)
	}
	out, err := h.Versions.Publish(c.Request().Context(), rows.PublishInput{Author: httpx.CurrentPrincipal(c).Name, Message: strings.TrimSpace(b.Message), RollbackTo: n, Check: h.publishCheck(c.Request().Context()), Acknowledge: b.Acknowledge})
	if err != nil {
		return h.apiPublishError(c, err)
	}
	h.Log.Info("configuration rolled back", "version", out.Version.Number, "to", n)
	auditPublished(c, out.Version.Number, b.Acknowledge)
	return c.JSON(http.StatusCreated, versionJSON(out.Version, out.Notes))
}

func apiHTTPError(c echo.Context, err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg, _ := he.Message.(string)
		return httpx.JSONError(c, he.Code, strings.ReplaceAll(strings.ToLower(http.StatusText(he.Code)), " ", "_"), msg, nil)
	}
	return err
}
