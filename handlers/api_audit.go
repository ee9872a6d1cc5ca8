package handlers

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/store/rows"
)

// auditExportPage is how many rows the export reads per query.
const auditExportPage = 1000

// auditJSON is one exported row: every field, the hashes included, so an
// export can be checked on its own.
type auditJSON struct {
	ID         int64            `json:"id"`
	At         time.Time        `json:"at"`
	Actor      string           `json:"actor"`
	ActorKind  string           `json:"actor_kind"`
	Addr       string           `json:"addr"`
	Action     string           `json:"action"`
	ObjectKind string           `json:"object_kind"`
	ObjectID   string           `json:"object_id"`
	ObjectName string           `json:"object_name"`
	Outcome    string           `json:"outcome"`
	Status     int              `json:"status"`
	Detail     rows.AuditDetail `json:"detail"`
	PrevHash   string           `json:"prev_hash"`
	Hash       string           `json:"hash"`
}

// auditCSVHeader names the export's CSV columns.
var auditCSVHeader = []string{"id", "at", "actor", "actor_kind", "addr", "action", "object_kind", "object_id", "object_name", "outcome", "status", "method", "route", "note", "before", "after", "prev_hash", "hash"}

func auditCSVRecord(e rows.AuditEntry) []string {
	return []string{strconv.FormatInt(e.ID, 10), e.At.UTC().Format(time.RFC3339Nano), e.Actor, string(e.ActorKind), e.Addr, string(e.Action),
		e.ObjectKind, e.ObjectID, e.ObjectName, string(e.Outcome), strconv.Itoa(e.Status), e.Detail.Method, e.Detail.Route, e.Detail.Note,
		e.Detail.Before, e.Detail.After, e.PrevHash, e.Hash}
}

// APIAuditExport streams the audit trail oldest first, as JSON lines
// (format=jsonl, the default) or CSV (format=csv): since and until
// (RFC 3339) bound the time, actor, action, object and q filter as on the
// Audit page, and after_id resumes after a row already fetched.
func (h *Handler) APIAuditExport(c echo.Context) error {
	f, err := apiAuditFilter(c)
	if err != nil {
		return apiFail(c, err)
	}
	format := c.QueryParam("format")
	if format == "" {
		format = "jsonl"
	}
	if format != "jsonl" && format != "csv" {
		return httpx.JSONError(c, http.StatusBadRequest, "invalid_format", "format is jsonl or csv, not "+strconv.Quote(httpx.Clip(format, 20)), nil)
	}
	ctx := c.Request().Context()
	f.Limit = auditExportPage
	page, err := h.Audit.AuditLog(ctx, f)
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set("Cache-Control", "no-store")
	var write func(rows.AuditEntry) error
	var flush func()
	if format == "csv" {
		res.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
		res.WriteHeader(http.StatusOK)
		w := csv.NewWriter(res)
		_ = w.Write(auditCSVHeader)
		write = func(e rows.AuditEntry) error { return w.Write(auditCSVRecord(e)) }
		flush = w.Flush
	} else {
		res.Header().Set(echo.HeaderContentType, "application/jsonl; charset=utf-8")
		res.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(res)
		write = func(e rows.AuditEntry) error {
			return enc.Encode(auditJSON{e.ID, e.At.UTC(), e.Actor, string(e.ActorKind), e.Addr, string(e.Action), e.ObjectKind, e.ObjectID,
				e.ObjectName, string(e.Outcome), e.Status, e.Detail, e.PrevHash, e.Hash})
		}
		flush = func() {}
	}
	for {
		for _, e := range page {
			if err := write(e); err != nil {
				return nil // the client went away
			}
		}
		flush()
		res.Flush()
		if len(page) < auditExportPage {
			return nil
		}
		f.AfterID = page[len(page)-1].ID
		if page, err = h.Audit.AuditLog(ctx, f); err != nil {
			h.Log.Warn("audit export cut short", "err", err)
			return nil
		}
	}
}

// apiAuditFilter reads the export's query.
func apiAuditFilter(c echo.Context) (rows.AuditFilter, error) {
	q := func(k string) string { return strings.TrimSpace(c.QueryParam(k)) }
	f := rows.AuditFilter{Actor: q("actor"), Action: rows.AuditAction(q("action")), Object: q("object"), Text: q("q")}
	for k, to := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q(k); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return f, &apiError{status: http.StatusBadRequest, code: "invalid_time", msg: k + " must be an RFC 3339 time such as 2026-05-01T09:30:00Z"}
			}
			*to = t
		}
	}
	f.Oldest = true
	if v := q("after_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return f, &apiError{status: http.StatusBadRequest, code: "invalid_after_id", msg: "after_id must be a row id"}
		}
		f.AfterID = n
	}
	return f, nil
}
