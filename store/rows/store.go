package rows

import "errors"

// ErrNotFound is returned when the requested row does not exist.
var ErrNotFound = errors.New("store: not found")

// ReferencedError refuses a delete because other objects still refer to the
// row; Message names them.
type ReferencedError struct{ Message string }

func (e *ReferencedError) Error() string { return e.Message }
