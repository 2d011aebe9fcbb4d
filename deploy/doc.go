// Package deploy holds no code: it holds the operations files (Prometheus
// rules and their promtool tests, Kubernetes manifests, the systemd unit) and their Go
// tests, which check the rules and dashboards against the exporter's real registry,
// decode the manifests strictly into the Kubernetes API types, and run the rules in a
// real Prometheus and Alertmanager (e2e_test.go).
package deploy
