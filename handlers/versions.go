package handlers

import (
	"context"
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
	"switchyard/views/layout"
	"switchyard/views/pages/versions"
)

// VersionStore is the storage the versions pages and the configuration API
// need: publish, history, import and rollback (which keys a version knows).
// *store.Store satisfies it.
type VersionStore interface {
	DraftReader
	CallerKeys(ctx context.Context, callerNames ...string) ([]rows.CallerKeyInfo, error)
	LatestVersion(ctx context.Context) (rows.Version, error)
	LatestVersionNumber(ctx context.Context) (int64, error)
	Publish(ctx context.Context, in rows.PublishInput) (rows.PublishOutcome, error)
	ReplaceDraft(ctx context.Context, snap config.Snapshot) ([]rows.ReplaceNote, error)
	Version(ctx context.Context, number int64) (rows.Version, error)
	Versions(ctx context.Context, limit int) ([]rows.Version, error)
}

// maxImport bounds an imported snapshot.
const maxImport = 5 << 20

// VersionsList shows the version history.
func (h *Handler) VersionsList(c echo.Context) error {
	vs, err := h.Versions.Versions(c.Request().Context(), 200)
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, versions.List(versions.ListPage{Page: h.page(c, "Versions", "versions"), Versions: versionViews(vs)}), nil)
}

// VersionShow shows one version.
func (h *Handler) VersionShow(c echo.Context) error {
	n, err := idParam(c, "n")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v, err := h.Versions.Version(ctx, n)
	if err != nil {
		return notFoundOr(err)
	}
	live, _ := h.Versions.LatestVersionNumber(ctx)
	p := versions.ShowPage{Page: h.page(c, fmt.Sprintf("Version %d", n), "versions"), Version: versionView(v), IsLive: live == n}
	return httpx.Render(c, http.StatusOK, versions.Show(p), nil)
}

// versionView turns a stored version into the pages' model.
func versionView(v rows.Version) versions.Version {
	return versions.Version{Number: v.Number, Author: v.Author, CreatedAt: v.CreatedAt, Message: v.Message,
		Snapshot: v.Snapshot, Checks: v.CheckResults(), RollbackOf: v.RollbackOf}
}

func versionViews(vs []rows.Version) []versions.Version {
	var out []versions.Version
	for _, v := range vs {
		out = append(out, versionView(v))
	}
	return out
}

// textOf returns the snapshot text of "draft" or a version number.
func (h *Handler) textOf(c echo.Context, which string) (string, error) {
	ctx := c.Request().Context()
	if which == "draft" {
		snap, _, err := h.Versions.Draft(ctx)
		if err != nil {
			return "", err
		}
		b, err := config.Encode(snap)
		return string(b), err
	}
	n, err := strconv.ParseInt(which, 10, 64)
	if err != nil || n <= 0 {
		return "", echo.NewHTTPError(http.StatusBadRequest, "compare a version number or 'draft', not "+strconv.Quote(which))
	}
	v, err := h.Versions.Version(ctx, n)
	if err != nil {
		return "", notFoundOr(err)
	}
	return v.Snapshot, nil
}

// VersionsDiff shows the diff between two versions (or a version and the draft).
func (h *Handler) VersionsDiff(c echo.Context) error {
	from, to := c.QueryParam("from"), c.QueryParam("to")
	if from == "" || to == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "choose two versions to compare")
	}
	a, err := h.textOf(c, from)
	if err != nil {
		return err
	}
	b, err := h.textOf(c, to)
	if err != nil {
		return err
	}
	if from == "draft" || to == "draft" {
		// Older versions listed caller keys, which the draft no longer
		// holds: keys are not configuration, so they are no change.
		a, b = rows.ConfigOnlyText(a), rows.ConfigOnlyText(b)
	}
	var changes []config.Change
	if sa, err := config.Decode([]byte(a)); err == nil {
		if sb, err := config.Decode([]byte(b)); err == nil {
			changes = config.Changes(sa, sb)
		}
	}
	showIDs := c.QueryParam("ids") == "show"
	if !showIDs {
		a, b = config.WithoutIDs(a), config.WithoutIDs(b)
	}
	lines := textdiff.Lines(a, b)
	ins, del := textdiff.Changed(lines)
	vs, err := h.Versions.Versions(c.Request().Context(), 200)
	if err != nil {
		return err
	}
	opts := []string{"draft"}
	for _, v := range vs {
		opts = append(opts, strconv.FormatInt(v.Number, 10))
	}
	p := versions.DiffPage{Page: h.page(c, "Diff", "versions"), From: from, To: to, Options: opts, Lines: textdiff.FoldContext(lines, 3), Ins: ins, Del: del,
		Changes: changes, ShowIDs: showIDs}
	return httpx.Render(c, http.StatusOK, versions.Diff(p), nil)
}

