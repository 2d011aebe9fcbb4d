package triage

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vram-exporter/vram_exporter/apiserver"
	"github.com/vram-exporter/vram_exporter/apiserver/apitest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// fetch serves a fixture through the real API handler and reads it back with the real
// client, so the goldens cover the wire format too.
func fetch(t *testing.T, fixture string) Snapshot {
	t.Helper()
	srv := httptest.NewServer(apiserver.NewHandler(apitest.Static{V: apitest.View(fixture)},
		apiserver.Options{SafetyMarginBytes: 2 * apitest.GiB, Node: "gpu-node-7", Version: "1.0.0"}))
	defer srv.Close()
	s, err := (&Client{BaseURL: srv.URL}).Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./triage -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (run with -update if intended); got:\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	for _, name := range apitest.Names() {
		t.Run(name, func(t *testing.T) {
			r := Build(fetch(t, name))
			var table, js bytes.Buffer
			if err := WriteTable(&table, r, false); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(table.String(), "\x1b[") {
				t.Error("colour codes without colour")
			}
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".table", table.Bytes())
			golden(t, name+".json", js.Bytes())
		})
	}
}

// TestNodeReport asserts the properties the goldens are meant to show, so a careless
// -update cannot bless a regression.
func TestNodeReport(t *testing.T) {
	r := Build(fetch(t, "node"))
	var order []string
	for _, p := range r.Processes {
		order = append(order, p.Verdict)
	}
	want := "leak leak unattributed_growth cache_growth warming_up steady steady steady"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("risk order %q, want %q", got, want)
	}
	if r.Processes[0].PID != 4101 { // 12 MiB/min before the 3 MiB/min NVML-only leak
		t.Errorf("first process %d, want the fastest leak 4101", r.Processes[0].PID)
	}
	diag := map[uint32]string{}
	for _, p := range r.Processes {
		diag[p.PID] = p.Diagnosis
	}
	for pid, want := range map[uint32]string{
		4101: "allocated has grown 12 MiB/min for 40 minutes with a good fit (R² 0.97): likely tensors kept across requests",
		4102: "reserved grew 30 MiB/min while allocated stayed flat and has plateaued: an allocator cache, not a leak",
		4103: "NCCL communicators or cuBLAS/cuDNN workspaces",
		4104: "pushes no allocator stats; verdict from driver bytes only",
		5101: "three workers of service ranker each hold 18 GiB on GPU 1: the model is loaded once per worker",
		5104: "warming up",
	} {
		if !strings.Contains(diag[pid], want) {
			t.Errorf("pid %d diagnosis %q lacks %q", pid, diag[pid], want)
		}
	}
	if g := r.GPUs[0]; g.Forecast != "full in 6h1m at 85 MiB/min" {
		t.Errorf("forecast %q", g.Forecast)
	}
	if g := r.GPUs[1]; g.Forecast != "not growing" || g.Headroom != "1 more worker of 18 GiB" {
		t.Errorf("GPU 1: %q, %q", g.Forecast, g.Headroom)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings on a healthy node: %v", r.Warnings)
	}
}

func TestWarnings(t *testing.T) {
	if w := Build(fetch(t, "demo")).Warnings; len(w) != 1 || !strings.HasPrefix(w[0], "DEMO MODE") {
		t.Errorf("demo warnings %v", w)
	}
	if w := Build(fetch(t, "nvml_down")).Warnings; len(w) != 1 || !strings.HasPrefix(w[0], "NVML is down") {
		t.Errorf("NVML-down warnings %v", w)
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, Build(fetch(t, "node")), true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ansiBold+ansiRed+"leak") {
		t.Errorf("no red leak verdict in colour output:\n%q", b.String())
	}
}

func TestFetchErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	_, err = (&Client{BaseURL: closed}).Fetch(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.HasPrefix(err.Error(), "cannot reach vram_exporter at "+closed+": ") ||
		!strings.HasSuffix(err.Error(), "— is the daemon running? set --url") {
		t.Errorf("unreachable: %v", err)
	}

	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"basic auth", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", "Basic")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		}, []string{"answered 401 Unauthorized: Unauthorized", "--user and --password-file"}},
		{"JSON error", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":503,"error":"no joined view yet; the daemon is starting"}`))
		}, []string{"/api/v1/status answered 503 Service Unavailable: no joined view yet"}},
		{"long HTML body is cut", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>\n" + strings.Repeat("proxy error ", 100) + "</html>"))
		}, []string{"502 Bad Gateway: <html> proxy error", "…"}},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("# HELP")) },
			[]string{"sent a response triage cannot read", "is --url a vram_exporter?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			_, err := (&Client{BaseURL: srv.URL}).Fetch(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if len(err.Error()) > 600 {
				t.Errorf("error too long (%d bytes)", len(err.Error()))
			}
		})
	}
}

func TestBasicAuthIsSent(t *testing.T) {
	h := apiserver.NewHandler(apitest.Static{V: apitest.View("empty")}, apiserver.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "oncall" || p != "s3cret" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	if _, err := (&Client{BaseURL: srv.URL + "/", User: "oncall", Password: "s3cret"}).Fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{bytesText(0), "0 B"}, {bytesText(512 * 1024 * 1024), "512 MiB"}, {bytesText(9.5 * (1 << 30)), "9.5 GiB"},
		{bytesText(18 << 30), "18 GiB"}, {bytesText(-(1 << 30)), "-1 GiB"}, {bytesText(3 << 30), "3 GiB"},
		{shortDuration(130 * 60e9), "2h10m"}, {shortDuration(40 * 60e9), "40m"}, {shortDuration(72 * 3600e9), "3d"},
		{durationWords(60e9), "1 minute"}, {durationWords(130 * 60e9), "2 hours 10 minutes"},
		{shortContainer("containerd://0123456789abcdef"), "0123456789ab"}, {countWords(3), "three"}, {countWords(12), "12"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
