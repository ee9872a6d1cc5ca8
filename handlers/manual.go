package handlers

import (
	"io/fs"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/static"
	"switchyard/views/pages/manual"
)

// book is the embedded manual, rendered on first use.
var book = sync.OnceValues(func() (*manual.Book, error) {
	sub, err := fs.Sub(static.Manual, "manual")
	if err != nil {
		return nil, err
	}
	return manual.Load(sub)
})

// Manual shows a page of the operator manual: /manual/ is its contents,
// /manual/settings.md a page.
func (h *Handler) Manual(c echo.Context) error {
	b, err := book()
	if err != nil {
		return err
	}
	doc, ok := b.Page(c.Param("page"))
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "The manual has no page "+c.Param("page")+".")
	}
	v := manual.View{Page: h.page(c, doc.Title, "manual"), Doc: doc, Contents: b.Pages()}
	return httpx.Render(c, http.StatusOK, manual.Show(v), nil)
}