// DryRunPage runs the checks on the draft and offers to publish.
func (h *Handler) DryRunPage(c echo.Context) error {
	p, err := h.dryRunPage(c, "", "", nil)
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, versions.DryRun(p), nil)
}

func (h *Handler) dryRunPage(c echo.Context, message, publishErr string, typed map[string]string) (versions.DryRunPage, error) {
	snap, rev, err := h.Versions.Draft(c.Request().Context())
	if err != nil {
		return versions.DryRunPage{}, err
	}
	p := h.publishPreview(c, h.page(c, "Dry-run", "dryrun"), snap)
	p.Revision, p.Message, p.Error, p.Typed = rev, message, publishErr, typed
	return p, nil
}

// publishPreview checks snap as a publish would (the dry-run and the replay
// of the last day's traffic) and compares it with the live version.
func (h *Handler) publishPreview(c echo.Context, pg layout.Page, snap config.Snapshot) versions.DryRunPage {
	ctx := c.Request().Context()
	result, im, problem, truncated := h.draftCheck(ctx, snap)
	p := versions.DryRunPage{Page: pg, Result: result, Impact: im, ImpactProblem: problem, ImpactTruncated: truncated}
	if p.Page.LiveVersion > 0 {
		if live, err := h.Versions.Version(ctx, p.Page.LiveVersion); err == nil {
			p.Standing = live.Standing()
			// Older versions listed caller keys; keys are not configuration.
			liveText := rows.ConfigOnlyText(live.Snapshot)
			text, _ := config.Encode(snap)
			p.Ins, p.Del = textdiff.Changed(textdiff.Lines(config.WithoutIDs(liveText), config.WithoutIDs(string(text))))
			if ls, err := config.Decode([]byte(liveText)); err == nil {
				p.Changes = config.Changes(ls, snap)
			}
		}
	}
	return p
}

// formAcks reads the acknowledgements typed on a publish form: each
// non-blank "acknowledge" value must be an ack's text form.
func formAcks(c echo.Context) ([]config.Ack, map[string]string, error) {
	params, _ := c.FormParams()
	raw := params["acknowledge"]
	typed := map[string]string{}
	for _, v := range raw {
		if a, err := config.ParseAck(v); err == nil {
			typed[a.String()] = strings.TrimSpace(v)
		}
	}
	acks, err := config.ParseAcks(raw)
	return acks, typed, err
}

// Publish publishes the draft the operator reviewed.
func (h *Handler) Publish(c echo.Context) error {
	msg := strings.TrimSpace(c.FormValue("message"))
	acks, typed, ackErr := formAcks(c)
	if ackErr != nil {
		reason, _ := publishRefusal(ackErr)
		p, err := h.dryRunPage(c, msg, reason, typed)
		if err != nil {
			return err
		}
		return httpx.Render(c, http.StatusUnprocessableEntity, versions.DryRun(p), nil)
	}
	in := rows.PublishInput{Author: httpx.CurrentPrincipal(c).Name, Message: msg, Check: h.publishCheck(c.Request().Context()), Acknowledge: acks}
	if r := c.FormValue("revision"); r != "" {
		rev, err := strconv.ParseInt(r, 10, 64)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, "bad draft revision")
		}
		in.ExpectedRevision = &rev
	}
	out, err := h.Versions.Publish(c.Request().Context(), in)
	if err != nil {
		reason, ok := publishRefusal(err)
		if !ok {
			return err
		}
		p, perr := h.dryRunPage(c, msg, reason, typed)
		if perr != nil {
			return perr
		}
		return httpx.Render(c, http.StatusUnprocessableEntity, versions.DryRun(p), nil)
	}
	h.Log.Info("configuration published", "version", out.Version.Number, "author", out.Version.Author, "message", out.Version.Message, "acknowledged", ackList(acks))
	auditPublished(c, out.Version.Number, acks)
	h.flash(c, fmt.Sprintf("Published version %d. Every instance serves it within seconds.", out.Version.Number))
	return httpx.Redirect(c, "/versions")
}

