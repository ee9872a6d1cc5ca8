package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"switchyard/routing/config"
	"switchyard/store"
	"switchyard/store/secrets"
	"switchyard/store/storetest"
)

// The coding agents most traffic comes from, run as their users run them:
// the real Claude Code and Codex CLIs (pinned, from npm: make installs them
// with e2e/scripts/agents-deps.sh), default settings, nothing but a base URL
// and a caller key, against the gateway with the fake vendor behind it —
// once per upstream protocol. Each answer must reach the client; one run
// per client makes the agent read a file through its own tool (the fake
// model calls the tool, the agent runs it, the result goes back and the
// answer quotes it); and the call log names, per request, what the vendor
// did not get.

// agentRoute is one upstream protocol the agents are pointed at: a route
// group whose three tiers are one deployment.
type agentRoute struct {
	name     string // route group and caller
	protocol config.Protocol
	upstream string // the deployment's upstream model, which the fake echoes
	caps     config.Capabilities
	native   map[string]bool // which client reaches it natively
	key      string
}

// agentBinaries are the CLIs agents-deps.sh installed: AGENT_CLIS is its
// output, "claude:codex".
func agentBinaries(t *testing.T) (claude, codex string) {
	t.Helper()
	parts := strings.Split(strings.TrimRight(os.Getenv("AGENT_CLIS"), ":"), ":")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		t.Fatal("AGENT_CLIS is not set: run the agent tests through make (it installs the pinned CLIs with e2e/scripts/agents-deps.sh and sets AGENT_CLIS)")
	}
	for _, p := range parts {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("agent CLI %s: %v", p, err)
		}
	}
	return parts[0], parts[1]
}

func TestAgentClients(t *testing.T) {
	claude, codex := agentBinaries(t)
	dsn := storetest.NewDatabase(t)
	fakeAddr := freePort(t)
	start(t, "fakeupstream", nil, "-addr", fakeAddr)
	all := config.Capabilities{Thinking: true, Tools: true, Vision: true, WebSearch: true}
	routes := []*agentRoute{
		{name: "anthropic", protocol: config.ProtocolAnthropic, upstream: "claude-up", caps: all, native: map[string]bool{"claude": true}},
		{name: "openai-chat", protocol: config.ProtocolOpenAI, upstream: "gpt-up", caps: all, native: map[string]bool{}},
		{name: "openai-responses", protocol: config.ProtocolOpenAI, upstream: "resp-up", native: map[string]bool{"codex": true},
			caps: config.Capabilities{Thinking: true, Tools: true, Vision: true, WebSearch: true, ResponsesAPI: true}},
		{name: "gemini", protocol: config.ProtocolGemini, upstream: "gem-up", caps: all, native: map[string]bool{}},
	}
	seedAgentRoutes(t, dsn, "http://"+fakeAddr, routes)
	s := startServer(t, dsn)

	work := t.TempDir()
	notes := filepath.Join(work, "notes.txt")
	if err := os.WriteFile(notes, []byte("the secret word is pineapple\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		t.Run("claude/"+r.name, func(t *testing.T) {
			out := runClaude(t, claude, s.URL, r.key, work, "say hi")
			if !strings.Contains(out, "Hello from "+r.upstream) {
				t.Fatalf("claude through %s answered:\n%s", r.name, out)
			}
		})
		t.Run("codex/"+r.name, func(t *testing.T) {
			out := runCodex(t, codex, s.URL, r.key, work, "say hi")
			if !strings.Contains(out, "Hello from "+r.upstream) {
				t.Fatalf("codex through %s answered:\n%s", r.name, out)
			}
		})
	}
	// A tool round trip per client, on translated routes: the fake model
	// asks for the agent's own tool, the agent runs it and sends the
	// result back, and the answer quotes the file.
	t.Run("claude reads a file through its Read tool (OpenAI chat)", func(t *testing.T) {
		out := runClaude(t, claude, s.URL, routes[1].key, work, fmt.Sprintf(`Please call tool Read {"file_path":%q}`, notes))
		if !toolEcho.MatchString(out) {
			t.Fatalf("claude's answer does not quote the file:\n%s", out)
		}
		t.Logf("claude answered: %s", out)
	})
	t.Run("codex reads a file through exec_command (Gemini)", func(t *testing.T) {
		out := runCodex(t, codex, s.URL, routes[3].key, work, `Please call tool exec_command {"cmd":"cat notes.txt"}`)
		if !toolEcho.MatchString(out) {
			t.Fatalf("codex's answer does not quote the file:\n%s", out)
		}
		t.Logf("codex answered: %s", out)
	})
	checkAgentCallLog(t, s, routes)
}

// toolEcho is the fake model's answer to a tool result that quotes the
// file: the model's own text, not the agent's log of running the tool.
var toolEcho = regexp.MustCompile(`Tool result:[^\n]*the secret word is pineapple`)

