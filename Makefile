# wfguard — see README.md. Every target builds what it needs; the control plane is built once into bin/.
GO        ?= go
TEST_FLAGS ?= -count=1 -timeout=40m

.PHONY: all tools argo-tools node-tools e2e-real test compat interop lint vet fmt-check controller-deps funclimits mod-check build demo up generate bench chaos image

all: build

build:
	$(GO) build ./...

## tools: build etcd, kube-apiserver and kube-controller-manager into bin/ (cold ~15 min; a no-op when current)
tools:
	hack/tools/build.sh

## argo-tools: build stock argo's workflow-controller (the differential suite's oracle), argo-client and argo's
## CLI bin/argo (make interop's) into bin/ from the module proxy (cold ~10 min on 2 cores; a no-op when current).
argo-tools:
	hack/tools/build.sh argo

## node-tools: build the real node's pieces into bin/ (apt's containerd, runc, CNI plugins, busybox-static;
## kubelet, argoexec v3.7.9 and the node's image tarballs; cold ~5 min with a warm module cache, a no-op when current)
node-tools:
	hack/tools/build.sh node

## e2e-real: run workflows with the wfguard controller on a real node (kubelet + containerd + runc + argo's own
## argoexec) against the embedded control plane; needs root and cgroups (skips saying why without them) and
## removes everything it set up on the host, also on failure and Ctrl-C. Not part of make test.
E2E_REAL_FLAGS ?= -count=1 -timeout=20m
e2e-real: tools argo-tools node-tools
	$(GO) test -tags realnode $(E2E_REAL_FLAGS) -v ./test/e2ereal/

## test: unit + integration tests on a real control plane, and a subset of argo's examples under both stock
## argo and wfguard (builds the tools if missing or stale)
test: tools argo-tools
	$(GO) test $(TEST_FLAGS) ./...
	cd hack/image && $(GO) test $(TEST_FLAGS) ./...

## compat: run all of argo's examples under stock argo and under wfguard and compare them (~15 min); prints a
## table, writes compat/results/latest.json. CASES=a,b runs some; CORPUS=examples|own|all (default all: argo's
## examples and our compat/corpus); MIN_SAME=95 fails when fewer of argo's examples have the same outcome.
COMPAT_FLAGS ?= -count=1 -timeout=60m
CASES    ?=
MIN_SAME ?= 0
compat: tools argo-tools
	$(GO) test -tags compat $(COMPAT_FLAGS) -run TestArgosExamplesUnderWFGuardAndStockArgo -v ./compat/ \
		-args -compat.cases=$(CASES) -compat.min-same=$(MIN_SAME) -compat.corpus=$(or $(CORPUS),all)

## interop: argo's own CLI (bin/argo, v3.7.9) drives one scenario per feature (submit, wait/watch, suspend/resume,
## node set, stop/terminate, retry, resubmit, delete, cron, templates) under stock argo and under wfguard, in
## kubernetes mode and through `argo server`, and compares exit codes, output and `argo get -o json`; prints a
## table, writes interop/results/latest.txt, and fails on a difference docs/compatibility.md does not list as
## deliberate. SCENARIOS=a,b runs some. make test runs a short form.
INTEROP_FLAGS ?= -count=1 -timeout=40m
SCENARIOS     ?=
interop: tools argo-tools
	$(GO) test -tags interop $(INTEROP_FLAGS) -run TestArgosCLIAndServerDriveWFGuardAsTheyDriveStockArgo -v ./interop/ \
		-args -interop.scenarios=$(SCENARIOS)

## image: build the controller image offline (no docker, no base image pulled) into bin/wfguard-image.tar: cmd/wfguard only,
## a static linux binary, user 65532, no shell. IMAGE names it; IMAGE_ARCH picks the architecture; IMAGE_DIR the folder. Load it with
## `docker load -i`, `ctr -n k8s.io images import` or `kind load image-archive` (docs/install.md).
VERSION    ?= latest
IMAGE      ?= ghcr.io/wfguard/wfguard:$(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_DIR  ?= $(CURDIR)/bin
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath \
		-ldflags "-s -w -X main.version=$(VERSION) -X main.gitCommit=$(GIT_COMMIT)" \
		-o $(IMAGE_DIR)/wfguard-linux-$(IMAGE_ARCH) ./cmd/wfguard
	cd hack/image && SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)} \
		$(GO) run . --binary $(IMAGE_DIR)/wfguard-linux-$(IMAGE_ARCH) --out $(IMAGE_DIR)/wfguard-image.tar \
		--image $(IMAGE) --arch $(IMAGE_ARCH)

## demo: run examples/*.yaml on an embedded control plane with the controller and the simulated node
## (bin/wfguard-sandbox, the playground binary: the controller binary and image carry neither)
demo: tools
	$(GO) build -o bin/wfguard-sandbox ./cmd/wfguard-sandbox
	bin/wfguard-sandbox demo --examples examples

## up: keep an embedded control plane + controller + simulated node running (Ctrl-C to stop; bin/wfguard-sandbox)
up: tools
	$(GO) build -o bin/wfguard-sandbox ./cmd/wfguard-sandbox
	bin/wfguard-sandbox up

## bench: measure wfguard and stock argo (each its own process) against DESIGN.md's targets; report in bench/results/
BENCH_FLAGS ?=
bench: tools argo-tools
	$(GO) build -o bin/wfguard ./cmd/wfguard
	$(GO) build -o bin/wfguard-bench ./cmd/wfguard-bench
	bin/wfguard-bench $(BENCH_FLAGS)
	@mkdir -p bench/results
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./controller/engine/ | tee bench/results/engine-latest.txt

## chaos: a long seeded chaos soak checking DESIGN.md's invariants (make test runs a 50-workflow one)
SEED      ?= 0
WORKFLOWS ?= 500
chaos: tools
	$(GO) test -count=1 -timeout 90m -run TestWorkflowsUnderRandomFaultsKeepEveryInvariant -v ./test/chaos/ \
		-args -chaos.seed=$(SEED) -chaos.workflows=$(WORKFLOWS)

## generate: regenerate the WorkflowAction deepcopy and CRD (controller-gen from the module proxy)
generate:
	$(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object paths=./actions/v1alpha1/... \
		crd:crdVersions=v1 output:crd:artifacts:config=config/crd

## lint: go vet + gofmt check + the controller binary links no playground or test package (controller-deps) + funclimits + mod-check
lint: vet fmt-check controller-deps funclimits mod-check

vet:
	$(GO) vet ./...
	cd hack/image && $(GO) vet ./...

## controller-deps: fail when cmd/wfguard (the image's binary) links sandbox/, test/, compat/, bench/ or internal/zipbomb
controller-deps:
	@GO=$(GO) hack/check-controller-deps.sh

## funclimits: no product function over 60 lines, 6 parameters or cyclomatic complexity 20 (hack/funclimits)
funclimits:
	$(GO) run ./hack/funclimits

## mod-check: go.mod and go.sum are tidy (direct imports marked direct)
mod-check:
	$(GO) mod tidy -diff

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
