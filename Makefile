# The verbs developers and CI use. Every target works on a fresh machine with the Rust toolchain.
CARGO ?= cargo

.PHONY: sweep demo test lint fmt catalogue ci

## sweep: the main job on the embedded default: one sweep of the sample fleet in the simulator
sweep:
	$(CARGO) run -q -p medic -- sweep --simulate

## demo: decide every sample scenario in events/ (no server)
demo:
	$(CARGO) run -q -p medic -- demo

## test: install what the tests need, then run every test in the workspace
test:
	$(CARGO) test --workspace --locked

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## fmt: format the code
fmt:
	$(CARGO) fmt --all

## catalogue: print the failure-mode catalogue
catalogue:
	$(CARGO) run -q -p medic -- catalogue

## ci: what .ci/run does
ci: lint test
