# Switchyard — for a newcomer:
#   make demo   like run, plus a fake vendor: try it all without a vendor key
#   make run    bring up PostgreSQL and Redis, migrate, start the server
#   make test   unit + integration (real PostgreSQL and Redis) + browser e2e
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# -trimpath keeps the checkout's directory out of what the build cache
# keys on: a fresh clone elsewhere (CI's, a second worktree) reuses the
# compiled packages and test binaries of an earlier one instead of
# compiling the module again for vet, tests, race and fuzz.
export GOFLAGS := -buildvcs=false -trimpath

DEV_DIR      := .dev
SECRET_FILE  := $(DEV_DIR)/secret.key
TEST_DB_URL  ?= postgres://switchyard:switchyard@127.0.0.1:5432/switchyard_test?sslmode=disable
export SWITCHYARD_TEST_DATABASE_URL ?= $(TEST_DB_URL)
export SWITCHYARD_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

# Packages whose concurrency is the point: their tests run under the race
# detector (make race), and only there; make unit runs every other package.
RACE_PKGS := ./routing/... ./store/redis/... ./web/worker/
RACE_RE   := ^switchyard/(routing|store/redis)(/|$$)|^switchyard/web/worker$$

.PHONY: run test services build generate lint unit race fuzz e2e e2e-deps screenshots bench pgo demo reset-password clean

## run: start PostgreSQL and Redis if needed, migrate, and serve the console and API
run: services build
	@$(server-env); exec ./bin/switchyard

