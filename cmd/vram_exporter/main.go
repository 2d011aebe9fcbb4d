package main

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	_ "github.com/alecthomas/kingpin/v2"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/prometheus/common/version"
	_ "github.com/prometheus/exporter-toolkit/web"
	_ "github.com/prometheus/exporter-toolkit/web/kingpinflag"
	_ "github.com/prometheus/procfs"
	_ "go.uber.org/zap"
	_ "go.uber.org/zap/exp/zapslog"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
)

func main() {}
