// Package helm holds the tests of the Helm chart in vram-exporter/: lint, rendering with
// default and full values through Helm's own Go packages, strict decoding of every object
// into its Kubernetes type, goldens, and the plain manifests in deploy/kubernetes, which
// are rendered from the chart so the two cannot drift. deploy/helm/README.md has the commands.
package helm
