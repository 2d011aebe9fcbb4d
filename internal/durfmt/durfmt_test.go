package durfmt

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		500 * time.Millisecond:                "500ms",
		time.Minute:                           "1m",
		90 * time.Second:                      "1m30s",
		2 * time.Hour:                         "2h",
		2*time.Hour + 30*time.Minute:          "2h30m",
		2*time.Hour + 30*time.Second:          "2h0m30s",
		-time.Minute:                          "-1m",
		time.Hour + time.Minute + time.Second: "1h1m1s",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}
