# Switchyard — two commands for a newcomer:
#   make run    bring up PostgreSQL and Redis, migrate, start the server
#   make test   unit + integration (real PostgreSQL and Redis) + browser e2e
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export GOFLAGS := -buildvcs=false

DEV_DIR      := .dev
SECRET_FILE  := $(DEV_DIR)/secret.key
TEST_DB_URL  ?= postgres://switchyard:switchyard@127.0.0.1:5432/switchyard_test?sslmode=disable
export SWITCHYARD_TEST_DATABASE_URL ?= $(TEST_DB_URL)
export SWITCHYARD_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

# Packages whose concurrency is the point: their tests run under the race
# detector (make race), and only there; make unit runs every other package.
RACE_PKGS := ./routing/... ./store/redis/... ./cmd/switchyard/worker/
RACE_RE   := ^switchyard/(routing|store/redis)(/|$$)|^switchyard/cmd/switchyard/worker$$

.PHONY: run test services build generate lint unit race fuzz e2e e2e-deps screenshots bench demo reset-password clean

## run: start PostgreSQL and Redis if needed, migrate, and serve the console and API
run: services build
	@mkdir -p $(DEV_DIR)
	@if [ -z "$${SWITCHYARD_SECRET_KEY:-}" ] && [ -z "$${SWITCHYARD_SECRET_KEY_FILE:-}" ] && [ ! -f $(SECRET_FILE) ]; then \
		go run ./cmd/switchyard-keygen > $(SECRET_FILE); chmod 600 $(SECRET_FILE); \
		echo "==> SWITCHYARD_SECRET_KEY is not set: generated a local key in $(SECRET_FILE) (keep it: it decrypts your provider keys)"; fi
	@if [ -z "$${SWITCHYARD_SECRET_KEY:-}" ] && [ -z "$${SWITCHYARD_SECRET_KEY_FILE:-}" ]; then export SWITCHYARD_SECRET_KEY_FILE=$(SECRET_FILE); fi; \
		SWITCHYARD_LOG_FORMAT=$${SWITCHYARD_LOG_FORMAT:-text} exec ./bin/switchyard

## demo: like run, plus the fake vendor on 127.0.0.1:9090 for the onboarding sandbox
demo: services build
	@echo "==> demo: fake vendor on 127.0.0.1:9090 (onboard the \"local sandbox\" provider); the console URL and how to log in follow"
	@./bin/fakeupstream -addr 127.0.0.1:9090 & trap "kill $$! 2>/dev/null" EXIT; \
		SWITCHYARD_SANDBOX_URL=$${SWITCHYARD_SANDBOX_URL:-http://127.0.0.1:9090/v1} $(MAKE) --no-print-directory run

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
	@if ! out=$$(go mod tidy -diff 2>&1); then echo "go.mod/go.sum are not tidy; run go mod tidy and commit:"; echo "$$out"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@go tool templ generate -path views >/dev/null 2>&1
	@if ! git diff --quiet -- views; then echo "templ output is stale; run make generate and commit:"; git diff --stat -- views; exit 1; fi

## unit: every package's tests once, except the race packages (make race runs those)
unit:
	PLAYWRIGHT_DRIVER_PATH=$$(./e2e/scripts/e2e-deps.sh) AGENT_CLIS=$$(./e2e/scripts/agents-deps.sh | tr '\n' ':') \
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

e2e: services e2e-deps
	PLAYWRIGHT_DRIVER_PATH=$$(./e2e/scripts/e2e-deps.sh) AGENT_CLIS=$$(./e2e/scripts/agents-deps.sh | tr '\n' ':') go test -count=1 -v ./e2e/

## screenshots: refresh the committed screenshots of every console page (e2e/screenshots); make test writes them under .cache/
screenshots: services e2e-deps
	SWITCHYARD_SCREENSHOTS=$(CURDIR)/e2e/screenshots PLAYWRIGHT_DRIVER_PATH=$$(./e2e/scripts/e2e-deps.sh) go test -count=1 -run '^TestConsoleWalk$$' ./e2e/

## bench: gateway vs direct-to-upstream figures (latency, TTFB, throughput, RSS) and Go benchmarks
bench: services build
	./e2e/scripts/bench.sh

clean:
	rm -rf bin .cache
