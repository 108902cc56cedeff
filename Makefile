# The verbs developers and CI use. Every target works on a fresh machine with the Rust toolchain.
CARGO ?= cargo
# Checks that could not run on this machine (Argo CD's swagger.json outside the repository) append
# a line here; `make test` ends by listing them.
SKIP_LOG := $(CURDIR)/.test-skips.log

.PHONY: sweep demo venv go-env test test-profiles test-unit lint fmt catalogue ci bench storm storm-moto storm-smoke envelope lambda-build lambda-watch lambda-smoke chaos chaos-smoke fuzz

## sweep: the main job on the embedded default: one sweep of the sample fleet in the simulator
sweep:
	$(CARGO) run -q -p medic -- sweep --simulate

## demo: decide every sample scenario in events/ (no server)
demo:
	$(CARGO) run -q -p medic -- demo

## venv: the Python tools the tests need (moto_server, cfn-lint) in .venv; a no-op when up to date
venv:
	bash scripts/python-env.sh

## go-env: Go and Sprig from Debian's packages, for the Go differential test of the notification
## templates; a no-op when installed
go-env:
	bash scripts/go-env.sh

## test: install what the tests need, lint template.yaml (cfn-lint, sam validate --lint), run every test,
## then the chaos smoke run (real SIGKILLs at every boundary; about three minutes)
test: venv go-env
	bash scripts/lint-template.sh
	rm -f $(SKIP_LOG)
	MEDIC_SKIP_LOG=$(SKIP_LOG) $(CARGO) test --workspace --locked
	$(MAKE) --no-print-directory test-profiles
	bash scripts/lambda-smoke.sh
	bash scripts/install-smoke.sh
	$(MAKE) --no-print-directory storm-smoke
	$(MAKE) --no-print-directory chaos-smoke
	@if [ -s $(SKIP_LOG) ]; then \
		echo "make test: $$(wc -l < $(SKIP_LOG)) check(s) did NOT run:"; sed 's/^/  /' $(SKIP_LOG); \
	else echo "make test: every check ran"; fi

## test-profiles: the Argo CD client tests (tests/argo.rs) once more on each Argo CD profile other
## than the default v3.5.1 (medic_core::versions::PROFILES); the policy's run on every profile is
## functions/core/tests/profiles.rs, in the workspace's tests
PROFILES ?= v2.14.21 v3.1.16 v3.3.7 v3.3.8
test-profiles:
	@for p in $(PROFILES); do \
		echo "test-profiles: Argo CD $$p"; \
		MEDIC_SKIP_LOG=$(SKIP_LOG) MEDIC_ARGOCD_PROFILE=$$p $(CARGO) test -q -p medic-tests --locked --test integration argo:: || exit 1; \
	done

## test-unit: the fast loop: every crate's unit tests and the core's own tests (policy, corpus,
## keys, layering), no Python, moto or simulator processes; make test runs all of it and more
test-unit:
	$(CARGO) test --workspace --lib --locked
	$(CARGO) test -p medic-core -p medic-service -p medic-slack -p medic-stack --locked
	$(CARGO) test -p ingest -p worker --test handler --locked

## lint: formatting and clippy, warnings are errors; the core checked alone, because workspace
## feature unification would hide a clock or I/O feature only the core must not have
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) check -p medic-core --locked
	@# The application alone too: it must build without the runtime the handlers bring.
	$(CARGO) check -p medic-service --locked
	@# One actuator: the product crates alone, without the tests' `test-permit` feature, so no
	@# product code compiles a mutating Argo CD call or a Slack post outside the actuator.
	$(CARGO) check -p ingest -p worker -p sweeper -p slack-actions -p medic --locked
	@# Each crate once in the bootstraps, but for the duplicates an upstream crate forces.
	bash scripts/duplicate-crates.sh
	@# A path baked in at compile time names the checkout that first compiled it: a target
	@# directory shared between clones (CI's) would run one clone's tests on another's files.
	@if grep -rn 'env!("CARGO_MANIFEST_DIR")' --include='*.rs' functions cli sim tests chaos fuzz | grep -v '^sim/src/paths.rs:'; then \
		echo 'lint: read CARGO_MANIFEST_DIR when the test runs (std::env::var_os), not when it compiles'; exit 1; fi

## fmt: format the code
fmt:
	$(CARGO) fmt --all

## lambda-build: the release bootstraps for AWS Lambda (arm64), as `sam build` makes them
lambda-build:
	bash scripts/cargo-lambda-env.sh
	PATH="$(CURDIR)/.venv-lambda/bin:$$PATH" $(CARGO) lambda build --release --arm64

## lambda-watch: every function under the local Lambda runtime emulator on 127.0.0.1:9000
## (set their environment with ENV_FILE=...; invoke with `cargo lambda invoke <fn> --data-file events/lambda/<fn>/...`)
lambda-watch:
	bash scripts/cargo-lambda-env.sh
	PATH="$(CURDIR)/.venv-lambda/bin:$$PATH" $(CARGO) lambda watch -A 127.0.0.1 -P 9000 $(if $(ENV_FILE),--env-file $(ENV_FILE),)