// seedAgentRoutes configures a provider, a deployment, a route group (with
// the agents' model aliases) and a caller per route, and publishes.
func seedAgentRoutes(t *testing.T, dsn, fake string, routes []*agentRoute) {
	t.Helper()
	key, _ := secrets.ParseKey(storetest.TestKey)
	sealer, _ := secrets.NewSealer(key)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, sealer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(); err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		base := fake
		if r.protocol == config.ProtocolOpenAI {
			base += "/v1"
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
		}
		pid, err := st.CreateProvider(ctx, config.Provider{Name: r.name, Protocol: r.protocol, BaseURL: base, Enabled: true, TimeoutMS: 60000})
		must(err)
		_, err = st.AddProviderKey(ctx, pid, "", "sk-"+r.name+"-000000000001")
		must(err)
		mid, err := st.CreateLogicModel(ctx, config.LogicModel{Code: r.name, Kind: config.KindChat})
		must(err)
		_, err = st.CreateDeployment(ctx, mid, config.Deployment{Provider: r.name, UpstreamModel: r.upstream, Weight: 100, Enabled: true, Capabilities: r.caps})
		must(err)
		gid, err := st.CreateRouteGroup(ctx, config.RouteGroup{Name: r.name})
		must(err)
		snap, _, _ := st.Draft(ctx)
		for _, g := range snap.RouteGroups {
			if g.ID != gid {
				continue
			}
			for _, tr := range g.Tiers {
				_, err := st.AddCandidate(ctx, tr.ID, config.Candidate{LogicModel: r.name, Priority: 1, Weight: 100})
				must(err)
			}
		}
		for _, a := range []config.ModelAlias{{Pattern: "claude-opus-*", Tier: config.TierDeep}, {Pattern: "claude-sonnet-*", Tier: config.TierStandard},
			{Pattern: "claude-haiku-*", Tier: config.TierFast}, {Pattern: "gpt-*-codex", Tier: config.TierDeep}} {
			_, err := st.AddModelAlias(ctx, gid, a)
			must(err)
		}
		_, err = st.CreateCaller(ctx, config.Caller{Name: r.name, RouteGroup: r.name, PriorityClass: config.ClassInteractive, Enabled: true})
		must(err)
		r.key, _, err = st.CreateCallerKey(ctx, r.name, "agent", "seed")
		must(err)
	}
	if _, err := st.Publish(ctx, store.PublishInput{Author: "seed", Message: "agents", Check: func(s config.Snapshot) config.Result { return config.DryRun(s, storeEnv) }}); err != nil {
		t.Fatal(err)
	}
}

// runAgent runs one CLI to completion and returns what it printed.
func runAgent(t *testing.T, env []string, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, bytes.NewReader(nil)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// baseEnv is what the CLIs see of the machine: a home of their own, the
// PATH, and nothing of the test's environment.
func baseEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "LANG=C.UTF-8"}
}

// runClaude runs `claude -p prompt` with default settings; only the base
// URL and the key are set, and its telemetry, error reports and update
// checks are switched off by their documented environment variables.
func runClaude(t *testing.T, bin, base, key, dir, prompt string) string {
	t.Helper()
	env := append(baseEnv(t.TempDir()),
		"ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY="+key,
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	return runAgent(t, env, dir, bin, "-p", prompt)
}

// runCodex runs `codex exec prompt` with a provider entry for the gateway
// (wire_api "responses", the only one Codex accepts) and its analytics,
// feedback and update check off.
func runCodex(t *testing.T, bin, base, key, dir, prompt string) string {
	t.Helper()
	home := t.TempDir()
	conf := `model = "gpt-5.5-codex"
model_provider = "switchyard"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.switchyard]
name = "Switchyard"
base_url = "` + base + `/v1"
env_key = "SWITCHYARD_API_KEY"
wire_api = "responses"
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(home), "CODEX_HOME="+home, "SWITCHYARD_API_KEY="+key)
	return runAgent(t, env, dir, bin, "exec", "--skip-git-repo-check", prompt)
}

// checkAgentCallLog: every agent request is in the call log, served, with
// what its vendor did not get — nothing on a native route, the dropped
// fields on a translated one.
func checkAgentCallLog(t *testing.T, s *Server, routes []*agentRoute) {
	t.Helper()
	db := s.sql(t)
	for _, r := range routes {
		for _, door := range []struct{ endpoint, client string }{{"messages", "claude"}, {"responses", "codex"}} {
			var rows []struct {
				status  string
				dropped pq.StringArray
			}
			for deadline := time.Now().Add(10 * time.Second); len(rows) == 0; {
				q, err := db.Query(`SELECT status, dropped_fields FROM call_logs WHERE caller = $1 AND endpoint = $2`, r.name, door.endpoint)
				if err != nil {
					t.Fatal(err)
				}
				for q.Next() {
					var row struct {
						status  string
						dropped pq.StringArray
					}
					if err := q.Scan(&row.status, &row.dropped); err != nil {
						t.Fatal(err)
					}
					rows = append(rows, row)
				}
				q.Close()
				if len(rows) == 0 && time.Now().After(deadline) {
					t.Fatalf("%s via %s: no call-log rows", door.client, r.name)
				}
				time.Sleep(100 * time.Millisecond)
			}
			for _, row := range rows {
				native := r.native[door.client]
				switch {
				case row.status != "ok":
					t.Errorf("%s via %s: a call with status %s", door.client, r.name, row.status)
				case native && len(row.dropped) != 0:
					t.Errorf("%s via %s (native): dropped %v", door.client, r.name, row.dropped)
				case !native && door.client == "claude" && !slices.Contains(row.dropped, "context_management"):
					t.Errorf("%s via %s: dropped %v, want context_management among them", door.client, r.name, row.dropped)
				case !native && door.client == "codex" && !slices.Contains(row.dropped, "client_metadata"):
					t.Errorf("%s via %s: dropped %v, want client_metadata among them", door.client, r.name, row.dropped)
				}
			}
		}
	}
}
