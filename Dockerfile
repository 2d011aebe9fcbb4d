# syntax=docker/dockerfile:1
# Build: go-nvml needs cgo (it dlopens libnvidia-ml.so.1 at run time, so nothing NVIDIA
# is needed to build). The build context has no .git (.dockerignore), so the stamps of
# vram_exporter --version and vram_exporter_build_info come in as build arguments:
#   docker build -t vram_exporter --build-arg VERSION="$(git describe --tags --always)" \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg BRANCH="$(git rev-parse --abbrev-ref HEAD)" .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG REVISION=""
ARG BRANCH=""
RUN VERSION="${VERSION}" REVISION="${REVISION}" BRANCH="${BRANCH}" BUILD_USER=docker \
      bash scripts/build.sh -o /out/vram_exporter
# The socket directory, owned by the daemon (65532) and the push group (10090). A new
# named volume mounted there starts with this owner and mode (Docker copies them), so
# `-v vram-exporter-socket:/run/vram_exporter` works without preparing the host.
RUN mkdir -p /out/run/vram_exporter && chmod 0750 /out/run/vram_exporter

# Run: a glibc image (cgo), no shell. libnvidia-ml.so.1 and /dev/nvidia* come from the
# host through the NVIDIA container toolkit (docker --gpus all, or the nvidia runtime on
# Kubernetes: deploy/helm/README.md).
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/vram_exporter /usr/local/bin/vram_exporter
COPY --from=build --chown=65532:10090 /out/run/vram_exporter /run/vram_exporter
# NVML needs no root for memory and process queries. The push group is 10090: run with
# --group-add 10090 --push.socket-group=10090 (README "Running it for real").
USER 65532:65532
EXPOSE 10090
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
ENTRYPOINT ["/usr/local/bin/vram_exporter"]
