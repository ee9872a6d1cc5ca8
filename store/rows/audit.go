package rows

import "time"

// AuditActorKind is who did an audited action: a console user, an admin
// API token, the server itself or a command run on a host.
type AuditActorKind string

// The kinds of actors.
const (
	ActorUser   AuditActorKind = "user"
	ActorToken  AuditActorKind = "token"
	ActorSystem AuditActorKind = "system"
	ActorCLI    AuditActorKind = "cli"
)

// AuditAction is the typed code of an audited action, "area.verb" such as
// "caller_key.create". The codes of console and admin-API routes are
// listed with their routes in handlers/audit; the command line's here.
type AuditAction string

// Actions recorded outside the HTTP routes.
const (
	// AuditUserPasswordReset: a password reset, from the console or by
	// `switchyard reset-password`.
	AuditUserPasswordReset AuditAction = "user.password_reset"
	// AuditFirstAdmin: the server created the first admin on an empty
	// database (actor kind system).
	AuditFirstAdmin AuditAction = "user.create"
)

// AuditOutcome is how an audited action ended.
type AuditOutcome string

// The outcomes: done; refused (the answer was 4xx: a wrong password, a
// role without the right, invalid input, a refused publish); failed (5xx).
const (
	OutcomeOK      AuditOutcome = "ok"
	OutcomeRefused AuditOutcome = "refused"
	OutcomeFailed  AuditOutcome = "failed"
)

// OutcomeOf is the outcome of an HTTP answer's status.
func OutcomeOf(status int) AuditOutcome {
	switch {
	case status >= 500:
		return OutcomeFailed
	case status >= 400:
		return OutcomeRefused
	}
	return OutcomeOK
}

// AuditDetail is what a row carries beyond its columns. It never holds a
// secret: Before and After are canonical configuration text, where secret
// values are never written (keys appear as fingerprints, secret header
// values blank).
type AuditDetail struct {
	// Method and Route name the HTTP route ("POST /callers/:id/keys").
	Method string `json:"method,omitempty"`
	Route  string `json:"route,omitempty"`
	// Before and After are the changed lines of the draft configuration
	// (with a line of context), "" when the action changed none.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Note is a short fact of the action ("version 12", "2 sessions ended").
	Note string `json:"note,omitempty"`
}

// AuditEntry is one row of the audit trail.
type AuditEntry struct {
	ID         int64
	At         time.Time
	Actor      string
	ActorKind  AuditActorKind
	Addr       string
	Action     AuditAction
	ObjectKind string
	ObjectID   string
	ObjectName string
	Outcome    AuditOutcome
	Status     int
	Detail     AuditDetail
	PrevHash   string
	Hash       string
}

// AuditFilter selects rows of the audit trail; zero fields select all.
type AuditFilter struct {
	Actor  string      // exact actor
	Action AuditAction // exact code, or an area prefix ending in "." ("caller_key.")
	Object string      // matches object kind, id or name
	Text   string      // anywhere in the row, detail included
	Since  time.Time   // at or after
	Until  time.Time   // before
	// BeforeID pages backwards: rows with a smaller id (0: from the newest).
	BeforeID int64
	// Oldest lists oldest first (the export), from after AfterID; BeforeID
	// is then ignored.
	Oldest  bool
	AfterID int64
	Limit   int
}

// AuditBreakKind is what is wrong where the chain breaks.
type AuditBreakKind string

// The ways a chain breaks.
const (
	// BreakEdited: the row's fields no longer give its hash.
	BreakEdited AuditBreakKind = "edited"
	// BreakDeleted: the row's previous hash is no row's: the row before it
	// was deleted (or rewritten with a new hash).
	BreakDeleted AuditBreakKind = "deleted"
	// BreakReordered: the row's previous hash is another row's, one that
	// now stands elsewhere.
	BreakReordered AuditBreakKind = "reordered"
	// BreakTruncated: the last row is not the one the head records: rows
	// were cut from the end.
	BreakTruncated AuditBreakKind = "truncated"
)

// AuditBreak is the first broken link of the chain.
type AuditBreak struct {
	ID   int64 // the row where the chain breaks (for truncated: the last row left)
	Kind AuditBreakKind
	// Other is, for reordered, the id of the row whose hash this row's
	// previous hash is; for truncated, the id the head records.
	Other int64
}

// AuditCheck is the result of walking the chain.
type AuditCheck struct {
	Checked  int64       // rows walked
	HeadID   int64       // the last row's id
	HeadHash string      // the last row's hash: copy it elsewhere to anchor the chain
	Break    *AuditBreak // nil when the chain is whole
}
