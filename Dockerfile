# syntax=docker/dockerfile:1
# Build: go-nvml needs cgo (it dlopens libnvidia-ml.so.1 at run time, so nothing NVIDIA
# is needed to build).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=1 CGO_CFLAGS=-Wno-deprecated-declarations go build -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${VERSION}" \
      -o /out/vram_exporter ./cmd/vram_exporter

# Run: a glibc image (cgo), no shell. libnvidia-ml.so.1 comes from the host through the
# NVIDIA container toolkit (docker --gpus all, or runtimeClassName: nvidia on Kubernetes).
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/vram_exporter /usr/local/bin/vram_exporter
# NVML needs no root for memory and process queries; the push socket directory must be
# writable by this user (a hostPath owned by 65532, or set --push.socket).
USER 65532:65532
EXPOSE 10090
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
ENTRYPOINT ["/usr/local/bin/vram_exporter"]
