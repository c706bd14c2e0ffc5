# One command surface. CI runs .ci/run, which installs from scratch and runs the same checks.
VENV ?= .venv
BIN := $(VENV)/bin

##@ Setup
.PHONY: help venv
help: ## show the targets
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2} /^##@/ {printf "\n%s\n", substr($$0, 5)}' $(MAKEFILE_LIST)

venv: ## create .venv: the locked runtime and Pulumi SDKs, then the package with its test extras
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --require-hashes -r locks/test.txt
	$(BIN)/pip install -q -e '.[test,platform,bench,lock]'

tools: ## build the pinned Go tools (Kubernetes, etcd, kwok, Kueue, upstream JobSet, Pulumi, pause; the real nodes' kubelet, kube-proxy, containerd, CNI, CoreDNS) into the cache
	python3 tools/build.py

image: ## build the controller image without a Docker daemon (OCI layout and archive; prints the digest)
	$(BIN)/jobset-infra image build controller

##@ Real local cluster
.PHONY: tools image up down cluster-up cluster-down jax-cpu test-real test-chaos
up: tools ## the real path: the local cluster, `pulumi up -s local` with the real engine, the JobSet watched to Completed
	$(BIN)/jobset-infra deploy up

down: ## `pulumi destroy -s local`, then the local cluster stops
	$(BIN)/jobset-infra deploy down

cluster-up: tools ## start the real control plane with TPU-shaped kwok pools and our controller (root: it runs from its image on a system node)
	$(BIN)/jobset-infra cluster up --nodes v5e-2x4:4,cpu:3 --controller

cluster-down: ## stop it and remove its files
	$(BIN)/jobset-infra cluster down

jax-cpu: tools ## examples/jax-cpu for real: a real node, the controller from its image, 4 JAX processes to Completed, their output (root)
	$(BIN)/jobset-infra cluster up --name jax-cpu --real-nodes 1 --controller --image workload
	export KUBECONFIG=$$($(BIN)/jobset-infra cluster status --name jax-cpu --kubeconfig); \
	$(BIN)/kubectl apply -f examples/jax-cpu/jobset.yaml \
	  && $(BIN)/kubectl wait --for=condition=Completed jobset/jax-cpu --timeout=600s \
	  && $(BIN)/kubectl logs -l jobset.sigs.k8s.io/jobset-name=jax-cpu | grep '^process'; \
	status=$$?; $(BIN)/jobset-infra cluster down --name jax-cpu; exit $$status

test-real: tools ## only the tiers that run on the real control plane (envtest and full cluster)
	JOBSET_REQUIRE_REAL=1 $(BIN)/pytest -q -m "envtest or real"

test-chaos: tools ## the chaos tier alone, its figures printed (CI runs it with the whole suite)
	JOBSET_REQUIRE_REAL=1 $(BIN)/pytest -q -m chaos -s

##@ Develop
.PHONY: demo check test test-fast test-integration verify generate lock bench bench-quick bench-real bench-real-quick
demo: ## run a multislice JobSet end to end on the simulated cluster (no cloud)
	$(BIN)/jobset-infra sim --demo

check: ## ruff and mypy --strict
	$(BIN)/ruff check jobset_infra tests stacks examples benchmarks tools
	$(BIN)/mypy jobset_infra

test: ## the whole test suite, on two pytest-xdist workers (the README's command)
	$(BIN)/pytest -q -n 2

test-fast: ## the suite without the tests marked slow (what to run while editing; CI runs all)
	$(BIN)/pytest -q -m "not slow"

test-integration: ## only the controller-against-API-server tier
	$(BIN)/pytest -q tests/integration

generate: ## regenerate the CRD from the models
	$(BIN)/jobset-infra crd

lock: ## regenerate locks/controller.txt, platform.txt and test.txt from pyproject.toml (needs PyPI)
	UV=$(BIN)/uv .ci/lock

verify: ## fail if a generated file (the CRD, the locks) differs from a fresh generation
	$(BIN)/jobset-infra crd --check
	UV=$(BIN)/uv .ci/lock --check

bench: ## the full benchmark run (minutes); results in benchmarks/RESULTS.md
	$(BIN)/python -m benchmarks

bench-quick: ## the benchmark smoke run (under a minute)
	$(BIN)/python -m benchmarks --quick

bench-real: ## ours beside upstream JobSet on the real local control plane (hours); needs make tools
	$(BIN)/python -m benchmarks --real --keep-going --out benchmarks/RESULTS.md

bench-real-quick: ## the real-cluster benchmark's smoke run (about 2 minutes)
	$(BIN)/python -m benchmarks --real --quick
