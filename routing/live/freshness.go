package live

import (
	"errors"
	"fmt"
	"strings"
)

// Copy is one cached copy a Cache found: opened, or why it does not open.
type Copy struct {
	Where  string // e.g. "disk /var/lib/switchyard/lastgood/config.sealed"
	Cached Cached
	Err    error // not nil: the copy is unusable
}

// Witness is a configuration epoch kept outside the cache's disk, where
// someone who can only write that disk cannot roll it back: PostgreSQL's
// epoch, or the mark the cache keeps in Redis.
type Witness struct {
	Name  string // "postgres", "redis"
	Epoch int64
}

// Pick is the copy a start from the cache serves and the witness it was
// checked against (Name "" when none answered and unwitnessed copies are
// allowed).
type Pick struct {
	Where   string
	Version int64
	Epoch   int64
	Witness Witness
	Cached  Cached
}

// StaleError refuses a copy older than what a witness knows this
// installation has published or revoked.
type StaleError struct {
	Where          string
	Version, Epoch int64
	Witness        Witness
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("the newest cached copy (%s: version %d, epoch %d) is older than what this installation has reached (epoch %d, according to %s): serving it could bring back a revoked caller key or a replaced configuration",
		e.Where, e.Version, e.Epoch, e.Witness.Epoch, e.Witness.Name)
}

// UnusableError says that copies exist but none opens.
type UnusableError struct{ Copies []Copy }

func (e *UnusableError) Error() string {
	parts := make([]string, len(e.Copies))
	for i, c := range e.Copies {
		parts[i] = c.Where + ": " + c.Err.Error()
	}
	return "the cached configuration is damaged and there is no other copy (" + strings.Join(parts, "; ") + ")"
}

// UnwitnessedError refuses a copy no witness can vouch for: neither
// PostgreSQL nor Redis answered with an epoch, so a copy put back on disk
// could not be told from the current one.
type UnwitnessedError struct {
	Where          string
	Version, Epoch int64
}

func (e *UnwitnessedError) Error() string {
	return fmt.Sprintf("no witness (PostgreSQL, or the epoch mark in Redis) answered to confirm the cached copy (%s: version %d, epoch %d) is current; set SWITCHYARD_CONFIG_CACHE_UNWITNESSED=serve to serve it anyway",
		e.Where, e.Version, e.Epoch)
}

// Choose picks the copy a start from the cache serves: the intact copy
// with the highest epoch (then version), provided no witness knows a
// higher epoch. Without a witness it is refused unless unwitnessed is set.
// It returns ErrNoCache when there is no copy at all, an *UnusableError
// when none opens, a *StaleError or an *UnwitnessedError.
func Choose(copies []Copy, witnesses []Witness, unwitnessed bool) (Pick, error) {
	var best *Copy
	for i := range copies {
		c := &copies[i]
		if c.Err != nil {
			continue
		}
		if best == nil || c.Cached.Epoch > best.Cached.Epoch || (c.Cached.Epoch == best.Cached.Epoch && c.Cached.Version > best.Cached.Version) {
			best = c
		}
	}
	if best == nil {
		if len(copies) == 0 {
			return Pick{}, ErrNoCache
		}
		return Pick{}, &UnusableError{Copies: copies}
	}
	p := Pick{Where: best.Where, Version: best.Cached.Version, Epoch: best.Cached.Epoch, Cached: best.Cached}
	for _, w := range witnesses {
		if p.Witness.Name == "" || w.Epoch > p.Witness.Epoch {
			p.Witness = w
		}
	}
	switch {
	case p.Witness.Name == "" && !unwitnessed:
		return Pick{}, &UnwitnessedError{Where: p.Where, Version: p.Version, Epoch: p.Epoch}
	case p.Witness.Name != "" && p.Epoch < p.Witness.Epoch:
		return Pick{}, &StaleError{Where: p.Where, Version: p.Version, Epoch: p.Epoch, Witness: p.Witness}
	}
	return p, nil
}

// IsRefused reports whether err is Choose refusing copies that exist
// (damaged, stale or unwitnessed), as opposed to there being none.
func IsRefused(err error) bool {
	var s *StaleError
	var u *UnusableError
	var w *UnwitnessedError
	return errors.As(err, &s) || errors.As(err, &u) || errors.As(err, &w)
}
