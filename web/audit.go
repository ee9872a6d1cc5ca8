package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/audit"
	"switchyard/handlers/httpx"
	"switchyard/routing/config"
	"switchyard/store/rows"
)

// auditing records one audit row per request to a route handlers/audit
// lists, after the handler ran, so the row has the outcome: who (the
// session user, the admin token, or the username a sign-in tried), from
// which address (counted as sign-in throttling counts it: X-Forwarded-For
// only from a trusted proxy), the action and its object, and for a route
// that may change the draft the draft's changed lines before and after.
//
// It runs outside the sign-in guards, so a refusal (a viewer's POST, a bad
// admin token) is recorded too; the draft's text before a change is read
// inside them, by auditDraft, so only a signed-in request costs that read.
// The row is written after the answer: a failure to write it is logged,
// not shown to the operator.
func (s *Server) auditing(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		spec, ok := audit.ForRoute(c.Request().Method, c.Path())
		if !ok || s.store == nil {
			return next(c)
		}
		ctx := context.WithoutCancel(c.Request().Context())
		err := next(c)
		e := s.auditEntry(c, spec, statusOf(c, err))
		if f := audit.Get(c); f.Changed() && e.Outcome == rows.OutcomeOK {
			e.Detail.Before, e.Detail.After = audit.ChangedLines(f.Before, f.After)
		} else if before, haveBefore := c.Get(draftBeforeKey).(string); haveBefore && e.Outcome == rows.OutcomeOK {
			if after, ok := s.draftText(ctx); ok {
				e.Detail.Before, e.Detail.After = audit.ChangedLines(before, after)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if row, aerr := s.store.AppendAudit(wctx, e); aerr != nil {
			s.log.Error("audit row not written", "action", e.Action, "actor", e.Actor, "err", aerr)
		} else {
			// The server log carries each row's hash: a copy of the chain's
			// head outside the database.
			s.log.Info("audit", "id", row.ID, "action", row.Action, "actor", row.Actor, "outcome", row.Outcome, "hash", row.Hash)
		}
		return err
	}
}

const draftBeforeKey = "switchyard.audit.draft"

// auditDraft keeps the draft's text before a route that may change it
// (audit.Spec.Config) runs, for auditing's before and after. It runs after
// the sign-in guards.
func (s *Server) auditDraft(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if spec, ok := audit.ForRoute(c.Request().Method, c.Path()); ok && spec.Config && s.store != nil {
			if text, ok := s.draftText(c.Request().Context()); ok {
				c.Set(draftBeforeKey, text)
			}
		}
		return next(c)
	}
}

// auditEntry is the row of a request that was answered with status.
func (s *Server) auditEntry(c echo.Context, spec audit.Spec, status int) rows.AuditEntry {
	r := c.Request()
	facts := audit.Get(c)
	e := rows.AuditEntry{Addr: s.h.SignIn.ClientIP(r), Action: spec.Action, ObjectKind: spec.Object,
		Outcome: rows.OutcomeOf(status), Status: status, Detail: rows.AuditDetail{Method: r.Method, Route: c.Path(), Note: facts.Note}}
	p := httpx.CurrentPrincipal(c)
	switch {
	case strings.HasPrefix(c.Path(), "/admin/api/"):
		e.ActorKind, e.Actor = rows.ActorToken, p.Name
	case p.Name != "":
		e.ActorKind, e.Actor = rows.ActorUser, p.Name
	default:
		e.ActorKind, e.Actor = rows.ActorUser, facts.Actor
	}
	if spec.Param != "-" {
		name := spec.Param
		if name == "" {
			name = "id"
		}
		e.ObjectID = c.Param(name)
	}
	// The name a console form gave its object; only these fields are read,
	// never a password or key field.
	if r.Form != nil {
		for _, f := range []string{"name", "username", "token_name", "label"} {
			if v := strings.TrimSpace(r.Form.Get(f)); v != "" {
				e.ObjectName = v
				break
			}
		}
	}
	if o := facts.Object; o.Kind != "" {
		e.ObjectKind = o.Kind
	}
	if facts.Object.ID != "" {
		e.ObjectID = facts.Object.ID
	}
	if facts.Object.Name != "" {
		e.ObjectName = facts.Object.Name
	}
	e.Actor, e.ObjectID, e.ObjectName = httpx.Clip(e.Actor, httpx.ShownLen), httpx.Clip(e.ObjectID, httpx.ShownLen), httpx.Clip(e.ObjectName, httpx.ShownLen)
	return e
}

// statusOf is the status a request was (or will be) answered with: the
// handler's error's, or what it wrote.
func statusOf(c echo.Context, err error) int {
	if err == nil {
		if st := c.Response().Status; st != 0 {
			return st
		}
		return http.StatusOK
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	if c.Response().Committed {
		return c.Response().Status
	}
	return http.StatusInternalServerError
}

// draftText is the draft's canonical text, for a change's before and
// after; ok is false when it could not be read (the row is written
// without them).
func (s *Server) draftText(ctx context.Context) (string, bool) {
	snap, _, err := s.store.Draft(ctx)
	if err != nil {
		s.log.Warn("audit: read the draft", "err", err)
		return "", false
	}
	b, err := config.Encode(snap)
	if err != nil {
		return "", false
	}
	return string(b), true
}
