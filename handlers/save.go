package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"switchyard/handlers/httpx"
	"switchyard/routing/config"
)

// saving is the console's create-or-update flow of one kind of object,
// shared by providers, tenants, route groups, logic models and callers:
// read the optional :id, parse the form, create or update when the form is
// valid, then answer either the form again with its per-field errors (422)
// or a flash on the way to where the object is shown. A store error that is
// not about fields is a real failure (not found is a 404).
type saving[T any] struct {
	// parse reads the form; id is 0 for a new object. err is a real failure.
	parse  func(c echo.Context, id int64) (v T, errs config.FieldErrors, err error)
	create func(ctx context.Context, v T) (int64, error)
	update func(ctx context.Context, id int64, v T) error
	// storeErrors, when set, places the store's field errors on the form.
	storeErrors func(v T, fe config.FieldErrors) config.FieldErrors
	// invalid renders the form again with errs, with status 422.
	invalid func(c echo.Context, id int64, v T, errs config.FieldErrors) error
	// done names the flash and where to go after a save.
	done func(id int64, v T, created bool) (flash, next string)
}

// run answers one POST of the form.
func (s saving[T]) run(h *Handler, c echo.Context) error {
	var id int64
	if c.Param("id") != "" {
		var err error
		if id, err = idParam(c, "id"); err != nil {
			return err
		}
	}
	v, errs, err := s.parse(c, id)
	if err != nil {
		return err
	}
	created := id == 0
	if len(errs) == 0 {
		ctx := c.Request().Context()
		if created {
			id, err = s.create(ctx, v)
		} else {
			err = s.update(ctx, id, v)
		}
		if err != nil {
			fe, ok := fieldErrors(err)
			if !ok {
				return notFoundOr(err)
			}
			if s.storeErrors != nil {
				fe = s.storeErrors(v, fe)
			}
			errs = fe
		}
	}
	if len(errs) > 0 {
		return s.invalid(c, id, v, errs)
	}
	flash, next := s.done(id, v, created)
	h.flash(c, flash)
	return httpx.Redirect(c, next)
}

// deleting is the console's delete flow of the object named by the :id
// parameter: a refusal because other objects still refer to it is flashed
// in red on the way back to where the object is shown, a deletion is
// flashed on the way to the list. Not found is a 404.
type deleting struct {
	del func(ctx context.Context, id int64) error
	// refused words a refusal, why naming what still refers to the object;
	// nil says "Not deleted: " and why.
	refused func(why string) string
	// shown is where the object is shown; nil is the list.
	shown   func(id int64) string
	deleted string
	list    string
}

// run answers one delete POST.
func (d deleting) run(h *Handler, c echo.Context) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := d.del(c.Request().Context(), id); err != nil {
		fe, ok := fieldErrors(err)
		if !ok {
			return notFoundOr(err)
		}
		msg, back := "Not deleted: "+fe["_"], d.list
		if d.refused != nil {
			msg = d.refused(fe["_"])
		}
		if d.shown != nil {
			back = d.shown(id)
		}
		h.flashError(c, msg)
		return httpx.Redirect(c, back)
	}
	h.flash(c, d.deleted)
	return httpx.Redirect(c, d.list)
}