## demo: like run, plus the fake vendor on DEMO_VENDOR_ADDR for the onboarding's
## local sandbox (no vendor key needed); Ctrl-C stops both and exits cleanly
DEMO_VENDOR_ADDR ?= 127.0.0.1:9090
demo: services build
	@echo "==> demo: fake vendor on $(DEMO_VENDOR_ADDR) (onboard the \"local sandbox\" provider); the console URL and how to log in follow"
	@$(server-env); \
	a=$(DEMO_VENDOR_ADDR); vendor_up() { (exec 3<>/dev/tcp/$${a%:*}/$${a##*:}) 2>/dev/null; }; \
	if vendor_up; then echo "==> something already listens on $(DEMO_VENDOR_ADDR): choose another address with make demo DEMO_VENDOR_ADDR=host:port"; exit 1; fi; \
	./bin/fakeupstream -addr $(DEMO_VENDOR_ADDR) & vendor=$$!; \
	trap 'kill $$vendor 2>/dev/null || true; wait $$vendor 2>/dev/null || true' EXIT; \
	until vendor_up; do kill -0 $$vendor 2>/dev/null || exit 1; sleep 0.1; done; \
	SWITCHYARD_SANDBOX_URL=$${SWITCHYARD_SANDBOX_URL:-http://$(DEMO_VENDOR_ADDR)/v1} ./bin/switchyard & server=$$!; \
	interrupted=; trap 'interrupted=1; kill -TERM $$server 2>/dev/null || true' INT TERM; \
	status=0; wait $$server || status=$$?; \
	if [ -n "$$interrupted" ]; then wait $$server || true; exit 0; fi; exit $$status

# The server's environment under make run and make demo: text logs, and a
# local secret key when none is set (generated once into $(SECRET_FILE)).
define server-env
mkdir -p $(DEV_DIR); \
if [ -z "$${SWITCHYARD_SECRET_KEY:-}" ] && [ -z "$${SWITCHYARD_SECRET_KEY_FILE:-}" ]; then \
	if [ ! -f $(SECRET_FILE) ]; then \
		go run ./cmd/switchyard-keygen > $(SECRET_FILE); chmod 600 $(SECRET_FILE); \
		echo "==> SWITCHYARD_SECRET_KEY is not set: generated a local key in $(SECRET_FILE) (keep it: it decrypts your provider keys)"; fi; \
	export SWITCHYARD_SECRET_KEY_FILE=$(SECRET_FILE); fi; \
export SWITCHYARD_LOG_FORMAT=$${SWITCHYARD_LOG_FORMAT:-text}
endef

## reset-password: a new password for a console user (RESET_USER, default admin), printed once; no server needed
RESET_USER ?= admin
reset-password: services build
	@./bin/switchyard reset-password $(RESET_USER)

## test: everything CI runs
test: services e2e-deps lint unit race fuzz

services:
	@./e2e/scripts/services.sh

build:
	@mkdir -p bin
	go build -o bin/switchyard ./cmd/switchyard
	go build -o bin/fakeupstream ./cmd/fakeupstream

generate:
	go tool templ generate -path views

## lint: vet, gofmt, go.mod/go.sum tidy, and generated templ code in sync with its sources
lint:
	go vet ./...
	go vet -tags bench ./e2e/bench/
	@if ! out=$$(go mod tidy -diff 2>&1); then echo "go.mod/go.sum are not tidy; run go mod tidy and commit:"; echo "$$out"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@go tool templ generate -path views >/dev/null 2>&1
	@if ! git diff --quiet -- views; then echo "templ output is stale; run make generate and commit:"; git diff --stat -- views; exit 1; fi

## unit: every package's tests once, except the race packages (make race runs those)
unit:
	PLAYWRIGHT_DRIVER_PATH=$$(./e2e/scripts/e2e-deps.sh) AGENT_CLIS=$$(./e2e/scripts/agents-deps.sh | tr '\n' ':') SWITCHYARD_JAEGER=$$(./e2e/scripts/jaeger-deps.sh) \
		go test -count=1 -parallel 4 -timeout 15m $$(go list ./... | grep -v -E '$(RACE_RE)')

race:
	go test -race -count=1 -timeout 10m $(RACE_PKGS)

## fuzz: the request parsers (chat, Messages, Responses), the SSE reader, the JSON validator and the canonical config codec, briefly
## (a count of runs each, about eight seconds here: a duration races the fuzz coordinator's deadline, golang/go#75804;
##  longer by hand: FUZZTIME=5m or FUZZTIME=1000000x applies to all)
fuzz-one = go test -run '^$$' -fuzz '^$(1)$$' -fuzztime $(or $(FUZZTIME),$(3)) $(2)
fuzz:
	$(call fuzz-one,FuzzParseChatRequest,./routing/frontdoor/,30000x)
	$(call fuzz-one,FuzzSSEReader,./routing/adapter/,10000x)
	$(call fuzz-one,FuzzValidJSON,./routing/wire/,300000x)
	$(call fuzz-one,FuzzParseResponsesRequest,./routing/frontdoor/,25000x)
	$(call fuzz-one,FuzzParseMessagesRequest,./routing/frontdoor/,50000x)
	$(call fuzz-one,FuzzCanonicalCodec,./routing/config/,4000x)

e2e-deps:
	@./e2e/scripts/e2e-deps.sh >/dev/null
	@./e2e/scripts/agents-deps.sh >/dev/null
	@./e2e/scripts/jaeger-deps.sh >/dev/null

e2e: services e2e-deps
	PLAYWRIGHT_DRIVER_PATH=$$(./e2e/scripts/e2e-deps.sh) AGENT_CLIS=$$(./e2e/scripts/agents-deps.sh | tr '\n' ':') go test -count=1 -v ./e2e/

## screenshots: refresh the committed screenshots of every console page (e2e/screenshots); make test writes them under .cache/
screenshots: services e2e-deps
	SWITCHYARD_SCREENSHOTS=$(CURDIR)/e2e/screenshots PLAYWRIGHT_DRIVER_PATH=$$(./e2e/scripts/e2e-deps.sh) go test -count=1 -run '^TestConsoleWalk$$' ./e2e/

## bench: gateway vs direct-to-upstream figures (latency, TTFB, throughput, RSS) and Go benchmarks
bench: services build
	./e2e/scripts/bench.sh

## pgo: refresh cmd/switchyard/default.pgo, the CPU profile go build optimises the server with: the bench's
## gateway under chat at a fixed rate and saturated, streams and Messages (about two minutes; commit the result)
pgo: services build
	@command -v wrk >/dev/null || { echo "make pgo drives the gateway with wrk: make bench installs it"; exit 1; }
	go build -o bin/loadgen ./e2e/bench/loadgen
	@rm -rf .cache/pgo && mkdir -p .cache/pgo
	BENCH_BIN=$(CURDIR)/bin BENCH_PGO_DIR=$(CURDIR)/.cache/pgo go test -tags bench -count=1 -run '^TestProfileForPGO$$' -timeout 15m ./e2e/bench/
	go tool pprof -proto .cache/pgo/*.pprof > .cache/pgo/merged.pgo
	mv .cache/pgo/merged.pgo cmd/switchyard/default.pgo
	@echo "==> cmd/switchyard/default.pgo: $$(du -k cmd/switchyard/default.pgo | cut -f1) KB"

clean:
	rm -rf bin .cache