// publishRefusal explains a refused publish in words, or reports that err is
// a real failure.
func publishRefusal(err error) (string, bool) {
	var cf *rows.ChecksFailedError
	switch {
	case errors.As(err, &cf):
		if n := len(cf.Result.Errors()); n > 0 {
			return fmt.Sprintf("Publish refused: the dry-run has %d blocking error(s). Fix them and publish again.", n), true
		}
		var need []string
		for _, f := range cf.Blocking {
			if f.Ack != nil && !slices.Contains(need, f.Ack.String()) {
				need = append(need, f.Ack.String())
			}
		}
		return "Publish refused: it would take service from callers. Type " + strings.Join(need, " and ") + " below to publish anyway, or change the draft.", true
	case errors.Is(err, rows.ErrDraftChanged):
		return "Publish refused: " + rows.ErrDraftChanged.Error() + ".", true
	case errors.Is(err, rows.ErrNothingToPublish):
		return "Nothing to publish: " + rows.ErrNothingToPublish.Error() + ".", true
	}
	if fe, ok := fieldErrors(err); ok {
		return "Publish refused: " + strings.Join(flatten(fe), "; ") + ".", true
	}
	return "", false
}

// VersionRollback publishes an older version's content as a new version:
// the confirm of the rollback preview, checked as any publish (the dry-run
// and the replay of the last day's traffic).
func (h *Handler) VersionRollback(c echo.Context) error {
	n, err := idParam(c, "n")
	if err != nil {
		return err
	}
	msg := strings.TrimSpace(c.FormValue("message"))
	acks, _, err := formAcks(c)
	if err == nil {
		var out rows.PublishOutcome
		out, err = h.Versions.Publish(c.Request().Context(), rows.PublishInput{Author: httpx.CurrentPrincipal(c).Name, Message: msg, RollbackTo: n, Check: h.publishCheck(c.Request().Context()), Acknowledge: acks})
		if err == nil {
			auditPublished(c, out.Version.Number, acks)
			return h.rolledBack(c, n, out)
		}
	}
	if reason, ok := publishRefusal(err); ok {
		h.flashError(c, "Rollback refused: "+reason)
		return httpx.Redirect(c, fmt.Sprintf("/versions/%d/rollback", n))
	}
	return notFoundOr(err)
}

func (h *Handler) rolledBack(c echo.Context, n int64, out rows.PublishOutcome) error {
	h.Log.Info("configuration rolled back", "version", out.Version.Number, "to", n, "author", out.Version.Author)
	note := ""
	for _, nt := range out.Notes {
		note += " " + nt.Object + ": " + nt.Message + "."
	}
	h.flash(c, fmt.Sprintf("Rolled back: version %d has the content of version %d, and the draft was reset to it.%s", out.Version.Number, n, note))
	return httpx.Redirect(c, "/versions")
}

// ConfigExport downloads the draft's (or a version's) canonical text.
func (h *Handler) ConfigExport(c echo.Context) error {
	which, name := "draft", "switchyard-draft.yaml"
	if v := c.QueryParam("version"); v != "" {
		which, name = v, "switchyard-v"+v+".yaml"
	}
	text, err := h.textOf(c, which)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	return c.Blob(http.StatusOK, "application/yaml; charset=utf-8", []byte(text))
}

// ImportPage shows the import form.
func (h *Handler) ImportPage(c echo.Context) error {
	return httpx.Render(c, http.StatusOK, versions.Import(versions.ImportPage{Page: h.page(c, "Import", "versions")}), nil)
}

