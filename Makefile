# wfguard — see README.md. Every target builds what it needs; the control plane is built once into bin/.
GO        ?= go
TEST_FLAGS ?= -count=1 -timeout=40m

.PHONY: all tools test lint vet fmt-check build

all: build

build:
	$(GO) build ./...

## tools: build etcd, kube-apiserver and kube-controller-manager into bin/ (cold ~15 min; a no-op when current)
tools:
	hack/tools/build.sh

## test: unit + integration tests on a real control plane (builds the tools if missing or stale)
test: tools
	$(GO) test $(TEST_FLAGS) ./...

## lint: go vet + gofmt check
lint: vet fmt-check

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
