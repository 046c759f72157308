# The controller image for those who build with docker; `make image` builds the same image without docker.
#   docker build -t ghcr.io/wfguard/wfguard:latest .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=latest
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/wfguard ./cmd/wfguard

# distroless static: no shell, no package manager; "nonroot" is uid/gid 65532, as in `make image`.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/wfguard /usr/local/bin/wfguard
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/wfguard"]
CMD ["controller"]
