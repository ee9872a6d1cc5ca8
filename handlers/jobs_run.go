package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/views/pages/jobs"
)

// JobRunNow asks the workers to run a job at their next check.
func (h *Handler) JobRunNow(c echo.Context) error {
	if h.Jobs == nil {
		return echo.NewHTTPError(http.StatusNotFound, "this instance knows no jobs")
	}
	name := c.Param("name")
	known := false
	list, err := h.Jobs.Jobs(c.Request().Context())
	for _, j := range list {
		known = known || j.Name == name
	}
	if !known && err == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no job "+name)
	}
	if err := h.Jobs.Request(c.Request().Context(), name); err != nil {
		return err
	}
	if httpx.IsPartial(c) {
		b, err := h.jobsBoard(c)
		if err != nil {
			return err
		}
		return httpx.Render(c, http.StatusOK, jobs.BoardView(b), nil)
	}
	h.flash(c, "Requested "+name+": a worker runs it at its next check (within a second or so).")
	return httpx.Redirect(c, "/jobs")
}
