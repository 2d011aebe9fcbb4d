// Package durfmt prints durations the way people write them ("2h", "1m30s"), not
// time.Duration's "2h0m0s": the settings' checks put them in front of users, in the
// same words as the flags and YAML they typed.
package durfmt

import (
	"strings"
	"time"
)

// Format is d.String() without a trailing "0s" after minutes or "0m" after hours.
func Format(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