## lambda-smoke: ingest under cargo lambda watch, with moto and the simulator, invoked with a sample event
lambda-smoke:
	bash scripts/lambda-smoke.sh

## bench: the 5,000-app sweep of docs/benchmarks.md (release build)
bench:
	$(CARGO) build --release -p medic
	/usr/bin/time -v $${CARGO_TARGET_DIR:-target}/release/medic sweep --simulate --synthetic 5000 --stale 2000 --passes 2 \
		--refresh-per-minute 600000 --sync-per-minute 600000 --concurrency 16 -o jsonl > /dev/null

## catalogue: print the failure-mode catalogue
catalogue:
	$(CARGO) run -q -p medic -- catalogue

## ci: what .ci/run does
ci: lint test

## lint-template: cfn-lint, `sam validate --lint` and cfn-lint on the SAM-expanded template.yaml, all
## must be clean (installs cfn-lint into .venv, aws-sam-cli into .venv-sam when missing; CHECKOV=1 adds checkov)
.PHONY: lint-template
lint-template:
	bash scripts/lint-template.sh

## chaos: the fault-injection run of docs/reliability.md (release build, about half an hour; not part of
## make test); five workers, the template's default WorkerMaxConcurrency; two fleet outages (a Git host,
## a cluster), ten kills of each other function, `medic switch off` for a minute halfway
chaos: venv
	$(CARGO) run --release -q -p medic-chaos -- run --events 10000 --apps 300 --scale 10 --kills-per-boundary 20 --random-kills 20 --workers 5 --seed 1 --max-seconds 3600

## storm: the morning after an outage through the real ingest, worker and sweeper handlers (5,000
## apps, 2,000 stale, every notification 4 times, shuffled) at the default budgets, beside the cron
## script's approach; many minutes, not in `make test`; figures in docs/benchmarks.md
storm:
	$(CARGO) run --release -q -p medic-chaos -- storm --apps 5000 --stale 2000 --copies 4

## envelope: the functions' Lambda envelope (docs/benchmarks.md): each release bootstrap under a
## Runtime API stub on 127.0.0.1, with moto and the Argo CD simulator, secrets from the environment
## and from Secrets Manager; init, first and warm response, peak RSS, size, beside a hello world;
## 15 shuffled rounds, medians (a few minutes; not in `make test`). The functions are built on their
## own, as `sam build` builds each, so the harness's features do not leak into them.
envelope: venv
	$(CARGO) build --release --locked -p ingest -p worker -p sweeper -p slack-actions
	$(CARGO) build --release --locked -p medic-chaos
	$${CARGO_TARGET_DIR:-target}/release/medic-chaos envelope --rounds 15

## storm-moto: the storm on the AWS adapters (SQS, DynamoDB in moto_server), every function built as on
## Lambda, counting the AWS requests each makes per delivery and per app (the counts docs/cost.md prices)
storm-moto: venv
	@out=$$(mktemp); status=0; $(CARGO) run --release -q -p medic-chaos -- storm --moto --apps 1000 --stale 400 --copies 4 \
		> $$out || status=$$?; grep -v '^{' $$out; rm -f $$out; exit $$status

## storm-smoke: both, small and fast (in `make test`)
storm-smoke: venv
	$(CARGO) run -q -p medic-chaos -- storm --apps 300 --stale 100 --copies 4 --refresh-per-minute 60000
	@# The functions print their metric lines (EMF) on stdout: kept out of the way, and the storm's
	@# own exit status kept (a pipe into grep would report grep's).
	@out=$$(mktemp); status=0; $(CARGO) run -q -p medic-chaos -- storm --moto --apps 300 --stale 100 --copies 4 \
		--refresh-per-minute 60000 > $$out || status=$$?; grep -v '^{' $$out; rm -f $$out; exit $$status

## chaos-smoke: the same run, small: one Git-host outage of 12 apps, two kills of each other function (ingest,
## slack-actions, sweeper), no switch-off; D = L = S = W = R = 0 and every boundary's kills are required
## (fresh trouble keeps the run alive until they happen, within 500 events)
chaos-smoke: venv
	$(CARGO) run -q -p medic-chaos -- run --events 400 --max-events 500 --apps 30 --scale 20 --kills-per-boundary 2 --random-kills 2 --seed 1 --max-seconds 300 \
		--outages 1 --outage-apps 12 --kills-per-kind 2 --switch-off-secs 0

## fuzz: coverage-guided fuzzing of the parsers of untrusted input (cargo-fuzz, nightly; installed when
## missing), every target of fuzz/ for FUZZ_SECONDS each, seeded from events/; prints executions per
## target (many minutes; not part of make test, see docs/reliability.md)
FUZZ_SECONDS ?= 300
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) CARGO=$(CARGO) bash fuzz/run.sh
