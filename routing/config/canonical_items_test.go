package config_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"switchyard/routing/config"
	"switchyard/routing/config/configtest"
)

// tricky is a configuration whose text exercises the emitter's choices that
// depend on position: long texts folded at the 80th column, multi-line
// texts, strings that must be quoted, unicode, empty lists.
func tricky() config.Snapshot {
	s := configtest.Generate(configtest.Small, "http://127.0.0.1:9/v1")
	long := strings.Repeat("a long note that goes on and on past the eightieth column ", 4)
	s.Providers[0].Notes = long
	s.Providers[1].Notes = "first line\nsecond line\n  indented third\n"
	s.Providers[2].Notes = "yes"
	s.LogicModels[0].Description = ": starts with a colon # and has a hash"
	s.LogicModels[1].Description = "  leading spaces, trailing  "
	s.LogicModels[2].Description = "中文描述，模型 — with “quotes” and 'apostrophes'"
	s.RouteGroups[0].Description = "123"
	s.RouteGroups[1].Description = long + "\nand a second line that is also " + long
	s.Callers[0].BusinessLine = "- looks like a list item"
	s.Tenants = append(s.Tenants, config.Tenant{Name: "t-null", Description: "null"})
	s.LogicModels[3].Deployments = nil
	// Alias patterns the emitter quotes ('*' and '?' opening a plain
	// scalar read as an alias or a mapping key), and the agent settings.
	s.RouteGroups[0].Aliases = []config.ModelAlias{{Pattern: "*-codex", Tier: config.TierDeep}, {Pattern: "? x", Tier: config.TierFast},
		{Pattern: "claude-opus-*", LogicModel: s.LogicModels[0].Code}, {Pattern: "o3*", Tier: config.TierDeep}}
	s.LogicModels[0].Deployments[0].Capabilities.WebSearch = true
	s.LogicModels[0].Deployments[0].StrictFields = true
	return s
}

// wholeEncode is the canonical text as one encoder writes the whole snapshot.
func wholeEncode(t *testing.T, s config.Snapshot) []byte {
	t.Helper()
	c := config.Clone(s)
	config.Canonicalize(&c)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&c); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wholeDecode decodes text with one decoder, as Decode did before it went
// item by item.
func wholeDecode(text []byte) (config.Snapshot, error) {
	var s config.Snapshot
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return s, err
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return s, errors.New("more than one document")
	}
	if s.Format != config.FormatV1 {
		return s, errors.New("wrong format")
	}
	config.Canonicalize(&s)
	return s, nil
}

// TestEncodeMatchesWholeDocument: encoding item by item writes exactly the
// bytes of a whole-document encode, so versions stored before compare equal.
func TestEncodeMatchesWholeDocument(t *testing.T) {
	for name, s := range map[string]config.Snapshot{
		"tricky":    tricky(),
		"generated": configtest.Generate(configtest.Size{Tenants: 3, Providers: 12, Deployments: 400, Groups: 40, Callers: 40}, "http://127.0.0.1:9/v1"),
		"empty":     {},
	} {
		got, err := config.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := wholeEncode(t, s); !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("%s: item-by-item text differs from the whole document at byte %d:\n%q\nvs\n%q", name, i, got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
		}
	}
}

// TestDecodeMatchesWholeDecoder: decoding item by item gives what one
// decoder gives, for canonical text and for texts laid out otherwise (which
// take the whole decoder), and refuses what it refuses.
func TestDecodeMatchesWholeDecoder(t *testing.T) {
	canon, err := config.Encode(tricky())
	if err != nil {
		t.Fatal(err)
	}
	c := string(canon)
	texts := map[string]string{
		"canonical":          c,
		"comments and blank": "# exported\n\n" + strings.Replace(c, "providers:\n", "providers:\n  # the vendors\n\n", 1),
		"flow list":          strings.Replace(c, "tenants:\n", "tenants: [{name: flow, id: 9}]\ntenants_was:\n", 1),
		"items at margin":    strings.ReplaceAll(c, "\n  - ", "\n- "),
		"json":               `{"format":"switchyard/v1","tenants":[{"id":1,"name":"j"}]}`,
		"unknown field":      strings.Replace(c, "    name: provider-000\n", "    name: provider-000\n    nmae: typo\n", 1),
		"unknown key":        c + "extras: []\n",
		"repeated key":       c + "tenants: []\n",
		"second document":    c + "---\nformat: switchyard/v1\n",
		"anchor and alias":   strings.Replace(strings.Replace(c, "  - id: 0\n    name: tenant-00\n", "  - &t id: 0\n    name: tenant-00\n", 1), "  - id: 0\n    name: tenant-01\n", "  - <<: *t\n    name: tenant-01\n", 1),
		"null list":          strings.Replace(c, "tenants:\n", "tenants:\nnothing_here:\n", 1),
		"wrong format":       strings.Replace(c, "format: switchyard/v1", "format: switchyard/v2", 1),
		"no format":          strings.Replace(c, "format: switchyard/v1\n", "", 1),
		"empty":              "",
		"a scalar":           "just text\n",
		"bad indentation":    strings.Replace(c, "    name: provider-001\n", "   name: provider-001\n", 1),
	}
	for name, text := range texts {
		got, gotErr := config.Decode([]byte(text))
		want, wantErr := wholeDecode([]byte(text))
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: Decode error %v, whole decoder error %v", name, gotErr, wantErr)
			continue
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Decode and the whole decoder disagree", name)
		}
	}
	if _, ok := config.DecodeByItem([]byte(c)); !ok {
		t.Error("canonical text did not take the item-by-item path")
	}
	for _, name := range []string{"flow list", "items at margin", "json", "unknown field", "repeated key", "second document", "anchor and alias"} {
		if _, ok := config.DecodeByItem([]byte(texts[name])); ok {
			t.Errorf("%s: took the item-by-item path", name)
		}
	}
}
