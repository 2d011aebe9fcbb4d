package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the program as -memory's server process.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "-serve" {
		if err := serveBytes(os.Args[2]); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	if p := percentile(ds, 0.5); p != 50 {
		t.Errorf("p50 %d", p)
	}
	if p := percentile(ds, 0.95); p != 95 {
		t.Errorf("p95 %d", p)
	}
}

func TestRunAgainstAServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		_, _ = w.Write([]byte("x 1\n"))
	}))
	defer srv.Close()
	var out strings.Builder
	if err := run(&out, srv.URL, 5, "gzip", true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ratio p50") || !strings.Contains(out.String(), "bytes 4") {
		t.Fatalf("output:\n%s", out.String())
	}
}
