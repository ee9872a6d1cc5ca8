package handlers

import (
	"encoding/csv"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"switchyard/store/calllog"
	"switchyard/views/pages/calllogs"
)

// exportPage is how many rows the export reads per query: pages of the
// search's own keyset pagination, each written and flushed before the next
// is read, so memory stays bounded by a page.
const exportPage = 500

// CallLogsExport streams a search as CSV, newest first, at most
// calllogs.ExportCap rows. A filter the search would refuse is answered
// 400/422 with the message as plain text before anything is streamed.
func (h *Handler) CallLogsExport(c echo.Context) error {
	now := time.Now()
	_, cf, err := callLogFilter(c, now)
	if err != nil {
		status := http.StatusUnprocessableEntity
		var bad badInput
		if errors.As(err, &bad) {
			status = http.StatusBadRequest
		}
		return c.String(status, err.Error())
	}
	cf.Cursor, cf.Limit = "", exportPage
	ctx := c.Request().Context()
	// The first page is read before the headers go out, so a refused
	// filter is still an error status.
	page, err := h.CallLogs.Search(ctx, cf)
	var refused *calllog.FilterError
	if errors.As(err, &refused) {
		return c.String(http.StatusBadRequest, refused.Reason)
	}
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	res.Header().Set(echo.HeaderContentDisposition, `attachment; filename="call-logs-`+now.UTC().Format("20060102-150405")+`.csv"`)
	res.Header().Set("Cache-Control", "no-store")
	res.WriteHeader(http.StatusOK)
	w := csv.NewWriter(res)
	_ = w.Write(calllogs.CSVHeader)
	for n := 0; ; {
		for _, r := range page.Rows {
			if n == calllogs.ExportCap {
				break
			}
			_ = w.Write(calllogs.CSVRecord(r))
			n++
		}
		w.Flush()
		res.Flush()
		if w.Error() != nil || page.Next == "" || n >= calllogs.ExportCap {
			return nil // a client gone away ends the export; the status is sent
		}
		cf.Cursor = page.Next
		if page, err = h.CallLogs.Search(ctx, cf); err != nil {
			return nil // mid-stream: the status is sent; the file ends short
		}
	}
}
