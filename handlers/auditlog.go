package handlers

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/audit"
	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
	"switchyard/views/pages/auditlog"
)

// AuditStore reads the audit trail and checks its chain. *store.Store
// satisfies it; web's audit middleware writes the rows.
type AuditStore interface {
	AuditLog(ctx context.Context, f rows.AuditFilter) ([]rows.AuditEntry, error)
	CheckAudit(ctx context.Context, progress func(checked int64)) (rows.AuditCheck, error)
}

// auditPageRows is how many rows the Audit page shows at a time.
const auditPageRows = 50

// localMinute is the datetime-local format of the filter's times (UTC).
const localMinute = "2006-01-02T15:04"

// auditFilter reads the filter of the Audit page's query. A time it cannot
// read is named in the form's error and left out of the filter.
func auditFilter(c echo.Context) (rows.AuditFilter, auditlog.Filter) {
	q := func(k string) string { return strings.TrimSpace(c.QueryParam(k)) }
	form := auditlog.Filter{Actor: q("actor"), Action: q("action"), Object: q("object"), Q: q("q"), Since: q("since"), Until: q("until")}
	f := rows.AuditFilter{Actor: form.Actor, Action: rows.AuditAction(form.Action), Object: form.Object, Text: form.Q}
	var bad []string
	for _, t := range []struct {
		text string
		to   *time.Time
		name string
	}{{form.Since, &f.Since, "From"}, {form.Until, &f.Until, "To"}} {
		if t.text == "" {
			continue
		}
		v, err := time.Parse(localMinute, t.text)
		if err != nil {
			bad = append(bad, t.name)
			continue
		}
		*t.to = v
	}
	if len(bad) > 0 {
		form.Error = strings.Join(bad, " and ") + ": use a date and time such as 2026-05-01T09:30 (UTC); left out of the filter."
	}
	if b, err := strconv.ParseInt(c.QueryParam("before"), 10, 64); err == nil && b > 0 {
		f.BeforeID = b
	}
	return f, form
}

// AuditPage shows the audit trail, filtered, newest first, a page at a
// time; htmx asks for the results only.
func (h *Handler) AuditPage(c echo.Context) error {
	f, form := auditFilter(c)
	f.Limit = auditPageRows + 1
	list, err := h.Audit.AuditLog(c.Request().Context(), f)
	if err != nil {
		return err
	}
	res := auditlog.Results{}
	if len(list) > auditPageRows {
		list = list[:auditPageRows]
		v := c.QueryParams()
		v.Set("before", strconv.FormatInt(list[len(list)-1].ID, 10))
		res.Older = "/audit?" + v.Encode()
	}
	for _, e := range list {
		res.Rows = append(res.Rows, auditRowView(e))
	}
	p := auditlog.Page{Page: h.page(c, "Audit", "audit"), Filter: form, Results: res, Actions: audit.Codes()}
	return httpx.Render(c, http.StatusOK, auditlog.Show(p), auditlog.ResultsTable(res))
}

func auditRowView(e rows.AuditEntry) auditlog.Row {
	return auditlog.Row{ID: e.ID, At: e.At, Actor: e.Actor, ActorKind: string(e.ActorKind), Addr: e.Addr, Action: string(e.Action),
		ObjectKind: e.ObjectKind, ObjectID: e.ObjectID, ObjectName: e.ObjectName, Outcome: string(e.Outcome), Status: e.Status,
		Method: e.Detail.Method, Route: e.Detail.Route, Note: e.Detail.Note, Before: e.Detail.Before, After: e.Detail.After, Hash: e.Hash}
}

// AuditVerify walks the whole chain and answers the result fragment: how
// many rows were checked and the first broken link, if any.
func (h *Handler) AuditVerify(c echo.Context) error {
	chk, err := h.Audit.CheckAudit(c.Request().Context(), nil)
	v := auditlog.Verify{Checked: chk.Checked, HeadID: chk.HeadID, HeadHash: chk.HeadHash}
	if err != nil {
		h.Log.Error("audit check", "err", err)
		v.Err = "the database did not answer; see the server log"
	} else if b := chk.Break; b != nil {
		v.Broken, v.BreakID, v.BreakKind, v.Other = true, b.ID, string(b.Kind), b.Other
		h.Log.Warn("audit chain broken", "at", b.ID, "kind", b.Kind, "other", b.Other)
	}
	if !httpx.IsPartial(c) {
		msg := "Chain whole: " + strconv.FormatInt(v.Checked, 10) + " row(s) checked."
		if v.Broken {
			msg = auditlog.BreakWords(v)
		}
		h.flash(c, msg)
		return c.Redirect(http.StatusSeeOther, "/audit")
	}
	return httpx.Render(c, http.StatusOK, auditlog.VerifyResult(&v), nil)
}

// auditPublished adds a publish's (or rollback's) new version and the
// acknowledgements it was published with to the request's audit row.
func auditPublished(c echo.Context, version int64, acks []config.Ack) {
	note := "published as version " + strconv.FormatInt(version, 10)
	if len(acks) > 0 {
		note += "; acknowledged " + strings.Join(ackList(acks), ", ")
	}
	audit.Note(c, note)
}
