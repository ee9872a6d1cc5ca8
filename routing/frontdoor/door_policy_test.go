package frontdoor

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchyard/routing/adapter"
	"switchyard/routing/config"
)

// allCaps declares every capability, so no row's conditional refusal for
// a missing one hides its own outcome.
var allCaps = config.Capabilities{Thinking: true, Vision: true, Tools: true, WebSearch: true, StructuredOutput: true}

// doorCase is one door's table and how to parse a sample of it.
type doorCase struct {
	name   string
	rows   []DoorField
	native config.Protocol
	parse  func(members string) (*adapter.ChatRequest, error)
	door   Door
}

var doorCases = []doorCase{
	{"messages", MessagesPolicy, config.ProtocolAnthropic, func(members string) (*adapter.ChatRequest, error) {
		body := `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]`
		if strings.HasPrefix(members, `"messages"`) || strings.HasPrefix(members, `"max_tokens"`) {
			body = `{"model":"m","max_tokens":9`
			if strings.HasPrefix(members, `"max_tokens"`) {
				body = `{"model":"m","messages":[{"role":"user","content":"hi"}]`
			}
		}
		if members != "" {
			body += "," + members
		}
		return ParseMessagesRequest([]byte(body + "}"))
	}, MessagesDoor{}},
	{"responses", ResponsesPolicy, "", func(members string) (*adapter.ChatRequest, error) {
		body := `{"model":"m","input":"x"`
		if strings.HasPrefix(members, `"input"`) {
			body = `{"model":"m"`
		}
		if members != "" {
			body += "," + members
		}
		r, err := ParseResponsesRequest([]byte(body + "}"))
		if err != nil {
			return nil, err
		}
		return r.Chat, nil
	}, ResponsesDoor{}},
}

