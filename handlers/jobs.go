package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/store/rows"
	"switchyard/views/pages/jobs"
)

// JobRunStore is the storage the Jobs page reads. *store.Store satisfies it.
type JobRunStore interface {
	JobRuns(ctx context.Context, job string, limit int) ([]rows.JobRun, error)
}

// jobHistory is how many runs a job shows.
const jobHistory = 10

func (h *Handler) jobsBoard(c echo.Context) (jobs.Board, error) {
	ctx := c.Request().Context()
	b := jobs.Board{Running: h.Jobs != nil, CanEdit: httpx.CurrentPrincipal(c).Can().RunJobs, CSRF: httpx.CSRFToken(c)}
	if h.Jobs == nil {
		return b, nil
	}
	list, err := h.Jobs.Jobs(ctx)
	if err != nil {
		h.Log.Warn("job states unavailable", "err", err)
		b.Error = "Leases and schedules could not be read from Redis: " + err.Error()
	}
	for _, j := range list {
		runs, err := h.JobLog.JobRuns(ctx, j.Name, jobHistory)
		if err != nil {
			return b, err
		}
		b.Rows = append(b.Rows, jobs.Row{Name: j.Name, Description: j.Description, Every: j.Every, Holder: j.Holder,
			LeaseLeft: j.LeaseLeft, Requested: j.Requested, NextRun: j.NextRun, Runs: jobRunViews(runs)})
	}
	return b, nil
}

// JobsPage shows every singleton job with its lease holder, last run,
// next run and recent runs.
func (h *Handler) JobsPage(c echo.Context) error {
	b, err := h.jobsBoard(c)
	if err != nil {
		return err
	}
	return httpx.Render(c, http.StatusOK, jobs.Show(jobs.Page{Page: h.page(c, "Jobs", "jobs"), Board: b}), jobs.BoardView(b))
}

// jobRunViews turns stored runs into the page's rows.
func jobRunViews(runs []rows.JobRun) []jobs.Run {
	var out []jobs.Run
	for _, r := range runs {
		out = append(out, jobs.Run{StartedAt: r.StartedAt, Instance: r.Instance, Finished: r.FinishedAt.Valid,
			Duration: r.Duration(), Outcome: r.Outcome, Message: r.Message})
	}
	return out
}
