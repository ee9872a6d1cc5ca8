package live

import (
	"errors"
	"strings"
	"testing"
)

func copyAt(where string, version, epoch int64) Copy {
	return Copy{Where: where, Cached: Cached{Version: version, Epoch: epoch}}
}

// The freshness rule: the intact copy with the highest epoch is served
// only if no witness knows a higher one; ties on epoch go to the higher
// version; without a witness it is refused unless allowed.
func TestChooseComparesEpochsAgainstTheWitnesses(t *testing.T) {
	damaged := Copy{Where: "disk /x", Err: errors.New("it does not open")}
	cases := []struct {
		name        string
		copies      []Copy
		witnesses   []Witness
		unwitnessed bool
		want        string // Where of the pick, or the error type
	}{
		{"equal to the witness", []Copy{copyAt("disk", 7, 12)}, []Witness{{"redis", 12}}, false, "disk"},
		{"newer than the witness", []Copy{copyAt("disk", 7, 13)}, []Witness{{"redis", 12}}, false, "disk"},
		{"older than redis", []Copy{copyAt("disk", 7, 11)}, []Witness{{"redis", 12}}, false, "stale"},
		{"older than postgres, redis agrees", []Copy{copyAt("disk", 7, 11)}, []Witness{{"redis", 11}, {"postgres", 14}}, false, "stale"},
		{"newest copy wins", []Copy{copyAt("disk", 7, 11), copyAt("redis", 8, 14)}, []Witness{{"redis", 14}}, false, "redis"},
		{"epoch beats version", []Copy{copyAt("disk", 9, 11), copyAt("redis", 8, 14)}, nil, true, "redis"},
		{"version breaks an epoch tie", []Copy{copyAt("disk", 9, 14), copyAt("redis", 8, 14)}, []Witness{{"redis", 14}}, false, "disk"},
		{"a damaged copy is skipped", []Copy{damaged, copyAt("redis", 8, 14)}, []Witness{{"redis", 14}}, false, "redis"},
		{"no witness, refused", []Copy{copyAt("disk", 7, 11)}, nil, false, "unwitnessed"},
		{"no witness, allowed", []Copy{copyAt("disk", 7, 11)}, nil, true, "disk"},
		{"only damaged copies", []Copy{damaged}, []Witness{{"redis", 1}}, true, "unusable"},
		{"no copy", nil, []Witness{{"redis", 1}}, true, "none"},
	}
	for _, c := range cases {
		p, err := Choose(c.copies, c.witnesses, c.unwitnessed)
		var stale *StaleError
		var unusable *UnusableError
		var unw *UnwitnessedError
		got := p.Where
		switch {
		case errors.As(err, &stale):
			got = "stale"
		case errors.As(err, &unusable):
			got = "unusable"
		case errors.As(err, &unw):
			got = "unwitnessed"
		case errors.Is(err, ErrNoCache):
			got = "none"
		case err != nil:
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if (got == "stale" || got == "unusable" || got == "unwitnessed") != IsRefused(err) {
			t.Errorf("%s: IsRefused(%v) is wrong", c.name, err)
		}
	}
}

// A damaged copy with no other copy says it is damaged and where, never
// that nothing was ever loaded here; a stale one says against what.
func TestRefusalMessagesSayWhichCopyAndWhy(t *testing.T) {
	_, err := Choose([]Copy{{Where: "disk /var/lib/sy/config.sealed", Err: errors.New("it does not open: damaged, or sealed with another SWITCHYARD_SECRET_KEY")}}, nil, true)
	msg := err.Error()
	for _, want := range []string{"damaged and there is no other copy", "disk /var/lib/sy/config.sealed", "it does not open"} {
		if !strings.Contains(msg, want) {
			t.Errorf("damaged-copy message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "never loaded") {
		t.Errorf("damaged-copy message %q claims nothing was loaded", msg)
	}
	_, err = Choose([]Copy{copyAt("disk /c", 7, 11)}, []Witness{{"postgres", 14}}, false)
	if msg := err.Error(); !strings.Contains(msg, "version 7, epoch 11") || !strings.Contains(msg, "epoch 14, according to postgres") || !strings.Contains(msg, "revoked caller key") {
		t.Errorf("stale message %q", msg)
	}
}