// TestDoorPolicies parses every row's sample and checks that each
// translated protocol does what the row says: a door-decided row is
// dropped (and named under the row's name), refused (its name), or carried
// (neither); a row handed to a chat field sets that field, and the
// protocol's own decision of it holds under the door's name; a native
// deployment gets everything; a stateless row is a 400.
func TestDoorPolicies(t *testing.T) {
	for _, dc := range doorCases {
		for _, row := range dc.rows {
			t.Run(dc.name+"/"+row.Field, func(t *testing.T) {
				r, err := dc.parse(row.Sample)
				if row.Stateless {
					var re *RequestError
					if !errors.As(err, &re) || re.Code != CodeStateless {
						t.Fatalf("%v, want a stateless refusal", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if row.Header != "" {
					name, value, _ := strings.Cut(row.Header, ": ")
					hr, ok := dc.door.(HeaderReader)
					if !ok {
						t.Fatalf("a header row on a door that reads no headers")
					}
					hr.ReadHeaders(r, http.Header{http.CanonicalHeaderKey(name): {value}}, "")
				}
				checkNative(t, dc, r)
				for _, p := range adapter.Protocols {
					if p.Protocol == dc.native {
						continue
					}
					checkDoorRow(t, row, p.Protocol, r)
				}
			})
		}
	}
}

// checkNative: a deployment speaking the door's protocol judges nothing.
func checkNative(t *testing.T, dc doorCase, r *adapter.ChatRequest) {
	t.Helper()
	p, caps := dc.native, config.Capabilities{}
	if p == "" {
		p, caps = config.ProtocolOpenAI, config.Capabilities{ResponsesAPI: true}
	}
	if v := adapter.Judge(p, r, caps, true); !v.Native || v.Refused != "" {
		t.Fatalf("native deployment: %+v", v)
	}
}

// checkDoorRow checks one row's outcome on protocol p.
func checkDoorRow(t *testing.T, row DoorField, p config.Protocol, r *adapter.ChatRequest) {
	t.Helper()
	v := adapter.Judge(p, r, allCaps, false)
	name := row.Field
	if name == adapter.AnyOtherField {
		if len(r.Drops) == 0 {
			t.Fatalf("the unknown field is not dropped: %+v", r)
		}
		name = r.Drops[len(r.Drops)-1]
	}
	if row.Chat != "" {
		checkChatRow(t, row, p, r, v)
		return
	}
	refused := dropName(v.Refused)
	switch row.Decision {
	case adapter.Drop:
		if !slices.Contains(v.Dropped, name) || v.Refused != "" {
			t.Errorf("%s: verdict %+v, want %q dropped", p, v, name)
		}
	case adapter.Refuse:
		if refused != name && !strings.HasPrefix(refused, name+"[") {
			t.Errorf("%s: refused %q, want %q", p, v.Refused, name)
		}
	case adapter.Translate, adapter.Pass:
		if v.Refused != "" || slices.Contains(v.Dropped, name) {
			t.Errorf("%s: verdict %+v, want %q carried", p, v, name)
		}
	default:
		t.Fatalf("row without a decision")
	}
}

// checkChatRow: the row's chat field (or hint) is set, and the protocol's
// decision of it is reported under the row's name.
func checkChatRow(t *testing.T, row DoorField, p config.Protocol, r *adapter.ChatRequest, v adapter.Verdict) {
	t.Helper()
	set := r.Set.Has(row.Chat) || row.Chat == "effort" && r.Effort != ""
	if !set && row.Chat != "messages" && row.Chat != "model" {
		t.Fatalf("the sample does not set %s (set: %v)", row.Chat, r.Set.Names())
	}
	rule, _ := adapter.FieldRuleOf(p, row.Chat)
	switch {
	case rule.RefuseIf != nil && rule.RefuseIf(r, allCaps) || rule.Decision == adapter.Refuse:
		if v.Refused != row.Field {
			t.Errorf("%s: refused %q, want %q (the chat field %s)", p, v.Refused, row.Field, row.Chat)
		}
	case rule.DropIf != nil && rule.DropIf(r, allCaps) || rule.Decision == adapter.Drop:
		if !slices.Contains(v.Dropped, row.Field) {
			t.Errorf("%s: verdict %+v, want %q dropped (the chat field %s)", p, v, row.Field, row.Chat)
		}
	default:
		if v.Refused != "" || slices.Contains(v.Dropped, row.Field) {
			t.Errorf("%s: verdict %+v, want %q carried", p, v, row.Field)
		}
	}
}

// The manual's field tables are the code's (go test -update rewrites them).
// Each table sits between its markers in whichever page of the manual
// (static/manual/*.md) holds it, exactly once.
func TestFieldPoliciesManual(t *testing.T) {
	pages, err := filepath.Glob("../../static/manual/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no manual pages under static/manual (%v)", err)
	}
	texts := map[string]string{}
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts[p] = string(raw)
	}
	changed := map[string]bool{}
	for marker, want := range map[string]string{
		"messages-fields":  DoorPolicyMarkdown(MessagesPolicy, config.ProtocolAnthropic, "Anthropic, Claude on Bedrock (native)"),
		"responses-fields": DoorPolicyMarkdown(ResponsesPolicy, "", "OpenAI with `responses_api` (native)"),
		"field-tables":     adapter.FieldTablesMarkdown(),
	} {
		begin, end := "<!-- "+marker+":begin -->\n", "<!-- "+marker+":end -->"
		var holders []string
		for p, s := range texts {
			if strings.Contains(s, begin) {
				holders = append(holders, p)
			}
		}
		if len(holders) != 1 {
			t.Errorf("the %q marker is in %d manual pages %v, want exactly one", strings.TrimSpace(begin), len(holders), holders)
			continue
		}
		p, s := holders[0], texts[holders[0]]
		i, j := strings.Index(s, begin), strings.Index(s, end)
		if j < i || strings.Count(s, begin) != 1 {
			t.Errorf("%s: the %q … %q markers are out of order or repeated", p, strings.TrimSpace(begin), end)
			continue
		}
		if got := s[i+len(begin) : j]; got != want {
			if updateManual() {
				texts[p], changed[p] = s[:i+len(begin)]+want+s[j:], true
				continue
			}
			t.Errorf("%s: the %s table differs from the code's; run go test ./routing/frontdoor -run TestFieldPoliciesManual -update", p, marker)
		}
	}
	for p := range changed {
		if err := os.WriteFile(p, []byte(texts[p]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
