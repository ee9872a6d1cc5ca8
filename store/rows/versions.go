package rows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchyard/routing/config"
)

// ErrDraftChanged refuses a publish whose draft changed after the operator
// reviewed it.
var ErrDraftChanged = errors.New("the draft changed since it was checked; review the dry-run again before publishing")

// ErrNothingToPublish refuses a publish identical to the live version.
var ErrNothingToPublish = errors.New("the draft is identical to the live version; there is nothing to publish")

// ChecksFailedError refuses a publish whose dry-run has blocking findings:
// errors, and findings that need an acknowledgement the publish did not
// give (Blocking lists both).
type ChecksFailedError struct {
	Result   config.Result
	Blocking []config.Finding
}

func (e *ChecksFailedError) Error() string {
	errs := e.Blocking
	msgs := make([]string, 0, len(errs))
	for _, f := range errs {
		msgs = append(msgs, f.Check+": "+f.Message)
	}
	return fmt.Sprintf("publish refused: %d dry-run finding(s): %s", len(errs), strings.Join(msgs, "; "))
}

// Version is one published configuration.
type Version struct {
	Number        int64     `db:"number" json:"number"`
	Author        string    `db:"author" json:"author"`
	CreatedAt     time.Time `db:"created_at" json:"created_at"`
	Message       string    `db:"message" json:"message"`
	Snapshot      string    `db:"snapshot" json:"snapshot,omitempty"`
	Checks        []byte    `db:"checks" json:"-"`
	RollbackOf    *int64    `db:"rollback_of" json:"rollback_of,omitempty"`
	DraftRevision int64     `db:"draft_revision" json:"-"`
}

// CheckResults decodes the stored dry-run result.
func (v Version) CheckResults() config.Result {
	var r config.Result
	_ = json.Unmarshal(v.Checks, &r)
	return r
}

// Standing lists the acknowledgements in force on v: a later publish does
// not ask again for a finding one of them names (same ack).
func (v Version) Standing() []config.Standing {
	return config.StandingAcks(v.CheckResults().Acknowledged, v.Number, v.Author)
}

// PublishInput describes a publish.
type PublishInput struct {
	Author  string
	Message string
	// ExpectedRevision, when set, is the draft revision the operator
	// reviewed; a different current revision refuses the publish.
	ExpectedRevision *int64
	// Check runs the dry-run over the snapshot about to be published.
	Check func(config.Snapshot) config.Result
	// RollbackTo, when set, first resets the draft to that version.
	RollbackTo int64
	// Acknowledge names the findings the operator accepts (a tier that
	// will answer 503, by group/tier); each must match a finding that
	// needs one, and they are recorded on the version. A finding the live
	// version's acknowledgements already name needs none: it is carried
	// over and recorded again (see Version.Standing).
	Acknowledge []config.Ack
}

// PublishOutcome is what a publish did.
type PublishOutcome struct {
	Version Version
	Notes   []ReplaceNote // adjustments a rollback made (missing keys)
}

// ConfigOnly decodes a version's text and encodes it again without the
// caller keys versions made before keys left the configuration listed: what
// a draft compares with. Text that does not decode is returned as it is.
func ConfigOnly(text string) (config.Snapshot, []byte) {
	snap, err := config.Decode([]byte(text))
	if err != nil {
		return snap, []byte(text)
	}
	WithoutCallerKeys(&snap)
	b, err := config.Encode(snap)
	if err != nil {
		return snap, []byte(text)
	}
	return snap, b
}

// ConfigOnlyText is a version's text as a draft compares with it: without
// the caller keys older versions listed.
func ConfigOnlyText(text string) string {
	_, b := ConfigOnly(text)
	return string(b)
}

// WithoutCallerKeys clears the caller keys older versions listed in their
// content, so they compare with a draft (which no longer lists keys) on
// configuration alone.
func WithoutCallerKeys(s *config.Snapshot) {
	for i := range s.Callers {
		s.Callers[i].Keys = []config.CallerKey{}
	}
}
