package rows

import "errors"

// ErrAliasesChanged refuses an alias edit made on a list that has changed
// since the operator saw it (another edit moved or removed the alias).
var ErrAliasesChanged = errors.New("store: the route group's aliases changed meanwhile")
