package live

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Notice is what one instance tells the others through PostgreSQL's
// LISTEN/NOTIFY on the configuration channel. Its payload is text on the
// wire; Payload and ParseNotice are the only places that know the text.
type Notice struct {
	Kind NoticeKind
	// Version is the version published, for NoticeVersion.
	Version int64
}

// NoticeKind says what changed.
type NoticeKind uint8

const (
	// NoticeUnknown is a payload this build does not know (sent by a newer
	// instance, or by hand): something may have changed.
	NoticeUnknown NoticeKind = iota
	// NoticeVersion: a version was published.
	NoticeVersion
	// NoticeKeys: caller keys were created or revoked.
	NoticeKeys
	// NoticeReconnect is never sent: the listener makes it after a lost
	// connection, since notices may have been missed meanwhile.
	NoticeReconnect
)

// Notices that carry no parameter.
var (
	KeysNotice      = Notice{Kind: NoticeKeys}
	ReconnectNotice = Notice{Kind: NoticeReconnect}
)

// VersionNotice says version n was published.
func VersionNotice(n int64) Notice { return Notice{Kind: NoticeVersion, Version: n} }

// ErrUnknownNotice is ParseNotice's error for a payload it does not know.
var ErrUnknownNotice = errors.New("live: unknown notice")

const versionPrefix = "version:"

// Payload is the notice's text on the wire: "version:N", "keys" or
// "reconnect"; "" for NoticeUnknown.
func (n Notice) Payload() string {
	switch n.Kind {
	case NoticeVersion:
		return versionPrefix + strconv.FormatInt(n.Version, 10)
	case NoticeKeys:
		return "keys"
	case NoticeReconnect:
		return "reconnect"
	}
	return ""
}

// ParseNotice reads a payload. One it does not know is a NoticeUnknown
// with ErrUnknownNotice.
func ParseNotice(payload string) (Notice, error) {
	switch payload {
	case "keys":
		return KeysNotice, nil
	case "reconnect":
		return ReconnectNotice, nil
	}
	if rest, ok := strings.CutPrefix(payload, versionPrefix); ok {
		if n, err := strconv.ParseInt(rest, 10, 64); err == nil && n > 0 {
			return VersionNotice(n), nil
		}
	}
	return Notice{}, fmt.Errorf("%w: %q", ErrUnknownNotice, payload)
}

// ReloadsKeys reports whether the notice means the caller keys must be
// read again even when their state looks unchanged.
func (n Notice) ReloadsKeys() bool { return n.Kind == NoticeKeys || n.Kind == NoticeReconnect }