func importText(c echo.Context) (string, error) {
	if fh, err := c.FormFile("file"); err == nil && fh.Size > 0 {
		if fh.Size > maxImport {
			return "", fmt.Errorf("the file is larger than %d MB", maxImport>>20)
		}
		f, err := fh.Open()
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxImport))
		return string(b), err
	}
	return c.FormValue("text"), nil
}

// ImportPreview decodes and validates an uploaded snapshot and shows what it
// would change, without changing anything.
func (h *Handler) ImportPreview(c echo.Context) error {
	text, err := importText(c)
	p := versions.ImportPage{Page: h.page(c, "Import", "versions"), Text: text}
	if err != nil {
		p.Error = err.Error()
		return httpx.Render(c, http.StatusUnprocessableEntity, versions.Import(p), nil)
	}
	prev, err := h.previewImport(c, text)
	if err != nil {
		return err
	}
	p.Error, p.Fields = prev.Error, prev.Fields
	if prev.Error != "" || len(prev.Fields) > 0 {
		return httpx.Render(c, http.StatusUnprocessableEntity, versions.Import(p), nil)
	}
	p.Preview, p.Lines, p.Ins, p.Del, p.Result = true, textdiff.FoldContext(prev.Lines, 3), prev.Ins, prev.Del, prev.Result
	return httpx.Render(c, http.StatusOK, versions.Import(p), nil)
}

// importPreview is what an import would do.
type importPreview struct {
	Snapshot config.Snapshot
	Error    string
	Fields   config.FieldErrors
	Lines    []textdiff.Line
	Ins, Del int
	Result   config.Result
}

func (h *Handler) previewImport(c echo.Context, text string) (importPreview, error) {
	var p importPreview
	if strings.TrimSpace(text) == "" {
		p.Error = "Paste a snapshot or choose a file."
		return p, nil
	}
	snap, err := config.Decode([]byte(text))
	if err != nil {
		p.Error = err.Error()
		return p, nil
	}
	if err := config.ValidateSnapshot(snap); err != nil {
		fe, _ := fieldErrors(err)
		p.Fields = fe
		return p, nil
	}
	draft, _, err := h.Versions.Draft(c.Request().Context())
	if err != nil {
		return p, err
	}
	a, _ := config.Encode(draft)
	b, _ := config.Encode(snap)
	p.Snapshot = snap
	p.Lines = textdiff.Lines(string(a), string(b))
	p.Ins, p.Del = textdiff.Changed(p.Lines)
	p.Result = h.dryRun(snap)
	return p, nil
}

// ImportApply replaces the draft with the previewed snapshot.
func (h *Handler) ImportApply(c echo.Context) error {
	text := c.FormValue("text")
	prev, err := h.previewImport(c, text)
	if err != nil {
		return err
	}
	if prev.Error != "" || len(prev.Fields) > 0 {
		p := versions.ImportPage{Page: h.page(c, "Import", "versions"), Text: text, Error: prev.Error, Fields: prev.Fields}
		return httpx.Render(c, http.StatusUnprocessableEntity, versions.Import(p), nil)
	}
	notes, err := h.Versions.ReplaceDraft(c.Request().Context(), prev.Snapshot)
	if err != nil {
		if fe, ok := fieldErrors(err); ok {
			p := versions.ImportPage{Page: h.page(c, "Import", "versions"), Text: text, Fields: fe}
			return httpx.Render(c, http.StatusUnprocessableEntity, versions.Import(p), nil)
		}
		return err
	}
	msg := "Draft replaced by the import. Dry-run and publish to make it live."
	for _, n := range notes {
		msg += " " + n.Object + ": " + n.Message + "."
	}
	h.Log.Info("draft replaced by import", "by", httpx.CurrentPrincipal(c).Name)
	h.flash(c, msg)
	return httpx.Redirect(c, "/dry-run")
}

func ackList(acks []config.Ack) []string {
	out := make([]string, len(acks))
	for i, a := range acks {
		out[i] = a.String()
	}
	return out
}
