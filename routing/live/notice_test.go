package live

import (
	"errors"
	"testing"
)

func TestNoticePayloadRoundTrips(t *testing.T) {
	for _, n := range []Notice{VersionNotice(1), VersionNotice(9_007_199_254_740_993), KeysNotice, ReconnectNotice} {
		got, err := ParseNotice(n.Payload())
		if err != nil || got != n {
			t.Errorf("ParseNotice(%q) = %+v, %v; want %+v", n.Payload(), got, err, n)
		}
	}
}

func TestNoticeWireText(t *testing.T) {
	// Instances of different builds share the channel: the text is the
	// protocol and must not drift.
	for n, want := range map[Notice]string{VersionNotice(42): "version:42", KeysNotice: "keys", ReconnectNotice: "reconnect"} {
		if got := n.Payload(); got != want {
			t.Errorf("%+v.Payload() = %q, want %q", n, got, want)
		}
	}
}

func TestParseNoticeRefusesUnknownPayloads(t *testing.T) {
	for _, p := range []string{"", "ping", "version:", "version:x", "version:-1", "version:0", "KEYS", "keys "} {
		n, err := ParseNotice(p)
		if !errors.Is(err, ErrUnknownNotice) || n.Kind != NoticeUnknown {
			t.Errorf("ParseNotice(%q) = %+v, %v; want NoticeUnknown and ErrUnknownNotice", p, n, err)
		}
	}
}

func TestReloadsKeys(t *testing.T) {
	for n, want := range map[Notice]bool{VersionNotice(3): false, KeysNotice: true, ReconnectNotice: true, {}: false} {
		if got := n.ReloadsKeys(); got != want {
			t.Errorf("%+v.ReloadsKeys() = %v, want %v", n, got, want)
		}
	}
}
