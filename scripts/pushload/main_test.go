package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/push"
)

func startDaemon(t *testing.T) (*push.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pushload")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "push.sock")
	srv, err := push.NewServer(push.ServerOptions{Path: path}, push.NewStore(0, 0, nil), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv, path
}

func TestLoadNoLoss(t *testing.T) {
	srv, path := startDaemon(t)
	cfg := config{socket: path, clients: 50, rate: 50, duration: 30 * time.Second, messages: 20}
	res, err := load(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.sent+res.dropped != 50*20 || res.sendErrs != 0 || res.connectErrs != 0 {
		t.Fatalf("result %+v", res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().MessagesAccepted < res.sent && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	st := srv.Stats()
	var rejected uint64
	for _, n := range st.Rejected {
		rejected += n
	}
	if st.MessagesAccepted != res.sent || rejected != 0 {
		t.Errorf("sent %d, daemon accepted %d, rejected %v", res.sent, st.MessagesAccepted, st.Rejected)
	}
}

func TestRunWithMetricsURL(t *testing.T) {
	srv, path := startDaemon(t)
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE %s counter\n%s %d\n", acceptedMetric, acceptedMetric, srv.Stats().MessagesAccepted)
	}))
	defer metrics.Close()
	var out, errb bytes.Buffer
	code := run([]string{"--socket", path, "--clients", "10", "--rate", "100", "--messages", "5",
		"--duration", "20s", "--metrics-url", metrics.URL + "/metrics"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "accepted         50 at the daemon") || !strings.Contains(out.String(), "loss             0") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestMetricsURLMustBeLoopback(t *testing.T) {
	for _, u := range []string{"http://example.com/metrics", "http://10.0.0.1:9835/metrics", "https://127.0.0.1/metrics", "::"} {
		if err := checkLoopback(u); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:9835/metrics", "http://localhost:1/metrics", "http://[::1]:9835/metrics"} {
		if err := checkLoopback(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestMessagesAreValid(t *testing.T) {
	if _, err := push.Decode(message(3, 7)); err != nil {
		t.Fatal(err)
	}
}
